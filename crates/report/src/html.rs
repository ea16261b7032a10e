//! The self-contained HTML report: tables, inline SVG charts, provenance and
//! a case browser (vanilla JS over embedded JSON; no network, no CDN).

use serde_json::Value;

/// Escape text for HTML.
/// JSON made safe inside a `<script>` element: `<`, `>`, `&` and the line
/// separators U+2028/U+2029 become `\uXXXX` escapes, which JSON reads as
/// the same characters. `<!--<script>` in a question could otherwise switch
/// the HTML parser into the "script data escaped" state and swallow the
/// rest of the page.
pub fn script_safe_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Escape text for HTML: `&`, `<`, `>` and `"` become entities.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#f7f8fa}
header{background:#1f3b5c;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px}header p{margin:4px 0 0;opacity:.85;font-size:13px}
nav{padding:8px 28px;background:#e9edf3;font-size:14px;position:sticky;top:0;z-index:2}nav a{margin-right:16px;color:#1f3b5c;text-decoration:none;font-weight:600}
main{padding:12px 28px 40px;max-width:1400px}section{background:#fff;border:1px solid #dde2ea;border-radius:8px;padding:14px 18px;margin:16px 0}
h2{margin:4px 0 10px;font-size:19px}h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;font-size:13px;margin:6px 0 10px}th,td{border-bottom:1px solid #e3e7ee;padding:4px 9px;text-align:left}th{background:#f0f3f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:14px}.charts figure{margin:0;border:1px solid #e3e7ee;border-radius:6px;padding:6px;background:#fff}.charts figcaption{font-size:12px;color:#566}
.filters{display:flex;gap:12px;flex-wrap:wrap;align-items:center;font-size:13px;margin-bottom:8px}select{font-size:13px;padding:2px 4px}
.case{border:1px solid #e3e7ee;border-radius:6px;margin:6px 0;padding:6px 10px;font-size:13px}.case summary{cursor:pointer}
.tag{display:inline-block;border-radius:10px;padding:0 7px;margin-left:4px;font-size:11px;background:#e7ecf3}.tag.bad{background:#fde2e1;color:#8a1c17}.tag.good{background:#dff3e4;color:#1c5e2e}
.doc{border-left:3px solid #ccd3de;margin:4px 0;padding:2px 8px;color:#333}.doc.inserted{border-left-color:#d9480f;background:#fff4e6}.doc .src{font-size:11px;color:#777}
.resp{background:#f0f6ff;padding:4px 8px;border-radius:4px}.muted{color:#777;font-size:12px}code{font-size:12px}
"#;

const JS: &str = r#"
(function(){
  const data = JSON.parse(document.getElementById('case-data').textContent);
  const list = document.getElementById('case-list');
  const count = document.getElementById('case-count');
  const sel = {condition: document.getElementById('f-condition'), model: document.getElementById('f-model'), outcome: document.getElementById('f-outcome')};
  function fill(s, values){ values.forEach(v => { const o = document.createElement('option'); o.value = v; o.textContent = v; s.appendChild(o); }); }
  const uniq = f => Array.from(new Set(data.flatMap(f))).sort();
  fill(sel.condition, uniq(c => [c.condition]));
  fill(sel.model, uniq(c => [c.model + ' · ' + c.prompt]));
  fill(sel.outcome, uniq(c => c.tags));
  function esc(s){ const d = document.createElement('div'); d.textContent = s == null ? '' : String(s); return d.innerHTML; }
  function render(){
    const c = sel.condition.value, m = sel.model.value, o = sel.outcome.value;
    const hits = data.filter(x => (!c || x.condition === c) && (!m || (x.model + ' · ' + x.prompt) === m) && (!o || x.tags.includes(o)));
    count.textContent = hits.length + ' case(s)' + (hits.length > 200 ? ', first 200 shown' : '');
    list.innerHTML = hits.slice(0, 200).map(x => {
      const tags = x.tags.map(t => '<span class="tag ' + (/wrong|hallucinated|foil|→C|→U|failed/.test(t) ? 'bad' : (/correct|→A/.test(t) ? 'good' : '')) + '">' + esc(t) + '</span>').join('');
      const docs = x.docs.map((d, i) => '<div class="doc' + (d.inserted ? ' inserted' : '') + '"><span class="src">[' + (i + 1) + '] ' + esc(d.source) + (d.title ? ' · ' + esc(d.title) : '') + '</span><br>' + esc(d.text) + '</div>').join('');
      return '<details class="case"><summary><b>' + esc(x.condition) + '</b> ' + esc(x.question) + tags + '</summary>' +
        '<p class="muted">qid ' + esc(x.qid) + ' · ' + esc(x.model) + ' · ' + esc(x.prompt) + (x.position ? ' · answer at ' + esc(x.position) : '') + '</p>' +
        docs + '<p><b>Response</b></p><div class="resp">' + esc(x.response) + '</div>' +
        '<p><b>Gold</b>: ' + esc(x.gold.join(' | ')) + (x.foil ? ' &nbsp; <b>Foil</b>: ' + esc(x.foil) : '') + ' &nbsp; <b>Expected</b>: ' + esc(x.expected) + '</p></details>';
    }).join('');
  }
  Object.values(sel).forEach(s => s.addEventListener('change', render));
  render();
})();
"#;

/// Assemble the page.
pub fn page(
    title: &str,
    subtitle: &str,
    tables: &str,
    charts: &[(String, String)],
    cases: &Value,
    cases_note: &str,
    provenance: &str,
) -> String {
    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    s.push_str(&format!(
        "<title>{}</title><style>{CSS}</style></head><body>\n",
        escape(title)
    ));
    s.push_str(&format!(
        "<header><h1>{}</h1><p>{}</p></header>\n",
        escape(title),
        escape(subtitle)
    ));
    s.push_str("<nav><a href=\"#tables\">Tables</a><a href=\"#charts\">Charts</a><a href=\"#cases\">Case browser</a><a href=\"#provenance\">Provenance</a></nav><main>\n");
    s.push_str(&format!(
        "<section id=\"tables\"><h2>Tables</h2>{}</section>\n",
        if tables.is_empty() {
            "<p class=\"muted\">No metrics of the studies' tables are present.</p>"
        } else {
            tables
        }
    ));
    s.push_str("<section id=\"charts\"><h2>Charts</h2><div class=\"charts\">");
    if charts.is_empty() {
        s.push_str("<p class=\"muted\">No chart has data.</p>");
    }
    for (name, svg) in charts {
        let body = svg.trim_start_matches(|c| c != '<').replacen(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
            "",
            1,
        );
        s.push_str(&format!(
            "<figure>{body}<figcaption>{}</figcaption></figure>",
            escape(name)
        ));
    }
    s.push_str("</div></section>\n");
    s.push_str("<section id=\"cases\"><h2>Case browser</h2><div class=\"filters\">");
    s.push_str("<label>condition <select id=\"f-condition\"><option value=\"\">all</option></select></label>");
    s.push_str("<label>model · prompt <select id=\"f-model\"><option value=\"\">all</option></select></label>");
    s.push_str(
        "<label>outcome <select id=\"f-outcome\"><option value=\"\">all</option></select></label>",
    );
    s.push_str(&format!("<span id=\"case-count\" class=\"muted\"></span></div><p class=\"muted\">{}</p><div id=\"case-list\"></div></section>\n", escape(cases_note)));
    s.push_str(&format!(
        "<section id=\"provenance\"><h2>Provenance</h2>{provenance}</section>\n"
    ));
    let json = script_safe_json(&serde_json::to_string(cases).expect("json"));
    s.push_str(&format!("</main><script type=\"application/json\" id=\"case-data\">{json}</script><script>{JS}</script></body></html>\n"));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (reliability #9): `<!--<script>` in a question made the
    /// page's JSON block swallow the case browser's script.
    #[test]
    fn embedded_json_cannot_open_markup() {
        let raw = serde_json::to_string(
            &serde_json::json!({"q": "<!--<script> a & b </script> \u{2028}"}),
        )
        .unwrap();
        let safe = script_safe_json(&raw);
        for bad in ["<", ">", "&", "\u{2028}"] {
            assert!(!safe.contains(bad), "{bad} in {safe}");
        }
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(
            back["q"], "<!--<script> a & b </script> \u{2028}",
            "the same data once parsed"
        );
    }
}
