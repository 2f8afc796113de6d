"""Chat templates in the public turn formats of model families Bridge 0.6.2 has no markers for, written here
(our own Jinja, the families' markers and layout only), plus two invented ones.

Each is given once with ``@GEN@``/``@END@`` where a ``{% generation %}`` block opens and closes around what
an assistant turn adds after its generation prompt (content, tool calls, end marker): :func:`plain` drops
them (the template bridgepack infers the turns of), :func:`annotated` writes the block (the reference Bridge
masks by). Text right after a marker is written as an expression (GLM-4's ``{{ '\\n' + m.content }}``):
transformers' Jinja drops the newline that follows a block tag (``trim_blocks``), so a literal newline after
``{% generation %}`` would change the annotated template's text. Every template renders the rows of
``_support/chat_rows.py``: system, user, assistant with
``tool_calls`` and ``reasoning_content``, and ``tool`` turns.

* ``deepseek_v3``  ``<｜User｜>``/``<｜Assistant｜>`` ... ``<｜end▁of▁sentence｜>``, system text first
* ``deepseek_r1``  the same, the reasoning before ``</think>`` dropped from every assistant turn
* ``mistral``      ``[INST] ... [/INST]answer</s>``, the system text in the first user turn
* ``phi3``         ``<|user|>\\n ... <|end|>\\n<|assistant|>\\n ... <|end|>\\n``
* ``phi4``         ``<|im_start|>user<|im_sep|> ... <|im_end|>``: ChatML's marker strings, no ChatML turn
* ``glm4``         ``[gMASK]<sop><|user|>\\n ... <|assistant|>\\n ...``: no end marker (the next role
  ends a turn)
* ``command_r``    ``<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|> ... <|END_OF_TURN_TOKEN|>``
* ``granite``      ``<|start_of_role|>assistant<|end_of_role|> ... <|end_of_text|>``, a default system prompt
* ``odd_markers``  invented: ``>>> BOT ~~ answer ◀◀``, a default system prompt, a prompt ending in a space
* ``last_reasoning`` invented: ``reasoning_content`` written only for turns after the last user turn (a
  later user turn changes how an earlier answer renders: those rows are not prefix-consistent)
"""

from __future__ import annotations

_TOOL_JSON = "{{ call.function.arguments | tojson }}"


def _deepseek(strip_reasoning: str) -> str:
    """DeepSeek V3's layout; ``strip_reasoning`` may rewrite ``content`` (R1 drops what precedes
    ``</think>``)."""
    return (
        "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %}{{ m.content }}{% endif %}"
        "{% endfor %}{% for m in messages %}"
        "{% if m.role == 'user' %}<｜User｜>{{ m.content }}"
        "{% elif m.role == 'assistant' %}{% set content = m.content %}" + strip_reasoning + ""
        "<｜Assistant｜>@GEN@{{ content }}"
        "{% if m.tool_calls %}<｜tool▁calls▁begin｜>{% for call in m.tool_calls %}"
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{{ call.function.name }}\n```json\n" + _TOOL_JSON + ""
        "\n```<｜tool▁call▁end｜>{% endfor %}<｜tool▁calls▁end｜>{% endif %}<｜end▁of▁sentence｜>@END@"
        "{% elif m.role == 'tool' %}<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>{{ m.content }}"
        "<｜tool▁output▁end｜><｜tool▁outputs▁end｜>"
        "{% endif %}{% endfor %}{% if add_generation_prompt %}<｜Assistant｜>{% endif %}"
    )


TEMPLATES: dict[str, str] = {
    "deepseek_v3": _deepseek(""),
    "deepseek_r1": _deepseek(
        "{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}"
    ),
    "mistral": (
        "{{ bos_token }}{% if messages[0].role == 'system' %}{% set system = messages[0].content %}"
        "{% set turns = messages[1:] %}{% else %}{% set system = '' %}{% set turns = messages %}{% endif %}"
        "{% for m in turns %}"
        "{% if m.role == 'user' %}[INST] {% if loop.first and system %}{{ system }}\n\n{% endif %}"
        "{{ m.content }} [/INST]"
        "{% elif m.role == 'assistant' %}@GEN@{{ m.content }}"
        "{% if m.tool_calls %}[TOOL_CALLS] [{% for call in m.tool_calls %}"
        '{"name": "{{ call.function.name }}", "arguments": ' + _TOOL_JSON + "}"
        "{% endfor %}]{% endif %}{{ eos_token }}@END@"
        "{% elif m.role == 'tool' %}[TOOL_RESULTS] {{ m.content }}[/TOOL_RESULTS]"
        "{% endif %}{% endfor %}"
    ),
    "phi3": (
        "{% for m in messages %}"
        "{% if m.role == 'assistant' %}<|assistant|>\n@GEN@{{ m.content }}"
        "{% if m.tool_calls %}<|tool_call|>{% for call in m.tool_calls %}"
        '{"name": "{{ call.function.name }}", "arguments": ' + _TOOL_JSON + "}"
        "{% endfor %}<|/tool_call|>{% endif %}<|end|>\n@END@"
        "{% else %}<|{{ m.role }}|>\n{{ m.content }}<|end|>\n{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
    ),
    "phi4": (
        "{% for m in messages %}"
        "{% if m.role == 'assistant' %}<|im_start|>assistant<|im_sep|>@GEN@{{ m.content }}"
        "{% if m.tool_calls %}<|tool_call|>{% for call in m.tool_calls %}"
        '{"name": "{{ call.function.name }}", "arguments": ' + _TOOL_JSON + "}"
        "{% endfor %}<|/tool_call|>{% endif %}<|im_end|>@END@"
        "{% else %}<|im_start|>{{ m.role }}<|im_sep|>{{ m.content }}<|im_end|>{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant<|im_sep|>{% endif %}"
    ),
    "glm4": (
        "[gMASK]<sop>{% for m in messages %}"
        "{% if m.role == 'assistant' %}<|assistant|>@GEN@{{ '\\n' + m.content }}"
        "{% for call in m.tool_calls or [] %}\n{{ call.function.name }}\n" + _TOOL_JSON + "{% endfor %}@END@"
        "{% elif m.role == 'tool' %}<|observation|>\n{{ m.content }}"
        "{% else %}<|{{ m.role }}|>\n{{ m.content }}{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
    ),
    "command_r": (
        "<BOS_TOKEN>{% for m in messages %}"
        "{% if m.role == 'assistant' %}<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>@GEN@{{ m.content }}"
        "{% if m.tool_calls %}\nAction: ```json\n[{% for call in m.tool_calls %}"
        '{"tool_name": "{{ call.function.name }}", "parameters": ' + _TOOL_JSON + "}"
        "{% endfor %}]\n```{% endif %}<|END_OF_TURN_TOKEN|>@END@"
        "{% elif m.role == 'user' %}<|START_OF_TURN_TOKEN|><|USER_TOKEN|>{{ m.content }}<|END_OF_TURN_TOKEN|>"
        "{% elif m.role == 'tool' %}<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|><results>{{ m.content }}</results>"
        "<|END_OF_TURN_TOKEN|>"
        "{% else %}<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>{{ m.content }}<|END_OF_TURN_TOKEN|>{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>{% endif %}"
    ),
    "granite": (
        "{% if messages[0].role != 'system' %}<|start_of_role|>system<|end_of_role|>Knowledge Cutoff Date: "
        "April 2024.\nYou are Granite, developed by IBM.{% if tools %} You are a helpful AI assistant with "
        "access to the following tools.{% endif %}<|end_of_text|>\n{% endif %}"
        "{% if tools %}<|start_of_role|>available_tools<|end_of_role|>{{ tools | tojson }}<|end_of_text|>\n"
        "{% endif %}{% for m in messages %}"
        "{% if m.role == 'assistant' %}<|start_of_role|>assistant<|end_of_role|>@GEN@{{ m.content }}"
        "{% if m.tool_calls %}<|tool_call|>[{% for call in m.tool_calls %}"
        '{"name": "{{ call.function.name }}", "arguments": ' + _TOOL_JSON + "}"
        "{% endfor %}]{% endif %}<|end_of_text|>\n@END@"
        "{% elif m.role == 'tool' %}<|start_of_role|>tool_response<|end_of_role|>{{ m.content }}"
        "<|end_of_text|>\n"
        "{% else %}<|start_of_role|>{{ m.role }}<|end_of_role|>{{ m.content }}<|end_of_text|>\n{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}<|start_of_role|>assistant<|end_of_role|>{% endif %}"
    ),
    "odd_markers": (
        "{% if messages[0].role != 'system' %}### SYSTEM :: You are a terse bot.{% endif %}"
        "{% for m in messages %}"
        "{% if m.role == 'assistant' %}\n>>> BOT ~~ @GEN@{{ m.content }}"
        "{% for call in m.tool_calls or [] %} ‹call {{ call.function.name }} " + _TOOL_JSON + "›{% endfor %}"
        " ◀◀@END@"
        "{% elif m.role == 'system' %}### SYSTEM :: {{ m.content }}"
        "{% else %}\n<<< {{ m.role | upper }} ~~ {{ m.content }} ◀◀{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}\n>>> BOT ~~ {% endif %}"
    ),
    "last_reasoning": (
        "{% set ns = namespace(last_user=-1) %}{% for m in messages %}{% if m.role == 'user' %}"
        "{% set ns.last_user = loop.index0 %}{% endif %}{% endfor %}"
        "{% for m in messages %}"
        "{% if m.role == 'assistant' %}<<A>>@GEN@"
        "{% if loop.index0 > ns.last_user and m.reasoning_content %}[reasoning]{{ m.reasoning_content }}"
        "[/reasoning]{% endif %}{{ m.content }}"
        "{% for call in m.tool_calls or [] %}<<call>>{{ call.function.name }}(" + _TOOL_JSON + "){% endfor %}"
        "<</A>>@END@"
        "{% else %}<<{{ m.role }}>>{{ m.content }}<</{{ m.role }}>>{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}<<A>>{% endif %}"
    ),
}

#: Marker strings of the templates, added as special tokens to Qwen3's tokenizer for the runs where they are
#: single tokens (as on those models); elsewhere they are plain text.
SPECIAL_MARKERS = (
    "<|user|>",
    "<|assistant|>",
    "<|system|>",
    "<|tool|>",
    "<|end|>",
    "<|tool_call|>",
    "<|/tool_call|>",
    "<|im_sep|>",
    "[gMASK]",
    "<sop>",
    "<|observation|>",
    "<BOS_TOKEN>",
    "<|START_OF_TURN_TOKEN|>",
    "<|END_OF_TURN_TOKEN|>",
    "<|USER_TOKEN|>",
    "<|CHATBOT_TOKEN|>",
    "<|SYSTEM_TOKEN|>",
    "<|start_of_role|>",
    "<|end_of_role|>",
    "<|end_of_text|>",
)


def plain(name: str) -> str:
    """The template without ``{% generation %}`` (what bridgepack's default mode infers the turns of)."""
    return TEMPLATES[name].replace("@GEN@", "").replace("@END@", "")


def annotated(name: str) -> str:
    """The same template with ``{% generation %}`` around exactly what an assistant turn adds after its
    generation prompt (the reference)."""
    return TEMPLATES[name].replace("@GEN@", "{% generation %}").replace("@END@", "{% endgeneration %}")
