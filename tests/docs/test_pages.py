"""Every example in README.md and docs/*.md runs as written (issue #32): the docs are tested like code.

A page is one script: its ``bash`` blocks, ``python`` blocks (``>>>`` blocks as doctests), ``$ cmd``
transcripts (in ``text`` blocks) and files it shows (```` ```yaml file=sft.yaml ````) run or are written in
page order in one fresh temporary directory, each exit status held to the page's ``# exit N`` (default
0). A ``text`` block right after a command block, or the lines after a ``$ cmd`` line, shows output: every
shown line must be printed, in order, with what varies between runs (times, run ids, paths) compared by
shape. The inputs are what the page itself shows (a block that writes the file),
the package's own data, or ``seqpack pack --example``: nothing the reader cannot see. Commands marked
``# needs: gpu|cluster|network`` are only parsed, at most a tenth of them. The runner and its markers are
``tests/_support/fenced_blocks.py`` (the skills' test uses the same). The test never rewrites a page.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from _support import fenced_blocks
from _support.peers import BRIDGE_VERSION, CACHE_DIR, MCORE_VERSION, wheel_file

REPO_ROOT = Path(__file__).resolve().parents[2]
# The fence languages a page may use: commands, output, and files shown as they are.
LANGS = frozenset({"bash", "python", "text", "yaml", "json", "toml"})
OUTPUT_LANGS = ("text",)
# Every page of the docs: each fence in each is tagged.
ALL_PAGES = ("README.md", *sorted(str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "docs").glob("*.md")))
# The pages the test runs: every page with an example (issue #32).
PAGES: tuple[str, ...] = (
    "README.md",
    "docs/architecture.md",
    "docs/batching.md",
    "docs/bridge-format.md",
    "docs/clean.md",
    "docs/correlate.md",
    "docs/curves.md",
    "docs/demo.md",
    "docs/diff.md",
    "docs/doctor.md",
    "docs/env.md",
    "docs/failure-behaviour.md",
    "docs/fingerprint.md",
    "docs/hf.md",
    "docs/inspect.md",
    "docs/pack.md",
    "docs/plan.md",
    "docs/scale.md",
    "docs/train.md",
    "docs/translate.md",
    "docs/verify.md",
)
# Reference pages that show no command (formats, layers, guarantees): each of their fences is still tagged.
NO_EXAMPLES = frozenset({"docs/architecture.md", "docs/bridge-format.md", "docs/failure-behaviour.md"})
# One torch thread per process: the pages' training runs are tiny, and on a shared 2-core machine torch's
# default thread pool makes them 10-40x slower, not faster.
ENV = {"OMP_NUM_THREADS": "1"}
# The peers' wheels a page downloads (verify.md's `pip download`), served from the tests' cache (no network).
WHEELS = {"docs/verify.md": (("megatron-bridge", BRIDGE_VERSION), ("megatron-core", MCORE_VERSION))}
PIP_FROM_CACHE = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(CACHE_DIR / "wheels")}
# A command may take this long before the page fails (the whole docs test is held to 4 minutes of CI).
COMMAND_TIMEOUT_S = 120.0
# Pages run side by side, each a script of its own in a directory of its own: a page's commands are mostly
# single-threaded processes, so two pages at once use both cores of a CI machine and halve the wall time.
PAGES_AT_ONCE = 2


def _text(page: str) -> str:
    return (REPO_ROOT / page).read_text(encoding="utf-8")


def page_commands(page: str) -> list[fenced_blocks.Command]:
    return fenced_blocks.commands(_text(page), page, output_langs=OUTPUT_LANGS, python=True, prompts=True)


@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_fence_is_tagged(page: str) -> None:
    bad = [
        f"{page}:{b.line - 1}: fence tagged {b.lang!r}" if b.lang else f"{page}:{b.line - 1}: untagged fence"
        for b in fenced_blocks.blocks(_text(page))
        if b.lang not in LANGS
    ]
    assert not bad, "tag every fence (" + ", ".join(sorted(LANGS)) + "):\n" + "\n".join(bad)


Runs = dict[str, "Future[list[fenced_blocks.Result]]"]


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """Every page of PAGES with examples, started at once on PAGES_AT_ONCE workers (each page's commands
    still run in page order, in a fresh directory of the page's own)."""
    pages = [page for page in PAGES if page not in NO_EXAMPLES]
    for project, version in (wheel for page in pages for wheel in WHEELS.get(page, ())):
        wheel_file(project, version)  # downloaded into the cache once (the tests of the peers need it too)
    env = fenced_blocks.default_env({**ENV, **PIP_FROM_CACHE})
    with ThreadPoolExecutor(PAGES_AT_ONCE) as pool:
        runs = {
            page: pool.submit(
                fenced_blocks.run,
                page_commands(page),
                tmp_path_factory.mktemp(Path(page).stem),
                env,
                COMMAND_TIMEOUT_S,
            )
            for page in pages
        }
        yield runs
        for run in runs.values():
            run.cancel()


@pytest.mark.parametrize("page", PAGES)
def test_page_runs_as_written(page: str, page_runs: Runs) -> None:
    cmds = page_commands(page)
    if page in NO_EXAMPLES:
        assert not cmds, f"{page}: shows commands now; take it off NO_EXAMPLES"
        return
    assert cmds, f"{page}: no example to run"
    results = page_runs[page].result()
    details = [f"{p}\n--- output ---\n{res.output[-3000:]}" for res in results for p in res.problems[:1]]
    assert not details, "\n\n".join(details)


def test_few_commands_are_marked() -> None:
    cmds = [c for page in PAGES for c in page_commands(page)]
    marked = [c.where for c in cmds if c.needs]
    assert len(marked) * 10 <= len(cmds), f"{len(marked)} of {len(cmds)} commands only parsed: {marked}"


def test_the_runner_catches_a_drifted_page(tmp_path: Path) -> None:
    """The docs' forms (a transcript, a python block, an output block tagged ``text``) fail when the page
    and the code disagree, and pass on what varies between runs."""
    page = (
        "```text\n$ echo run 20261203-081500 took 1.5 s\nrun 20261130-012136 took 0.2 s\n"
        "$ false   # exit 1\n```\n\n"
        "```python\nprint('loss', 2.143)\n```\n```text\nloss 2.115\n```\n"
        "```yaml file=run.yaml\nseq_length: 4096\n```\n"
        "```bash\ncat run.yaml\n```\n```text\nseq_length: 4096\n```\n"
        "```python file=hello.py\nprint('hello')\n```\n"
        "```bash\npython hello.py\n```\n```text\nhello\n```\n"
        "```python\n>>> x = 2\n>>> x + 1\n3\n```\n"
        "```python\n>>> x * 2  # the names of the page's earlier doctest\n5\n```\n"
    )
    cmds = fenced_blocks.commands(page, "p.md", output_langs=OUTPUT_LANGS, python=True, prompts=True)
    assert [c.exit_code for c in cmds] == [0, 1, 0, 0, 0, 0, 0, 0, 0]
    results = fenced_blocks.run(cmds, tmp_path)
    assert results[0].problems == [] and results[1].problems == []
    assert all(results[k].problems == [] for k in (3, 4, 5, 6, 7))  # hello.py is written, not run
    assert results[8].problems and "Expected:\n    5\nGot:\n    4" in results[8].output
    assert any(re.search(r"'loss 2.115'", p) for p in results[2].problems)
