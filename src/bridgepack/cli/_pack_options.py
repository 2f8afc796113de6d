"""The options ``bridgepack pack`` and ``bridgepack plan`` share, defined once: one flag, help text and range.

``plan`` reads the lengths ``pack`` will pack and suggests the ``bridgepack pack`` command that repeats
these options, so each must mean the same in both commands.
"""

from __future__ import annotations

import typer

from bridgepack._ranges import RANKS, TOKEN_ID
from bridgepack.cli._common import number_option
from bridgepack.data.samples import formats_help
from bridgepack.data.samples.text import TextOptions

INPUTS_HELP = f"Input files or directories: {formats_help()}."
#: ``--messages-field``'s default (a plan's suggested command repeats any other).
DEFAULT_MESSAGES_FIELD = TextOptions().messages_field

TokenizerOption = typer.Option(
    None, "--tokenizer", help="Local Hugging Face tokenizer dir (text input; pre-tokenized: its EOS)."
)
PromptFieldOption = typer.Option(None, "--prompt-field", help="Prompt text field (prompt-completion).")
CompletionFieldOption = typer.Option(None, "--completion-field", help="Completion text field.")
MessagesFieldOption = typer.Option(DEFAULT_MESSAGES_FIELD, "--messages-field", help="Chat messages field.")
ChatTemplateOption = typer.Option(
    None,
    "--chat-template",
    help="Jinja file replacing the tokenizer's chat template (Bridge: chat_template_path).",
)
ToolSchemasOption = typer.Option(
    None,
    "--tool-schemas",
    help="JSON list of tool schemas for chat rows without tools (Bridge: dataset_kwargs.tool_schemas).",
)
EosIdOption = number_option(
    None,
    "--eos-id",
    help="EOS/pad id (default: the tokenizer's EOS, its SEP when it has none as in Megatron-Core; else the "
    "rows' most common last token).",
    range=TOKEN_ID,
)
CpOption = number_option(None, "--cp", help="Context-parallel size (derives the pad multiple).", range=RANKS)
TpOption = number_option(
    None,
    "--tp",
    help="Tensor-parallel size (derives the pad multiple with --sequence-parallel).",
    range=RANKS,
)
SequenceParallelOption = typer.Option(False, "--sequence-parallel", help="Sequence parallelism on.")
ModelOption = typer.Option(
    None,
    "--model",
    help="hidden,layers,heads,ffn,vocab[,query_groups]: the model whose step cost balanced packing evens out "
    "and plan estimates (default 7B-like).",
)
WorkersOption = number_option(
    None,
    "--workers",
    "-j",
    help="Parallel workers (default: all cores): processes to tokenize text, threads to scan "
    "pre-tokenized input and to encode row groups. The output is identical for any number.",
    range=RANKS,
)
