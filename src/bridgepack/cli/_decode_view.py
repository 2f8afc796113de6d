"""``bridgepack inspect --decode K``: the first K packed sequences as text, trained spans marked.

Each sequence is printed whole; what the model is trained to predict is bracketed ``⟦...⟧`` (and green on
a terminal), and a line per trained span gives its token range and the ids at both ends, with the untrained
id just before it -- the place an off-by-one mask shows::

    sequence 0: training_512.idx.parquet row 0, sequence 0 of the pack (tokens 0-10), 11 tokens, 4 trained
    <|user|> hi<eos><|assistant|>⟦ hello there<eos>⟧
      span 1  tokens 7-10   first 40 ' hello'  last 2 '<eos>'  after 6 '<|assistant|>'

The text comes from the data; it is never read as markup, and control characters are shown escaped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rich.text import Text

from bridgepack.cli._common import OutputFormat, emit_json, err_console, out_console
from bridgepack.data.packed import Decoded, PackedSequence, Piece, decode_pieces, first_sequences
from bridgepack.data.packset import PackingMetadata, find_metadata, hf_metadata_path, hf_split, packed_names
from bridgepack.data.samples.text import load_tokenizer, tokenizer_hash
from bridgepack.errors import UsageError

OPEN, CLOSE = "⟦", "⟧"
TRAINED_STYLE = "bold green"
#: C0/C1 control characters other than newline and tab, shown as ``\x1b`` instead of reaching the terminal.
_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c not in (0x09, 0x0A)}


def visible(text: str) -> str:
    """``text`` with control characters escaped (an ANSI sequence in the data must not drive the terminal)."""
    return text.translate(_CONTROL)


def _sidecar(files: list[str]) -> tuple[Path | None, str | None]:
    """The metadata file of the packed files and their split (Bridge's names, else the HF layout's
    ``data/{train,validation}-....parquet`` under ``metadata.hf.jsonl``)."""
    splits = {hf_split(f) for f in files}
    if len(splits) == 1 and None not in splits:
        path = hf_metadata_path(files[0])
        return (path if path.is_file() else None), splits.pop()
    return find_metadata(files), packed_names(files).split


def _recorded(files: list[str]) -> tuple[str | None, str | None]:
    """The tokenizer hash the packs' metadata records and how their chat rows' assistant masks were found
    (``rendering``, ...), when there is a sidecar entry for their split."""
    meta_path, split = _sidecar(files)
    if meta_path is None:
        return None, None
    picked = PackingMetadata.read(meta_path).pick(split)
    value = picked[1].recorded("tokenizer_sha256") if picked else None
    text = picked[1].recorded("text") if picked else None
    mask = text.get("assistant_mask") if isinstance(text, dict) else None
    return (value if isinstance(value, str) else None), (mask if isinstance(mask, str) else None)


def _token(tokenizer: Any, token_id: int) -> str:
    return repr(
        visible(tokenizer.decode([token_id], skip_special_tokens=False, clean_up_tokenization_spaces=False))
    )


def _header(n: int, seq: PackedSequence, pieces: list[Piece]) -> str:
    trained = sum(p.end - p.start for p in pieces if p.supervised)
    spans = sum(p.supervised for p in pieces)
    end = seq.start + len(seq.input_ids) - 1
    return (
        f"sequence {n}: {seq.path} row {seq.row}, sequence {seq.index} of the pack "
        f"(tokens {seq.start}-{end}), {len(seq.input_ids)} tokens, {trained} trained in {spans} "
        f"span{'s' if spans != 1 else ''}"
    )


def _print_sequence(n: int, seq: PackedSequence, pieces: list[Piece], tokenizer: Any) -> None:
    out_console.print(Text(_header(n, seq, pieces), style="bold"))
    body = Text()
    for piece in pieces:
        if piece.supervised:
            body.append(OPEN, style="dim")
            body.append(visible(piece.text), style=TRAINED_STYLE)
            body.append(CLOSE, style="dim")
        else:
            body.append(visible(piece.text))
    out_console.print(body)
    number = 0
    for k, piece in enumerate(pieces):
        if not piece.supervised:
            continue
        number += 1
        after = f"  after {pieces[k - 1].last_id} {_token(tokenizer, pieces[k - 1].last_id)}" if k else ""
        line = (
            f"  span {number}  tokens {piece.start}-{piece.end - 1}  "
            f"first {piece.first_id} {_token(tokenizer, piece.first_id)}  "
            f"last {piece.last_id} {_token(tokenizer, piece.last_id)}{after}"
        )
        out_console.print(Text(line))
    out_console.print()


def decode_command(path: str, count: int, tokenizer_dir: Path | None, output_format: OutputFormat) -> None:
    """Print the first ``count`` sequences of the packed data at ``path`` as text, trained spans marked."""
    if tokenizer_dir is None:
        raise UsageError("--decode needs --tokenizer DIR: the tokenizer the data was packed with")
    tokenizer = load_tokenizer(tokenizer_dir)
    sequences = first_sequences(path, count)
    files = sorted({s.path for s in sequences})
    recorded, assistant_mask = _recorded(files) if files else (None, None)
    matches = None if recorded is None else recorded == tokenizer_hash(tokenizer_dir)
    if recorded is not None and not matches:
        err_console.print(
            Text(
                f"warning: {os.fspath(tokenizer_dir)} is not the tokenizer the metadata records "
                f"(sha256 {recorded[:12]}...); the text below may not be what was packed"
            ),
            soft_wrap=True,
        )
    decoded = [(seq, decode_pieces(tokenizer, seq.input_ids, seq.supervised)) for seq in sequences]
    if output_format is OutputFormat.json:
        emit_json(Decoded(path, os.fspath(tokenizer_dir), matches, assistant_mask, decoded))
        return
    if assistant_mask is not None:
        out_console.print(Text(f"assistant mask by: {assistant_mask} (the metadata's text.assistant_mask)"))
    for n, (seq, pieces) in enumerate(decoded):
        _print_sequence(n, seq, pieces, tokenizer)
    if not decoded:
        out_console.print(Text(f"{path}: no sequences to show (--decode {count})"))
