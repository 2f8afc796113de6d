"""Which way a chat template's assistant turns are found (one answer per template and tokenizer).

In Bridge's order, then bridgepack's (default mode only):

===============  ================================================================================
``explicit``     ``assistant_start``/``assistant_end`` given: those markers (:mod:`._explicit`)
``generation``   ``{% generation %}`` blocks in the template (plus Bridge's turn-end tokens when it
                 also has known markers)
``markers``      turn markers Bridge 0.6.2 knows (ChatML, Llama 3, Gemma, Kimi, Harmony) that place an
                 assistant turn in a probe conversation the template renders
``rendering``    anything else: by rendering the conversation's prefixes (:mod:`._by_render`)
===============  ================================================================================

A template with a known family's marker strings that still opens no turn with that family's assistant
marker (Phi-4's ``<|im_start|>assistant<|im_sep|>`` holds ChatML's ``<|im_start|>assistant`` and
``<|im_end|>``) would find no assistant turn at all; the probe sends it to ``rendering``. In
``bridge_compat`` only Bridge's two ways exist: the others are refused with how to add ``{% generation %}``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from bridgepack.data.samples.text._chat._by_render import DIFFERING_RENDERS
from bridgepack.data.samples.text._chat._explicit import marker_ids
from bridgepack.data.samples.text._chat._markers import GENERATION_BLOCK, infer_markers
from bridgepack.data.samples.text._chat._render import Renderer
from bridgepack.data.samples.text._chat._template import Template, chat_templates
from bridgepack.data.samples.text._settings import ResolvedText
from bridgepack.errors import InputError, UsageError, param

EXPLICIT, GENERATION, MARKERS, RENDERING = "explicit", "generation", "markers", "rendering"
_PROBE = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there"}]
_CACHE: dict[tuple[int, str, bool, bool], str] = {}


def mask_path(template: Template, renderer: Renderer, *, compat: bool, explicit: bool) -> str:
    """The path ``template``'s rows take (cached); in compat mode a UsageError for explicit markers and an
    InputError for a template Bridge cannot mask, saying where ``{% generation %}`` goes."""
    key = (id(renderer.tokenizer), template.text, compat, explicit)
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = _path(template, renderer, compat=compat, explicit=explicit)
    return found


def _path(template: Template, renderer: Renderer, *, compat: bool, explicit: bool) -> str:
    if explicit:
        if compat:
            raise UsageError(
                f"{param('assistant_start')}/{param('assistant_end')}: Bridge 0.6.2's text path takes no "
                f"assistant markers; {generation_hint(template)}"
            )
        return EXPLICIT
    if GENERATION_BLOCK.search(template.text):
        return GENERATION
    markers = infer_markers(template.text, renderer.tokenizer)
    start = None if markers is None else markers.starts[0, : markers.start_lens[0]]
    if start is not None and (compat or _places_a_turn(renderer, start)):
        return MARKERS
    if compat:
        raise InputError(
            f"{template.where}: the chat template has no {{% generation %}} block and no turn markers Bridge "
            "knows (ChatML, Llama 3, Gemma, Kimi, Harmony); an assistant-only loss mask cannot be built as "
            f"Bridge 0.6.2 builds it; {generation_hint(template)} (without {param('bridge_compat')} "
            "bridgepack "
            "finds the turns by rendering)"
        )
    _check_renders_alike(template, renderer)
    return RENDERING


def _check_renders_alike(template: Template, renderer: Renderer) -> None:
    """Refuse (exit 2, before any row is read) a template whose render of one conversation differs between
    two calls: finding turns by rendering compares renders of a conversation's prefixes made in separate
    calls, so a template that writes the time (``strftime_now`` with seconds) had every row refused as
    one that "opens a turn otherwise than its generation prompt". A date alone renders alike within a run;
    a row whose renders differ anyway (the date changed) is refused naming this cause (:mod:`._by_render`)."""
    first, second = (renderer.render([_PROBE], [None])[0] for _ in range(2))
    if isinstance(first, str) and isinstance(second, str) and first != second:
        raise InputError(
            f"{template.where}: {DIFFERING_RENDERS}; write a fixed value instead, mark the assistant text "
            f"with {{% generation %}}, or give {param('assistant_start')}/{param('assistant_end')}"
        )


def _probe_ids(renderer: Renderer) -> np.ndarray | None:
    """The template's render of a probe conversation (one user and one assistant turn) as token ids;
    ``None`` when the template cannot render it (then the rows decide)."""
    text = renderer.render([_PROBE], [None])[0]
    return None if isinstance(text, Exception) else renderer.encode([text]).ids


def _occurs(ids: np.ndarray, marker: np.ndarray) -> bool:
    size = len(marker)
    return any(np.array_equal(ids[i : i + size], marker) for i in range(len(ids) - size + 1))


def _places_a_turn(renderer: Renderer, start: np.ndarray) -> bool:
    """Whether the family's assistant marker occurs in the template's render of a probe conversation (a
    template that cannot render it keeps its markers: the rows decide, as in Bridge)."""
    ids = _probe_ids(renderer)
    return ids is None or _occurs(ids, start)


def check_explicit_markers(
    template: Template, renderer: Renderer, markers: dict[str, tuple[str, np.ndarray]]
) -> None:
    """Refuse, before any row is read, an explicit marker (``name -> (text, ids)``) that the template's
    render of a probe conversation does not hold: no row of that template could find its assistant turns,
    and every row would be refused one by one."""
    ids = _probe_ids(renderer)
    if ids is None:
        return
    for name, (text, marker) in markers.items():
        if not _occurs(ids, marker):
            raise UsageError(
                f"{template.where}: {param(name)} {text!r} is not in what the chat template writes for a "
                f"conversation (one user and one assistant turn), so no row would find its assistant turns; "
                f"give the text the template writes {'before' if name == 'assistant_start' else 'after'} "
                "an assistant turn's content"
            )


_ASSISTANT_TEST = re.compile(r"\{%-?\s*(?:el)?if\b[^%]*['\"]assistant['\"][^%]*-?%\}")
_CONTENT_OUTPUT = re.compile(r"\{\{-?[^}]*content[^}]*-?\}\}")


def generation_hint(template: Template) -> str:
    """How to mark the assistant text with ``{% generation %}``, at the line of ``template`` where the
    assistant branch writes its content (or where every turn's content is written, when no branch tests for
    the assistant role) when that can be found."""
    how = (
        "wrap what the template writes for an assistant turn after its header (content, reasoning, tool "
        "calls and the end marker) in {% generation %}...{% endgeneration %}"
    )
    branch = _ASSISTANT_TEST.search(template.text)
    output = _CONTENT_OUTPUT.search(template.text, branch.end() if branch else 0)
    if output is None:
        return f"to pack it for Bridge, {how}"
    where = (
        f"{template.at_line(template.text.count(chr(10), 0, output.start()) + 1)} ({output.group(0)[:60]})"
    )
    if branch is None:
        return (
            f"to pack it for Bridge, {how}: every turn's content is written at {where}; give assistant "
            "turns their own {% if ... == 'assistant' %} branch there and mark it"
        )
    return f"to pack it for Bridge, {how}: the assistant branch writes its content at {where}"


def mask_paths(spec: ResolvedText, tokenizer: Any) -> str:
    """The path of every template of the spec, as the metadata records it: ``rendering``, or per named
    template ``default: markers, tool_use: rendering``; ``none`` with ``loss_mode`` full (nothing is
    inferred). Raises what :func:`mask_path` raises, and a UsageError for explicit markers that are not the
    tokenizer's tokens or that a template does not write, so a run refuses them before it reads a row."""
    if (spec.loss_mode or "assistant") == "full":
        return "none"
    templates = chat_templates(spec, tokenizer)
    markers = {}
    if spec.assistant_start is not None and spec.assistant_end is not None and not spec.chat.compat:
        markers = {
            name: (text, marker_ids(tokenizer, text, name))
            for name, text in (
                ("assistant_start", spec.assistant_start),
                ("assistant_end", spec.assistant_end),
            )
        }
    named = {"": templates.single} if templates.single is not None else dict(templates.named)
    for template in named.values():
        if markers:
            check_explicit_markers(template, Renderer(tokenizer, templates.passed(template)), markers)
    paths = {
        name: mask_path(
            template,
            Renderer(tokenizer, templates.passed(template)),
            compat=spec.chat.compat,
            explicit=spec.assistant_start is not None,
        )
        for name, template in named.items()
    }
    if len(set(paths.values())) == 1:
        return next(iter(paths.values()))
    return ", ".join(f"{name}: {path}" for name, path in sorted(paths.items()))
