"""Every example in README.md and docs/*.md runs as written (issue #32): the docs are tested like code.

A page is one script: its ``bash`` blocks, ``python`` blocks (``>>>`` blocks as doctests), ``$ cmd``
transcripts (in ``text`` blocks) and files it shows (```` ```yaml file=sft.yaml ````) run or are written in
page order in one fresh temporary directory, each exit status held to the page's ``# exit N`` (default
0). A ``text`` block right after a command block, or the lines after a ``$ cmd`` line, shows output: every
shown line must be printed, in order, with what varies between runs (times, run ids, paths) compared by
shape. The inputs are what the page itself shows (a block that writes the file),
the package's own data, or ``bridgepack pack --example``: nothing the reader cannot see. Commands marked
``# needs: gpu|cluster|network`` are only parsed, at most a tenth of them; so are commands marked
``# pinned: tests/...py``, which that unit test runs word for word against the page's promises
(``_support/doc_pages.py``). Both kinds are read by bridgepack's own parser, so a misspelt option fails here.
docs/scale.md's ``ray start`` lines are parsed only; its other lines are pinned to the engine's test, which
runs them in its own process on the test run's one Ray cluster (``ray_cluster`` in tests/conftest.py), the
stand-in for the cluster those lines start. The runner and its markers are ``tests/_support/fenced_blocks.py``
(the skills' test uses the same); the ``bridgepack`` commands and python blocks run in forks of one warm
process (``_support/warm_bridgepack.py``).
The test never rewrites a page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from _support import doc_pages, fenced_blocks
from _support.doc_pages import REPO_ROOT, page_commands, page_text
from _support.peers import BRIDGE_VERSION, CACHE_DIR, MCORE_VERSION, wheel_file
from bridgepack.cli import main

# The fence languages a page may use: commands, output, and files shown as they are.
LANGS = frozenset({"bash", "python", "text", "yaml", "json", "toml"})
# Every page of the docs: each fence in each is tagged.
ALL_PAGES = doc_pages.all_pages()
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
# The pages whose runs take longest (a training run each, the Bridge wheels' verify): started first, so that
# the two threads end together instead of one running a long page alone at the end.
SLOWEST = frozenset({"docs/train.md", "README.md", "docs/verify.md"})


@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_fence_is_tagged(page: str) -> None:
    bad = [
        f"{page}:{b.line - 1}: fence tagged {b.lang!r}" if b.lang else f"{page}:{b.line - 1}: untagged fence"
        for b in fenced_blocks.blocks(page_text(page))
        if b.lang not in LANGS
    ]
    assert not bad, "tag every fence (" + ", ".join(sorted(LANGS)) + "):\n" + "\n".join(bad)


Runs = dict[str, "Future[list[fenced_blocks.Result]]"]


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """Every page of PAGES with examples, the slowest first, started on PAGES_AT_ONCE threads, each in a
    fresh directory of its own; what has not started when the module ends is cancelled."""
    pages = [page for page in PAGES if page not in NO_EXAMPLES]
    pages.sort(key=lambda page: page not in SLOWEST)
    for project, version in (wheel for page in pages for wheel in WHEELS.get(page, ())):
        wheel_file(project, version)  # downloaded into the cache once (the tests of the peers need it too)
    env = fenced_blocks.default_env({**ENV, **PIP_FROM_CACHE})
    with ThreadPoolExecutor(PAGES_AT_ONCE) as pool:
        folders = {page: tmp_path_factory.mktemp(Path(page).stem) for page in pages}
        runs = {
            page: pool.submit(fenced_blocks.run, page_commands(page), folders[page], env, COMMAND_TIMEOUT_S)
            for page in pages
        }
        yield runs
        for run in runs.values():
            run.cancel()


@pytest.mark.parametrize("page", PAGES)
def test_page_runs_as_written(page: str, page_runs: Runs) -> None:
    if page in NO_EXAMPLES:
        assert not page_commands(page), f"{page}: shows commands now; take it off NO_EXAMPLES"
        return
    cmds = page_commands(page)
    assert cmds, f"{page}: no example to run"
    results = page_runs[page].result()
    details = [f"{p}\n--- output ---\n{res.output[-3000:]}" for res in results for p in res.problems[:1]]
    assert not details, "\n\n".join(details)


Check = Callable[[Sequence[fenced_blocks.Result]], "str | None"]


@dataclass(frozen=True)
class Claim:
    """What a page says its commands show beyond any one line: a relation between numbers that vary between
    runs (so the shown lines are compared by shape), e.g. that packed training is the faster one. ``says``
    is quoted from the page (whitespace aside); ``holds`` reads the page's run and returns ``None`` when the
    claim holds there, else what the run gave."""

    page: str
    says: str
    holds: Check


def _number(results: Sequence[fenced_blocks.Result], command: str, pattern: str) -> float:
    """The number ``pattern``'s group 1 matches in the output of the page's first command starting with
    ``command`` (thousands separators dropped)."""
    for res in results:
        if res.command.text.startswith(command) and (m := re.search(pattern, res.output)):
            return float(m.group(1).replace(",", ""))
    raise AssertionError(f"no output of {command!r} matches {pattern!r}")


#: A number in a page's run: the output of its first command that starts with the text, the pattern's group 1.
Reading = tuple[str, str]


def _greater(first: Reading, second: Reading) -> Check:
    """The claim that the number ``first`` reads exceeds the one ``second`` reads."""

    def holds(results: Sequence[fenced_blocks.Result]) -> str | None:
        a, b = _number(results, *first), _number(results, *second)
        return None if a > b else f"{a:g} from {first[0]!r}, not above {b:g} from {second[0]!r}"

    return holds


REAL_TOKENS_PER_S = r"([\d,]+) real tokens/s"
CLAIMS = (
    Claim(
        "docs/train.md",
        "Packed training is the faster one",
        _greater(
            ("bridgepack train --data", REAL_TOKENS_PER_S),
            ("bridgepack train --padded-from", REAL_TOKENS_PER_S),
        ),
    ),
)


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: f"{c.page}: {c.says}")
def test_claims_hold_in_the_pages_run(claim: Claim, page_runs: Runs) -> None:
    assert " ".join(claim.says.split()) in " ".join(page_text(claim.page).split()), (
        f"{claim.page} no longer says {claim.says!r}: change the claim with the page"
    )
    problem = claim.holds(page_runs[claim.page].result())
    assert problem is None, f"{claim.page} says {claim.says!r}, its run gave {problem}"


def test_few_commands_are_marked() -> None:
    cmds = [c for page in PAGES for c in page_commands(page)]
    marked = [c.where for c in cmds if c.needs]
    assert len(marked) * 10 <= len(cmds), f"{len(marked)} of {len(cmds)} commands only parsed: {marked}"


def test_commands_not_run_here_name_real_options(capsys: pytest.CaptureFixture[str]) -> None:
    """A command only parsed here (``# needs:``, ``# pinned:``) is still spelled right: bridgepack's parser
    reads
    it with ``--help`` appended (an unknown command or option is a usage error, exit 2)."""
    cmds = [c for page in PAGES for c in page_commands(page) if (c.needs or c.pinned)]
    bad = []
    for cmd in (c for c in cmds if c.words()[0] == "bridgepack"):
        if main([*cmd.words()[1:], "--help"]) != 0:
            bad.append(f"{cmd.where}: {capsys.readouterr().err.strip()[-300:]}")
    assert not bad, "\n".join(bad)


def test_pins_name_the_test_that_runs_them() -> None:
    """``# pinned: FILE``: a bridgepack command or a python block, and FILE is a test module that runs the
    commands pinned to it (``doc_pages.pinned_by(__file__)``), so the page's promises are checked there
    instead of here."""
    pinned = [c for page in PAGES for c in page_commands(page) if c.pinned]
    bad = [
        f"{c.where}: a pinned command runs bridgepack or is a python block"
        for c in pinned
        if c.python_source is None and c.words()[0] != "bridgepack"
    ]
    for test_file in sorted({c.pinned for c in pinned if c.pinned}):
        path = REPO_ROOT / test_file
        if not (test_file.startswith("tests/") and path.is_file()):
            bad.append(f"# pinned: {test_file}: no such test file")
        elif "doc_pages.pinned_by(__file__)" not in path.read_text(encoding="utf-8"):
            bad.append(f"# pinned: {test_file}: it does not run doc_pages.pinned_by(__file__)")
    assert not bad, "\n".join(bad)


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
        "```text\n$ bridgepack nope --at-all   # exit 1, pinned: tests/x/test_y.py\nnot checked here\n```\n"
    )
    cmds = list(doc_pages.commands_of(page, "p.md"))
    assert [c.exit_code for c in cmds] == [0, 1, 0, 0, 0, 0, 0, 0, 0, 1]
    assert [c.pinned for c in cmds][-2:] == [None, "tests/x/test_y.py"]
    results = fenced_blocks.run(cmds, tmp_path)
    assert results[9].syntax_only and results[9].problems == []  # pinned: parsed here, run by its test
    assert results[0].problems == [] and results[1].problems == []
    assert all(results[k].problems == [] for k in (3, 4, 5, 6, 7))  # hello.py is written, not run
    assert results[8].problems and "Expected:\n    5\nGot:\n    4" in results[8].output
    assert any(re.search(r"'loss 2.115'", p) for p in results[2].problems)


def test_a_pinned_command_runs_in_the_test_process_as_the_page_shows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a pinned command's test runs is what bash would run: a bridgepack command's globs, quotes and
    variables expanded by bash; a python block as ``__main__``, its exit code that of ``python -`` (an
    uncaught exception: 1 with its trace), each held to the page's ``# exit N`` and shown lines."""
    page = (
        "```bash\n"
        'bridgepack inspect data/*.parquet "$SUBDIR/a b" -q   # exit 2, pinned: tests/x/test_y.py\n'
        "```\n"
        "```python\n# exit 3, pinned: tests/x/test_y.py\nprint(__name__)\nraise SystemExit(3)\n```\n"
        "```text\n__main__\n```\n"
        "```python\n# pinned: tests/x/test_y.py\nraise ValueError('shown on stderr')\n```\n"
    )
    cmds = doc_pages.commands_of(page, "p.md")
    assert [(c.pinned, c.exit_code, c.python_source is None) for c in cmds] == [
        ("tests/x/test_y.py", 2, True),
        ("tests/x/test_y.py", 3, False),
        ("tests/x/test_y.py", 0, False),
    ]
    (tmp_path / "data").mkdir()
    for name in ("b.parquet", "a.parquet"):
        (tmp_path / "data" / name).write_bytes(b"not parquet")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SUBDIR", "sub dir")
    assert doc_pages._bridgepack_args(cmds[0]) == [
        "inspect", "data/a.parquet", "data/b.parquet", "sub dir/a b", "-q",
    ]  # fmt: skip
    code, out, err = doc_pages.run_in_process(cmds[0], capsys)
    assert doc_pages.broken_promises(cmds[0], code, out + err) == [], err
    code, out, err = doc_pages.run_in_process(cmds[1], capsys)
    assert (code, out) == (3, "__main__\n")
    assert doc_pages.broken_promises(cmds[1], code, out + err) == []
    code, out, err = doc_pages.run_in_process(cmds[2], capsys)
    assert code == 1 and "ValueError: shown on stderr" in err and "Traceback" in err
    assert doc_pages.broken_promises(cmds[2], code, out + err) == [
        f"{cmds[2].where}: exit 1, the page says 0"
    ]
