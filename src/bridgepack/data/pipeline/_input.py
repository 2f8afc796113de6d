"""Resolve an input before it is read: the EOS id and where it came from, and the text step (if any).

One rule for ``pack`` and for the lengths ``plan`` reads, so both see the same samples.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from bridgepack._io import FILE, FILE_OR_DIRECTORY, expect_kind
from bridgepack.data.packset import PACKED_KINDS, bridgepack_output, packed_columns
from bridgepack.data.pipeline._options import InputOptions
from bridgepack.data.samples import formats_help, input_columns, text_fields
from bridgepack.data.samples.text import ResolvedText, chat_options, check_templates, tokenizer_eos_id
from bridgepack.errors import InputError, UsageError, param


@dataclass(frozen=True)
class ResolvedInput:
    """``eos_id`` None: pre-tokenized input without a given EOS (pass 1 infers it from the rows)."""

    eos_id: int | None
    eos_source: str  # --eos-id | tokenizer | inferred (recorded in the metadata as is)
    text: ResolvedText | None  # None: pre-tokenized input


def resolve_input(options: InputOptions) -> ResolvedInput:
    """The EOS (given, else the tokenizer's) and, for text records, the text step with detected fields.

    Pre-tokenized input with a tokenizer: the tokenizer only names the EOS (#15: rows made by a chat
    template end with its end token and a newline, so "the rows' last token" would pad with "\\n").
    """
    check_input_files(options)
    eos_id = options.eos_id
    source = "--eos-id" if eos_id is not None else "inferred"
    if options.tokenizer is None:
        return ResolvedInput(eos_id, source, None)
    if eos_id is None:
        eos_id, source = tokenizer_eos_id(options.tokenizer), "tokenizer"
        if eos_id is None:
            raise UsageError(
                f"{options.tokenizer}: the tokenizer has no EOS (nor SEP) token; pass {param('eos_id')}"
            )
    text = options.text
    is_text, prompt, completion, mode_from = text_fields(
        list(options.paths), text.prompt_field, text.completion_field, text.messages_field
    )
    if not is_text:
        return ResolvedInput(int(eos_id), source, None)
    spec = ResolvedText.of(
        text,
        os.fspath(options.tokenizer),
        int(eos_id),
        prompt_field=prompt,
        completion_field=completion,
        mode_from=mode_from,
    )
    return ResolvedInput(int(eos_id), source, spec)


def check_input_files(options: InputOptions) -> None:
    """Each path is what it must be, before anything opens it: an input a file or a datasets directory
    and none of bridgepack's own outputs nor packed data in any input format (a packed set read as samples
    merges each pack's sequences into one sample), the chat template and tool schemas regular files. A
    named pipe is refused (:func:`bridgepack._io.wrong_kind`)."""
    for path in options.paths:
        expect_kind(path, FILE_OR_DIRECTORY)
        kind = bridgepack_output(path) or packed_columns(input_columns(path) or ())
        if kind is not None:
            instead = (
                "give the samples it was packed from"
                if kind in PACKED_KINDS
                else f"give samples, one a row: {formats_help()}"
            )
            raise InputError(f"{path}: is {kind}, not samples; {instead}")
    for chat_file in (options.chat_template, options.tool_schemas):
        if chat_file is not None:
            expect_kind(chat_file, FILE)


def checked_text(
    spec: ResolvedText, options: InputOptions, *, compat: bool = False, max_length: int | None = None
) -> ResolvedText:
    """The text step's settings with the input's chat files (``chat_template``, ``tool_schemas``) read,
    checked before any row is read: usage errors of the mode, the templates a chat pack renders with.
    ``compat``/``max_length``: what ``pack --bridge-compat`` adds (``plan`` reads lengths without them)."""
    spec = replace(
        spec,
        max_length=max_length,
        allow_missing_completion=compat,
        chat=chat_options(options.chat_template, options.tool_schemas, compat),
    )
    if spec.is_chat:
        spec.check_chat()
        check_templates(spec)
    else:
        spec.check_prompt_completion()
    return spec
