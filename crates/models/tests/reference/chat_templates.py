"""Chat templates rendered as Hugging Face's `apply_chat_template` renders
them (transformers' `_compile_jinja_template`: a sandboxed jinja2
environment with trim_blocks and lstrip_blocks, the loopcontrols
extension, `raise_exception`), the reference for ragprobe's minijinja.

Reads {"templates": {name: text}, "conversations": [[{role, content}]],
"bos_token": ..., "eos_token": ...} on stdin; prints {name: [rendered text
or {"error": message} per conversation]}.
"""

import json
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def main():
    spec = json.load(sys.stdin)
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    env.globals["raise_exception"] = raise_exception
    out = {}
    for name, text in spec["templates"].items():
        template = env.from_string(text)
        rendered = []
        for messages in spec["conversations"]:
            try:
                rendered.append(
                    template.render(
                        messages=messages,
                        add_generation_prompt=True,
                        bos_token=spec["bos_token"],
                        eos_token=spec["eos_token"],
                    )
                )
            except jinja2.exceptions.TemplateError as e:
                rendered.append({"error": str(e)})
        out[name] = rendered
    print(json.dumps(out))


if __name__ == "__main__":
    main()
