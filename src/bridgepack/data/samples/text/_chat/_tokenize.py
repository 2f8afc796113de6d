"""Chat records -> stored examples, with Bridge 0.6.2's ids and loss masks (bridge-format §13,
``docs/pack.md``).

Each conversation is rendered once with the chat template and the chunk's texts are encoded in one batch;
the ids are the template's, nothing is appended (the template's own end token, e.g. ``<|im_end|>``, is the
last target). The loss mask follows Bridge's order:

1. ``{% generation %}`` blocks in the template mark assistant text (Hugging Face's assistant mask);
2. when the template belongs to a family whose turn markers Bridge knows (ChatML/Qwen, Llama 3, Gemma,
   Kimi, Harmony), the assistant turns are located by the tokens they share with renders of the
   conversation's prefixes (:mod:`._chat_render`), and failing that by a scan for the markers
   (:mod:`._chat_scan`) when no string of the row could fake one (:mod:`._chat_guard`). With (1) only the
   turn-end tokens are added from this step; without (1) it gives the whole mask;
2b. bridgepack's default mode only (:mod:`._path` picks the way per template): explicit markers the user names
   (:mod:`._explicit`), else for a template with neither (1) nor (2) the turns found by rendering the
   conversation's prefixes (:mod:`._by_render`); each such row's spans pass :mod:`._self_check` or the row
   is refused with the reason (the rejects file lists it), never masked from a guess;
3. ``loss_mode``: ``assistant`` keeps it, ``last_turn`` keeps the final assistant turn, ``full`` trains on
   every token; Bridge's never-trained tokens (``<|im_start|>``, Llama's header ids, pads) are 0 in all.

E.g. Qwen3, ``[user "hi", assistant "yo"]``::

    <|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\nyo<|im_end|>\\n
    mask 0 on the user turn and the assistant header, 1 from <think> through <|im_end|>\\n

Prefix renders cost a template call each; a row stops needing them at its first turn that they cannot
place (Qwen3's multi-turn rows, whose renders are not prefixes of each other, stop at their first turn).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridgepack.data.samples._examples import location
from bridgepack.data.samples._readers import RawChunk
from bridgepack.data.samples.text._chat._by_render import turns_by_render
from bridgepack.data.samples.text._chat._explicit import marker_ids, turns_by_markers
from bridgepack.data.samples.text._chat._guard import Guard
from bridgepack.data.samples.text._chat._markers import GENERATION_BLOCK, Markers, infer_markers
from bridgepack.data.samples.text._chat._path import EXPLICIT, RENDERING, mask_path
from bridgepack.data.samples.text._chat._render import PREFIX_RENDER_ERRORS, Encoded, Renderer
from bridgepack.data.samples.text._chat._rows import conversation_of, tools_of
from bridgepack.data.samples.text._chat._scan import boundary_scan, turn_spans
from bridgepack.data.samples.text._chat._self_check import check_row
from bridgepack.data.samples.text._chat._template import Template, chat_templates
from bridgepack.data.samples.text._mode import refuse_other_kind
from bridgepack.data.samples.text._settings import ChatOptions, ResolvedText
from bridgepack.data.samples.text._tokenizer import skipped_token_ids
from bridgepack.errors import DataError, param


@dataclass
class _Rows:
    """Rows of one chunk that render with the same template: conversations, renders and ids.

    ``numbers[r]`` is row ``r``'s index in the chunk (messages name the chunk's row)."""

    path: str
    chunk: RawChunk
    numbers: list[int]
    conversations: list[list[dict[str, Any]]]
    tools: list[Any]
    enc: Encoded = field(init=False)
    assistant_turns: list[list[int]] = field(default_factory=list)

    def where(self, r: int) -> str:
        return location(self.path, self.chunk, self.numbers[r])


@dataclass
class ChatExamples:
    """A chunk's chat rows as ids, loss mask and lengths (every row, in chunk order), and the rows whose
    assistant turns could not be inferred: chunk row index -> reason (their ids are in the arrays; they
    are not to be packed)."""

    ids: np.ndarray
    mask: np.ndarray
    lengths: np.ndarray
    refused: dict[int, str] = field(default_factory=dict)


def chat(
    path: str, chunk: RawChunk, records: list[dict[str, Any]], spec: ResolvedText, tokenizer: Any
) -> ChatExamples:
    """Ids, loss mask and lengths of a chunk of chat records (see the module docstring).

    Rows are rendered with the template transformers picks for them (:mod:`._chat_template`): with named
    templates, rows given tools render with ``tool_use`` and the others with ``default``, each group masked
    by its own template's blocks and markers."""
    templates = chat_templates(spec, tokenizer)
    for i, record in enumerate(records):
        refuse_other_kind(path, chunk, i, record, spec)
    conversations = [conversation_of(path, chunk, i, r, spec.messages_field) for i, r in enumerate(records)]
    tools = [tools_of(r, spec.chat.tool_schemas) for r in records]
    groups: dict[int, tuple[Template, list[int]]] = {}
    for i, row_tools in enumerate(tools):
        template = templates.for_tools(row_tools)
        if template is None:
            raise DataError(
                f"{location(path, chunk, i)}: a row without tools, and the tokenizer's named chat templates "
                f"({', '.join(sorted(templates.named))}) have no 'default' (transformers refuses it too)"
            )
        groups.setdefault(id(template), (template, []))[1].append(i)
    parts = []
    refused: dict[int, str] = {}
    for template, numbers in groups.values():
        rows = _Rows(path, chunk, numbers, [conversations[i] for i in numbers], [tools[i] for i in numbers])
        *arrays, group_refused = _chat_rows(rows, spec, tokenizer, template, templates.passed(template))
        parts.append((numbers, (arrays[0], arrays[1], arrays[2])))
        refused.update({numbers[r]: reason for r, reason in group_refused.items()})
    if len(parts) == 1:
        return ChatExamples(*parts[0][1], refused)
    return ChatExamples(*_in_chunk_order(len(records), parts), refused)


def _chat_rows(
    rows: _Rows, spec: ResolvedText, tokenizer: Any, template: Template, passed: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
    """Ids, loss mask and lengths of ``rows``, all rendered with ``template`` (``passed`` to
    ``apply_chat_template``; ``None``: the tokenizer's own), and the rows refused (row -> reason)."""
    options: ChatOptions = spec.chat
    renderer = Renderer(tokenizer, passed)
    texts = renderer.render(rows.conversations, rows.tools)
    for r, text in enumerate(texts):
        if isinstance(text, Exception):
            raise DataError(f"{rows.where(r)}: the chat template failed ({_brief(text)})")
    rows.enc = renderer.encode([str(t) for t in texts])
    rows.assistant_turns = [
        [i for i, t in enumerate(c) if t.get("role") == "assistant"] for c in rows.conversations
    ]
    ids = rows.enc.ids
    loss_mode = spec.loss_mode or "assistant"
    refused: dict[int, str] = {}
    if loss_mode == "full":
        mask = np.ones(len(ids), dtype=np.uint8)
    else:
        explicit = spec.assistant_start is not None
        way = mask_path(template, renderer, compat=options.compat, explicit=explicit)
        if way in (RENDERING, EXPLICIT):
            mask, refused = _inferred_mask(rows, renderer, spec, way)
        else:
            mask = _assistant_mask(rows, renderer, template.text)
        if loss_mode == "last_turn":
            _keep_last_turn(rows, renderer, mask, refused)
    mask[np.isin(ids, skipped_token_ids(tokenizer))] = 0
    lengths = np.diff(rows.enc.offsets)
    if not options.compat:
        _refuse_unsupervised(rows, mask, refused)
    return ids, mask, lengths, refused


def _inferred_mask(
    rows: _Rows, renderer: Renderer, spec: ResolvedText, way: str
) -> tuple[np.ndarray, dict[int, str]]:
    """The mask of bridgepack's own ways (rendering, explicit markers), every row's spans self-checked; the
    rows refused, with the reason."""
    enc = rows.enc
    if way == RENDERING:
        found = [
            (t.spans, t.refused)
            for t in turns_by_render(rows.conversations, rows.tools, rows.assistant_turns, enc, renderer)
        ]
    else:
        assert spec.assistant_start is not None and spec.assistant_end is not None
        start = marker_ids(renderer.tokenizer, spec.assistant_start, "assistant_start")
        end = marker_ids(renderer.tokenizer, spec.assistant_end, "assistant_end")
        found = turns_by_markers(enc, start, end, rows.assistant_turns)
    mask = np.zeros(len(enc.ids), dtype=np.uint8)
    refused: dict[int, str] = {}
    for r, (spans, reason) in enumerate(found):
        length = int(enc.offsets[r + 1] - enc.offsets[r])
        if reason is None:
            failed = check_row(rows.conversations[r], enc.texts[r], enc.encodings[r], spans, length)
            reason = None if failed is None else f"self-check: {failed}"
        if reason is not None:
            refused[r] = f"no assistant mask by {way}: {reason}"
            continue
        base = int(enc.offsets[r])
        for a, b in spans:
            mask[base + a : base + b] = 1
    return mask, refused


def _in_chunk_order(
    n: int, parts: list[tuple[list[int], tuple[np.ndarray, np.ndarray, np.ndarray]]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The groups' rows put back in the chunk's order (ids, mask and lengths as one chunk's)."""
    ids_at: list[np.ndarray] = [np.zeros(0, parts[0][1][0].dtype)] * n
    mask_at: list[np.ndarray] = [np.zeros(0, parts[0][1][1].dtype)] * n
    lengths = np.zeros(n, dtype=parts[0][1][2].dtype)
    for numbers, (ids, mask, group_lengths) in parts:
        offsets = np.concatenate([[0], np.cumsum(group_lengths)])
        for k, i in enumerate(numbers):
            ids_at[i] = ids[offsets[k] : offsets[k + 1]]
            mask_at[i] = mask[offsets[k] : offsets[k + 1]]
            lengths[i] = group_lengths[k]
    return np.concatenate(ids_at), np.concatenate(mask_at), lengths


def _assistant_mask(rows: _Rows, renderer: Renderer, template: str) -> np.ndarray:
    """Bridge's assistant mask (steps 1 and 2 of the module docstring) for every row of the chunk."""
    n = len(rows.conversations)
    generation = _generation_mask(rows, renderer) if GENERATION_BLOCK.search(template) else None
    markers = infer_markers(template, renderer.tokenizer)
    if markers is None:  # the generation path (:func:`mask_path` chose it)
        assert generation is not None
        return generation
    with_content = np.ones(n, dtype=bool)
    if generation is not None:
        with_content = _row_sums(generation, rows.enc.offsets) == 0
    mask = np.zeros(len(rows.enc.ids), dtype=np.uint8)
    placed = _prefix_path(rows, renderer, markers, with_content, mask)
    guard = Guard(renderer.tokenizer, markers)
    pending = np.flatnonzero(~placed)
    safe = np.array([guard.safe(rows.conversations[r], rows.tools[r]) for r in pending], dtype=bool)
    expected = np.array([len(t) for t in rows.assistant_turns], dtype=np.int64)
    for content in (True, False):
        todo = pending[safe & (with_content[pending] == content)]
        if todo.size:
            found = boundary_scan(
                rows.enc.ids,
                rows.enc.offsets,
                todo,
                markers.starts,
                markers.start_lens,
                markers.start_roles,
                markers.ends,
                markers.end_lens,
                expected,
                content,
                mask,
            )
            placed[todo[found.astype(bool)]] = True
    if generation is not None:
        return np.maximum(mask, generation)
    missing = np.flatnonzero(~placed)
    if missing.size:
        r = int(missing[0])
        raise DataError(
            f"{rows.where(r)}: no assistant turn found (the template's turn markers do not delimit the "
            "row's assistant turns; Bridge 0.6.2 stops here too)"
        )
    return mask


def _generation_mask(rows: _Rows, renderer: Renderer) -> np.ndarray:
    """Hugging Face's assistant mask from ``{% generation %}`` blocks, aligned with our ids."""
    parts = []
    for r, (ids, mask) in enumerate(renderer.assistant_masks(rows.conversations, rows.tools)):
        if ids != rows.enc.ids[rows.enc.row(r)].tolist():  # pragma: no cover - same render, same ids
            raise DataError(f"{rows.where(r)}: the assistant mask does not align with the rendered ids")
        parts.append(np.asarray(mask, dtype=np.uint8))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)


def _prefix_path(
    rows: _Rows, renderer: Renderer, markers: Markers, with_content: np.ndarray, mask: np.ndarray
) -> np.ndarray:
    """Bridge's prefix-render step, a turn at a time over all rows; returns the rows it placed.

    Turn ``i`` (an assistant turn) may start after the tokens shared with ``render(turns[:i])`` and must end
    within those shared with ``render(turns[:i+1])``; a row whose turn cannot be placed so is left to the
    scan, and nothing of it is kept.
    """
    n = len(rows.conversations)
    alive = [r for r in range(n) if rows.assistant_turns[r]]
    spans: dict[int, list[tuple[int, int, int]]] = {r: [] for r in alive}
    placed = np.zeros(n, dtype=bool)
    step = 0
    while alive:
        # The render through the turn first: when even the row's first assistant marker cannot be placed
        # within it, no start position can, and the render of the turns before it is never needed.
        limits = _render_prefixes(rows, renderer, alive, step, through=True)
        rendered = [(r, limit) for r, limit in zip(alive, limits, strict=True) if limit is not None]
        rendered = [rendered[k] for k in np.flatnonzero(_spans(rows, markers, rendered, None)[:, 0] >= 0)]
        lows = _render_prefixes(rows, renderer, [r for r, _ in rendered], step, through=False)
        kept = [(r, limit, low) for (r, limit), low in zip(rendered, lows, strict=True) if low is not None]
        found = _spans(rows, markers, [(r, limit) for r, limit, _ in kept], [low for _, _, low in kept])
        alive = []
        for (r, _, _), (content, end, after) in zip(kept, found.tolist(), strict=True):
            if content < 0:
                continue
            spans[r].append((content, end, after))
            if len(spans[r]) == len(rows.assistant_turns[r]):
                placed[r] = True
                for content_at, end_at, after_at in spans[r]:
                    if with_content[r]:
                        mask[content_at:end_at] = 1
                    mask[end_at:after_at] = 1
            else:
                alive.append(r)
        step += 1
    return placed


def _spans(
    rows: _Rows, markers: Markers, limits: list[tuple[int, int]], lows: list[int] | None
) -> np.ndarray:
    """:func:`turn_spans` for ``(row, limit)`` pairs; ``lows=None`` searches from each row's start."""
    if not limits:
        return np.zeros((0, 3), dtype=np.int64)
    row_ids = np.array([r for r, _ in limits], dtype=np.int64)
    starts = rows.enc.offsets[row_ids] if lows is None else np.array(lows, dtype=np.int64)
    return turn_spans(
        rows.enc.ids,
        rows.enc.offsets[row_ids + 1],
        starts,
        np.array([limit for _, limit in limits], dtype=np.int64),
        markers.starts[0],
        int(markers.start_lens[0]),
        markers.ends,
        markers.end_lens,
    )


def _render_prefixes(
    rows: _Rows, renderer: Renderer, alive: list[int], step: int, *, through: bool
) -> list[int | None]:
    """Absolute token positions shared with ``render(turns[:i])`` (or ``[:i+1]``) for each row's
    ``step``-th assistant turn ``i``; ``None`` where Bridge's render raises one of the errors it tolerates."""
    wanted: list[int] = []
    cuts: list[int] = []
    shared: list[int | None] = [None] * len(alive)
    for k, r in enumerate(alive):
        i = rows.assistant_turns[r][step]
        cut = i + 1 if through else i
        base = int(rows.enc.offsets[r])
        if cut == 0:
            shared[k] = base
        elif cut == len(rows.conversations[r]):
            shared[k] = int(rows.enc.offsets[r + 1])
        else:
            wanted.append(k)
            cuts.append(cut)
    texts = renderer.render(
        [rows.conversations[alive[k]][:cut] for k, cut in zip(wanted, cuts, strict=True)],
        [rows.tools[alive[k]] for k in wanted],
    )
    done: list[int] = []
    prefixes: list[str] = []
    for k, text in zip(wanted, texts, strict=True):
        r = alive[k]
        if isinstance(text, PREFIX_RENDER_ERRORS):
            continue
        if isinstance(text, Exception):
            raise DataError(f"{rows.where(r)}: the chat template failed on a prefix ({_brief(text)})")
        done.append(k)
        prefixes.append(text)
    counts = renderer.shared_tokens(prefixes, rows.enc, [alive[k] for k in done])
    for k, count in zip(done, counts, strict=True):
        shared[k] = int(rows.enc.offsets[alive[k]]) + count
    return shared


def _keep_last_turn(rows: _Rows, renderer: Renderer, mask: np.ndarray, refused: dict[int, str]) -> None:
    """Bridge's ``last_turn``: keep the mask from the final assistant turn's first masked token on (the
    tokens shared with the render of the turns before it, all rows' renders in one batch). Where that
    render's tokens end inside the previous assistant turn (its last token merges with the next turn's
    first), that turn's tail is kept too, as Bridge keeps it. ``refused`` rows are left alone."""
    turns = rows.assistant_turns
    starts: dict[int, int] = {r: 0 for r, row_turns in enumerate(turns) if row_turns and row_turns[-1] == 0}
    later = [r for r, row_turns in enumerate(turns) if row_turns and row_turns[-1] > 0 and r not in refused]
    texts = renderer.render(
        [rows.conversations[r][: turns[r][-1]] for r in later], [rows.tools[r] for r in later]
    )
    for r, text in zip(later, texts, strict=True):
        if isinstance(text, Exception):
            raise DataError(f"{rows.where(r)}: the chat template failed on a prefix ({_brief(text)})")
    starts.update(zip(later, renderer.shared_tokens([str(t) for t in texts], rows.enc, later), strict=True))
    for r in range(len(turns)):
        row_mask = mask[rows.enc.row(r)]
        start = starts.get(r)
        hits = np.flatnonzero(row_mask)
        span_starts = hits[np.diff(hits, prepend=-2) > 1] if hits.size else hits
        if start is not None:
            after = hits[hits >= start]
            if after.size:
                start = int(after[0])
            elif span_starts.size:
                start = int(span_starts[-1])
        elif span_starts.size:
            start = int(span_starts[-1])
        if start is not None:
            row_mask[:start] = 0


def _refuse_unsupervised(rows: _Rows, mask: np.ndarray, refused: dict[int, str]) -> None:
    """Default mode: a row with no supervised token is an error (Bridge keeps it and only warns); rows
    already refused are not packed and not judged here."""
    empty = [r for r in np.flatnonzero(_row_sums(mask, rows.enc.offsets) == 0).tolist() if r not in refused]
    if empty:
        r = int(empty[0])
        raise DataError(
            f"{rows.where(r)}: no token to train on (no assistant text under this loss mode); "
            f"fix the row, use {param('loss_mode')} full, or {param('bridge_compat')} to keep it as Bridge "
            "does"
        )


def _row_sums(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over each row ``[offsets[r], offsets[r+1])`` (empty rows sum to 0)."""
    running = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=running[1:])
    return running[offsets[1:]] - running[offsets[:-1]]


def _brief(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
