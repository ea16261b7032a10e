//! The self-contained HTML report: tables, inline SVG charts in a grid,
//! provenance, and a case browser with a side-by-side question view
//! (vanilla JS; no network, no CDN). The browser's data is packed (see
//! [`crate::browser`]) and unpacked by the browser's `DecompressionStream`.

use crate::browser::BrowserData;

/// Escape text for HTML: `&`, `<`, `>` and `"` become entities.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A chart as the page shows it.
pub struct ChartFigure {
    /// File stem: `charts/<name>.svg` / `.pdf`.
    pub name: String,
    /// The SVG.
    pub svg: String,
    /// Wider than a grid cell: takes a whole row.
    pub wide: bool,
}

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#f7f8fa}
header{background:#1f3b5c;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px}header p{margin:4px 0 0;opacity:.85;font-size:13px}
nav{padding:8px 28px;background:#e9edf3;font-size:14px;position:sticky;top:0;z-index:2}nav a{margin-right:16px;color:#1f3b5c;text-decoration:none;font-weight:600}
main{padding:12px 28px 40px}section{scroll-margin-top:40px;background:#fff;border:1px solid #dde2ea;border-radius:8px;padding:14px 18px;margin:16px 0}
h2{margin:4px 0 10px;font-size:19px}h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;font-size:13px;margin:6px 0 10px}th,td{border-bottom:1px solid #e3e7ee;padding:4px 9px;text-align:left}th{background:#f0f3f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(576px,1fr));gap:14px;align-items:start}
.charts figure{margin:0;border:1px solid #e3e7ee;border-radius:6px;padding:6px;background:#fff;overflow-x:auto}.charts figure.wide{grid-column:1/-1}
.charts svg{display:block}.charts figcaption{font-size:12px;color:#566;padding:2px 4px}.charts figcaption a{color:#1f5f99;margin-left:8px}
.filters{display:flex;gap:10px;flex-wrap:wrap;align-items:center;font-size:13px;margin-bottom:8px}select,input{font-size:13px;padding:2px 4px}input[type=search]{width:16em}
.qlist{list-style:none;padding:0;margin:0}.qlist li{border-bottom:1px solid #edf0f4;padding:6px 4px;font-size:13px;cursor:pointer}.qlist li:hover{background:#f3f6fa}
.qlist .qid{color:#777;font-size:11px;margin-right:6px}.pager{margin:8px 0;font-size:13px}.pager button{font-size:13px;margin-right:6px}
.tag{display:inline-block;border-radius:10px;padding:0 7px;margin:0 0 0 4px;font-size:11px;background:#e7ecf3}.tag.bad{background:#fde2e1;color:#8a1c17}.tag.good{background:#dff3e4;color:#1c5e2e}
.qv-head{font-size:14px;margin:6px 0 10px}.qv-head .gold{font-weight:600}.qv-back{font-size:13px;margin-bottom:6px}
.qv-grid{display:grid;gap:10px;overflow-x:auto;align-items:start}.qv-col{border:1px solid #e3e7ee;border-radius:6px;padding:6px 8px;min-width:260px;font-size:13px}
.qv-col h4{margin:2px 0 6px;font-size:14px}.cell{border-top:1px solid #edf0f4;padding:6px 0}.cell .who{font-size:11px;color:#667}
.verdict{font-size:12px;font-weight:600}.verdict.ok{color:#1c5e2e}.verdict.no{color:#8a1c17}
.doc{border-left:3px solid #ccd3de;margin:4px 0;padding:2px 8px;color:#333}.doc.inserted{border-left-color:#d9480f;background:#fff4e6}.doc .src{font-size:11px;color:#777}
.resp{background:#f0f6ff;padding:4px 8px;border-radius:4px;white-space:pre-wrap}mark.gold{background:#c7f0d2}mark.foil{background:#ffd8a8}
.muted{color:#777;font-size:12px}code{font-size:12px}
"#;

/// The case browser. Data: `rows` [case, model, prompt, response, tags,
/// verdict, ok], `cases` [question, condition, docs [[doc, source]],
/// inserted positions, foil, expected, answer position], `questions` [qid,
/// dataset, question, gold]; names by index in `models`, `prompts`, ...
const JS: &str = r#"
(function(){
'use strict';
const $ = id => document.getElementById(id);
const root = document.documentElement;
async function unpack(id){
  const el = $(id);
  if (!el) return null;
  const b64 = el.textContent.trim();
  let bytes;
  if (Uint8Array.fromBase64) bytes = Uint8Array.fromBase64(b64);
  else { const bin = atob(b64); bytes = new Uint8Array(bin.length); for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i); }
  const text = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).text();
  return JSON.parse(text);
}
function esc(s){ return String(s == null ? '' : s).replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c])); }
const word = /[\p{L}\p{N}]/u;
// Occurrences of the terms (case-insensitive, whole words) wrapped in <mark class=cls>.
function mark(text, marks){
  text = String(text == null ? '' : text);
  const low = text.toLowerCase(), spans = [];
  for (const [terms, cls] of marks) for (const t of terms) {
    const tl = String(t || '').toLowerCase().trim();
    if (!tl) continue;
    let i = 0;
    while ((i = low.indexOf(tl, i)) !== -1) {
      const e = i + tl.length;
      if (!(i > 0 && word.test(low[i - 1])) && !(e < low.length && word.test(low[e]))) spans.push([i, e, cls]);
      i = e;
    }
  }
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '', pos = 0;
  for (const [s, e, cls] of spans) { if (s < pos) continue; out += esc(text.slice(pos, s)) + '<mark class="' + cls + '">' + esc(text.slice(s, e)) + '</mark>'; pos = e; }
  return out + esc(text.slice(pos));
}
const bad = /wrong|hallucinated|foil|→C|→U|failed|lost/, good = /^right$|→A|corrected|detected/;
function tagHtml(t){ return '<span class="tag ' + (bad.test(t) ? 'bad' : good.test(t) ? 'good' : '') + '">' + esc(t) + '</span>'; }
const PAGE = 50;
const sel = {dataset: $('f-dataset'), condition: $('f-condition'), model: $('f-model'), prompt: $('f-prompt'), outcome: $('f-outcome')};
const search = $('f-search'), list = $('case-list'), count = $('case-count'), pager = $('case-pager'), view = $('question-view');
let D = null, docs = null, docsLoading = null, byQuestion = null, qLow = null, rLow = null, page = 0;
function fill(s, names){ names.forEach((v, i) => { const o = document.createElement('option'); o.value = v; o.textContent = v; s.appendChild(o); }); }
function readHash(){
  const h = location.hash.startsWith('#cases') ? location.hash.slice(6).replace(/^[?\/]/, '') : '';
  const p = new URLSearchParams(h);
  for (const k of Object.keys(sel)) sel[k].value = p.get(k) || '';
  search.value = p.get('q') || '';
  page = Math.max(0, parseInt(p.get('page') || '0', 10) || 0);
  return p.get('question');
}
function hashFor(question){
  const p = new URLSearchParams();
  for (const k of Object.keys(sel)) if (sel[k].value) p.set(k, sel[k].value);
  if (search.value) p.set('q', search.value);
  if (page) p.set('page', String(page));
  if (question) p.set('question', question);
  const s = p.toString();
  return '#cases' + (s ? '?' + s : '');
}
function rowOk(ri, f){
  const r = D.rows[ri], c = D.cases[r[0]], q = D.questions[c[0]];
  if (f.ds >= 0 && q[1] !== f.ds) return false;
  if (f.cond >= 0 && c[1] !== f.cond) return false;
  if (f.model >= 0 && r[1] !== f.model) return false;
  if (f.prompt >= 0 && r[2] !== f.prompt) return false;
  if (f.out >= 0 && !r[4].includes(f.out)) return false;
  if (f.needle && !qLow[c[0]].includes(f.needle) && !rLow[ri].includes(f.needle)) return false;
  return true;
}
function current(){
  const ix = (names, v) => v ? names.indexOf(v) : -1;
  return {ds: ix(D.datasets, sel.dataset.value), cond: ix(D.conditions, sel.condition.value), model: ix(D.models, sel.model.value),
          prompt: ix(D.prompts, sel.prompt.value), out: ix(D.tags, sel.outcome.value), needle: search.value.trim().toLowerCase()};
}
function renderList(){
  const f = current();
  const hits = new Map();
  for (let ri = 0; ri < D.rows.length; ri++) if (rowOk(ri, f)) {
    const qi = D.cases[D.rows[ri][0]][0];
    if (!hits.has(qi)) hits.set(qi, []);
    hits.get(qi).push(ri);
  }
  const qs = Array.from(hits.keys());
  const pages = Math.max(1, Math.ceil(qs.length / PAGE));
  page = Math.min(page, pages - 1);
  let nrows = 0; hits.forEach(v => nrows += v.length);
  count.textContent = qs.length + ' question(s), ' + nrows + ' response(s)';
  list.innerHTML = qs.slice(page * PAGE, (page + 1) * PAGE).map(qi => {
    const q = D.questions[qi], rs = hits.get(qi);
    const right = rs.filter(ri => D.rows[ri][6] === 1).length, wrong = rs.filter(ri => D.rows[ri][6] === 0).length;
    return '<li data-q="' + qi + '"><span class="qid">' + esc(D.datasets[q[1]]) + ' · ' + esc(q[0]) + '</span>' + esc(q[2]) +
      ' <span class="tag good">' + right + ' right</span><span class="tag bad">' + wrong + ' wrong</span><span class="tag">' + rs.length + ' response(s)</span></li>';
  }).join('');
  pager.innerHTML = pages > 1 ? '<button id="pg-prev"' + (page ? '' : ' disabled') + '>previous</button><button id="pg-next"' + (page + 1 < pages ? '' : ' disabled') + '>next</button> page ' + (page + 1) + ' of ' + pages : '';
  const go = d => { page += d; history.replaceState(null, '', hashFor(null)); renderList(); };
  if ($('pg-prev')) $('pg-prev').onclick = () => go(-1);
  if ($('pg-next')) $('pg-next').onclick = () => go(1);
}
function questionKey(qi){ const q = D.questions[qi]; return D.datasets[q[1]] + ':' + q[0]; }
function loadDocs(){ if (!docsLoading) docsLoading = unpack('rp-docs').then(d => { docs = d || []; }); return docsLoading; }
async function openQuestion(key){
  const qi = D.questions.findIndex((q, i) => questionKey(i) === key);
  if (qi < 0) { view.hidden = true; return; }
  await loadDocs();
  const q = D.questions[qi], gold = q[3];
  // One column per case (condition), in a fixed order; one cell per model · prompt.
  const order = c => { const n = D.conditions[D.cases[c][1]]; return [n === 'closed-book' ? 0 : n === 'base' ? 1 : 2, n]; };
  const caseIds = Array.from(new Set(byQuestion[qi].map(ri => D.rows[ri][0]))).sort((a, b) => { const x = order(a), y = order(b); return x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0); });
  const cols = caseIds.map(ci => {
    const c = D.cases[ci], foil = c[4] ? [c[4]] : [];
    const marks = [[gold, 'gold'], [foil, 'foil']];
    const passages = c[2].map((d, i) => {
      const doc = docs[d[0]] || ['', ''];
      return '<div class="doc' + (c[3].includes(i) ? ' inserted' : '') + '"><span class="src">[' + (i + 1) + '] ' + esc(D.sources[d[1]]) + (c[3].includes(i) ? ' · inserted' : '') + (doc[0] ? ' · ' + esc(doc[0]) : '') + '</span><br>' + mark(doc[1], marks) + '</div>';
    }).join('');
    const cells = byQuestion[qi].filter(ri => D.rows[ri][0] === ci).map(ri => {
      const r = D.rows[ri];
      return '<div class="cell"><div class="who">' + esc(D.models[r[1]]) + ' · ' + esc(D.prompts[r[2]]) + '</div>' +
        '<div class="verdict ' + (r[6] === 1 ? 'ok' : r[6] === 0 ? 'no' : '') + '">' + esc(r[5]) + '</div>' + r[4].map(t => D.tags[t]).filter(t => t !== 'right' && t !== 'wrong').map(tagHtml).join('') +
        '<div class="resp">' + mark(r[3], marks) + '</div></div>';
    }).join('');
    return '<div class="qv-col"><h4>' + esc(D.conditions[c[1]]) + (c[6] ? ' <span class="muted">answer at ' + esc(c[6]) + '</span>' : '') + '</h4>' +
      (c[4] ? '<div class="muted">foil: <mark class="foil">' + esc(c[4]) + '</mark></div>' : '') +
      '<details><summary class="muted">' + c[2].length + ' passage(s)</summary>' + passages + '</details>' + cells + '</div>';
  });
  view.innerHTML = '<div class="qv-back"><a href="' + hashFor(null) + '">← all questions</a></div>' +
    '<div class="qv-head"><span class="muted">' + esc(D.datasets[q[1]]) + ' · ' + esc(q[0]) + '</span><br><b>' + esc(q[2]) + '</b><br>gold: <span class="gold">' + esc(gold.join(' | ')) + '</span></div>' +
    '<div class="qv-grid" style="grid-template-columns:repeat(' + cols.length + ',minmax(260px,1fr))">' + cols.join('') + '</div>';
  view.hidden = false;
  list.hidden = true; pager.hidden = true;
  root.dataset.questionView = key;
  requestAnimationFrame(() => $('cases').scrollIntoView());
}
function route(){
  const question = readHash();
  if (question) { openQuestion(question); return; }
  view.hidden = true; list.hidden = false; pager.hidden = false;
  delete root.dataset.questionView;
  renderList();
}
async function start(){
  D = await unpack('rp-index');
  if (!D) { count.textContent = '0 question(s)'; root.dataset.casesReady = '1'; return; }
  fill(sel.dataset, D.datasets); fill(sel.condition, D.conditions); fill(sel.model, D.models); fill(sel.prompt, D.prompts); fill(sel.outcome, D.tags);
  qLow = D.questions.map(q => (q[0] + ' ' + q[2]).toLowerCase());
  rLow = D.rows.map(r => r[3].toLowerCase());
  byQuestion = D.questions.map(() => []);
  D.rows.forEach((r, ri) => byQuestion[D.cases[r[0]][0]].push(ri));
  const refilter = () => { page = 0; history.replaceState(null, '', hashFor(null)); route(); };
  Object.values(sel).forEach(s => s.addEventListener('change', refilter));
  let t = null;
  search.addEventListener('input', () => { clearTimeout(t); t = setTimeout(refilter, 150); });
  list.addEventListener('click', e => { const li = e.target.closest('li[data-q]'); if (li) location.hash = hashFor(questionKey(+li.dataset.q)); });
  window.addEventListener('hashchange', route);
  route();
  root.dataset.casesReady = '1';
  window.__ragprobeReady = performance.now();
}
start().catch(e => { count.textContent = 'could not read the case data: ' + e; throw e; });
})();
"#;

/// Assemble the page.
pub fn page(
    title: &str,
    subtitle: &str,
    tables: &str,
    charts: &[ChartFigure],
    browser: Option<&BrowserData>,
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
    s.push_str("<section id=\"charts\"><h2>Charts</h2><p class=\"muted\">Hover a mark for its value, interval and n; intervals are drawn where n ≥ 30. Every chart is also a PDF and an SVG in <code>charts/</code>.</p><div class=\"charts\">");
    if charts.is_empty() {
        s.push_str("<p class=\"muted\">No chart has data.</p>");
    }
    for c in charts {
        let body = c.svg.trim_start_matches(|ch| ch != '<').replacen(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
            "",
            1,
        );
        let n = escape(&c.name);
        s.push_str(&format!(
            "<figure{}>{body}<figcaption>{n}<a href=\"charts/{n}.pdf\">PDF</a><a href=\"charts/{n}.svg\">SVG</a></figcaption></figure>",
            if c.wide { " class=\"wide\"" } else { "" }
        ));
    }
    s.push_str("</div></section>\n");
    s.push_str("<section id=\"cases\"><h2>Case browser</h2><div class=\"filters\">");
    for (id, label) in [
        ("dataset", "dataset"),
        ("condition", "condition"),
        ("model", "model"),
        ("prompt", "prompt"),
        ("outcome", "outcome"),
    ] {
        s.push_str(&format!(
            "<label>{label} <select id=\"f-{id}\"><option value=\"\">all</option></select></label>"
        ));
    }
    s.push_str("<label>search <input type=\"search\" id=\"f-search\" placeholder=\"questions and responses\"></label>");
    s.push_str(&format!("<span id=\"case-count\" class=\"muted\"></span></div><p class=\"muted\">{} Click a question to see every condition and model side by side; the address keeps the view, so it can be shared.</p><ul id=\"case-list\" class=\"qlist\"></ul><div id=\"case-pager\" class=\"pager\"></div><div id=\"question-view\" hidden></div></section>\n", escape(cases_note)));
    s.push_str(&format!(
        "<section id=\"provenance\"><h2>Provenance</h2>{provenance}</section>\n"
    ));
    s.push_str("</main>");
    if let Some(b) = browser {
        // base64 only: nothing in the data can close the element or open markup.
        s.push_str(&format!(
            "<script type=\"application/gzip+base64\" id=\"rp-index\">{}</script>\n<script type=\"application/gzip+base64\" id=\"rp-docs\">{}</script>\n",
            b.index, b.docs
        ));
    }
    s.push_str(&format!("<script>{JS}</script></body></html>\n"));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (reliability #9): `<!--<script>` in a question made the
    /// page's data block swallow the case browser's script. The data is
    /// now base64: only its alphabet reaches the page.
    #[test]
    fn embedded_data_cannot_open_markup() {
        let b = BrowserData {
            index: crate::browser::pack(
                &serde_json::json!({"q": "<!--<script> a & b </script> \u{2028}"}),
            ),
            docs: crate::browser::pack(&serde_json::json!([])),
            rows: 0,
            note: String::new(),
        };
        assert!(b
            .index
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/' || c == b'='));
        let p = page("t", "s", "", &[], Some(&b), "", "");
        assert_eq!(p.matches("<script").count(), 3);
        assert_eq!(p.matches("</script>").count(), 3);
    }
}
