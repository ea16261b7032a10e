//! Chat templates render as Hugging Face's `apply_chat_template` renders
//! them: `render_chat_template` (minijinja) against jinja2 with
//! transformers' settings (`tests/reference/chat_templates.py`), on
//! SmolLM2's own template (from the fetched GGUF) and on templates written
//! here to exercise what model templates use: whitespace control, blocks
//! that rely on `trim_blocks`/`lstrip_blocks`, a dated system header with
//! its fallback date, `namespace`, `loop`, filters and `raise_exception`.
//!
//! The python is `RAGPROBE_LLAMA_SERVER` (scripts/llama-server.sh's venv,
//! which has jinja2); without it the test says it was skipped, unless
//! `RAGPROBE_REQUIRE_LLAMA=1` (as in `make test`).

use ragprobe_models::llm::local::render_chat_template;
use ragprobe_models::llm::ChatMessage;
use ragprobe_models::paths;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// ChatML with a default system prompt, whitespace-controlled (`{%-`).
const CHATML: &str = r#"{%- if messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
{%- else %}
    {{- '<|im_start|>system\nYou are a careful assistant.<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'system' and loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content | trim + '<|im_end|>\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"#;

/// Header-style turns with a dated system header; the block tags have no
/// `-`, so only `trim_blocks`/`lstrip_blocks` keep their newlines out.
const HEADERS: &str = r#"{{ bos_token }}
{% if not date_string is defined %}
    {% set date_string = "26 Jul 2024" %}
{% endif %}
<|start_header_id|>system<|end_header_id|>

Today Date: {{ date_string }}<|eot_id|>
{% for message in messages %}
<|start_header_id|>{{ message['role'] }}<|end_header_id|>

{{ message['content'] | trim }}<|eot_id|>
{% endfor %}
{% if add_generation_prompt %}
<|start_header_id|>assistant<|end_header_id|>

{% endif %}"#;

/// `namespace`, `loop.index0`, `upper`, a conditional expression and
/// `raise_exception` for a role the template does not take.
const NAMESPACE: &str = r#"{%- set ns = namespace(turns=0) -%}
{%- for m in messages -%}
  {%- if m.role not in ['system', 'user', 'assistant'] -%}
    {{ raise_exception('unknown role ' + m.role) }}
  {%- endif -%}
  {%- if m.role == 'user' %}{% set ns.turns = ns.turns + 1 %}{% endif -%}
  [{{ loop.index0 }}:{{ m.role | upper }}] {{ m.content }}
{% endfor -%}
turns={{ ns.turns }}{{ eos_token if not add_generation_prompt else '' }}"#;

fn conversations() -> Vec<Vec<ChatMessage>> {
    vec![
        vec![ChatMessage::new("user", "What is the capital of France?")],
        vec![
            ChatMessage::new("system", "Answer briefly."),
            ChatMessage::new("user", "Q: 2+2?\nA:"),
        ],
        vec![
            ChatMessage::new("user", "Hi"),
            ChatMessage::new("assistant", "Hello! "),
            ChatMessage::new("user", "  Name a colour.  "),
        ],
        vec![ChatMessage::new("tool", "{}")],
    ]
}

#[test]
fn templates_render_as_transformers_renders_them() {
    let Some(python) = std::env::var_os("RAGPROBE_LLAMA_SERVER").filter(|p| !p.is_empty()) else {
        assert!(
            std::env::var("RAGPROBE_REQUIRE_LLAMA").as_deref() != Ok("1"),
            "RAGPROBE_LLAMA_SERVER is not set (make test sets it from scripts/llama-server.sh)"
        );
        eprintln!("SKIPPED: no jinja2 (RAGPROBE_LLAMA_SERVER; `make test` builds its venv)");
        return;
    };
    let mut templates = serde_json::Map::new();
    for (name, t) in [
        ("chatml", CHATML),
        ("headers", HEADERS),
        ("namespace", NAMESPACE),
    ] {
        templates.insert(name.into(), t.into());
    }
    let smollm = paths::smollm2_gguf();
    if smollm.is_file() {
        let (_, ct) = ragprobe_engine::gguf::read_content(&smollm).unwrap();
        let t = ct.metadata["tokenizer.chat_template"].as_str().unwrap();
        templates.insert("smollm2".into(), t.into());
    }
    let (bos, eos) = ("<|begin_of_text|>", "<|eot_id|>");
    let convs = conversations();
    let spec = serde_json::json!({
        "templates": templates,
        "conversations": convs.iter().map(|c| c.iter().map(|m| serde_json::json!({"role": m.role, "content": m.content})).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "bos_token": bos,
        "eos_token": eos,
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/chat_templates.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(spec.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut compared = 0;
    for (name, text) in &templates {
        for (conv, reference) in convs.iter().zip(want[name].as_array().unwrap()) {
            let got = render_chat_template(text.as_str().unwrap(), conv, bos, eos);
            match reference.get("error") {
                Some(e) => {
                    let msg = got.expect_err(name).to_string();
                    assert!(msg.contains(e.as_str().unwrap()), "{name}: {msg} / {e}");
                }
                None => assert_eq!(got.unwrap(), reference.as_str().unwrap(), "{name}"),
            }
            compared += 1;
        }
    }
    assert!(compared >= 12, "{compared}");
    eprintln!("{compared} renderings equal jinja2's");
}
