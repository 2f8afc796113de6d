"""Fuzz every bridgepack reader for a bounded time: coverage-guided (atheris) or, without it, hypothesis.

Not part of the default test run (it runs for minutes). Each target runs in its own process, so a crash,
hang or memory blow-up in one does not stop the others::

    python fuzz/run.py                          # every target, 60 s each, atheris when installed
    python fuzz/run.py --seconds 300 legacy-npy bridge-yaml
    python fuzz/run.py --engine hypothesis      # the same targets through hypothesis (no atheris)
    python fuzz/run.py --list

A finding is an input for which a reader raised anything but a one-line ``BridgepackError`` naming the file
(see ``tests/_support/fuzz_targets.py``), ran past ``--timeout`` seconds, or used more than ``--rss-mb``.
Findings are written to ``fuzz/findings/<target>/`` (reproduce one with ``--reproduce FILE``); the corpus
grows in ``fuzz/corpus/<target>/``. Both are git-ignored. Exit status: 0 no finding, 1 findings.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for extra in (ROOT / "src", ROOT / "tests"):
    if os.fspath(extra) not in sys.path:
        sys.path.insert(0, os.fspath(extra))


def _have_atheris() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


def _numba_modules() -> list[str]:
    """bridgepack modules holding numba kernels: atheris' bytecode hooks break numba's compilation of them."""
    found = []
    for path in sorted((ROOT / "src" / "bridgepack").rglob("*.py")):
        if "njit" in path.read_text():
            found.append(".".join(path.relative_to(ROOT / "src").with_suffix("").parts))
    return found


def _one_atheris(name: str, seconds: int, timeout: int, rss_mb: int, max_len: int) -> int:
    """Run libFuzzer on one target in this process (never returns on success: libFuzzer exits)."""
    import atheris

    with atheris.instrument_imports(include=["bridgepack"], exclude=_numba_modules()):
        import bridgepack.curves
        import bridgepack.data
        import bridgepack.data.samples._ingest
        import bridgepack.data.samples._readers
        import bridgepack.doctor
        import bridgepack.translate  # noqa: F401
    from _support.fuzz_targets import check, target

    chosen = target(name)
    corpus = HERE / "corpus" / name
    findings = HERE / "findings" / name
    corpus.mkdir(parents=True, exist_ok=True)
    findings.mkdir(parents=True, exist_ok=True)
    for k, seed in enumerate(chosen.seeds):
        (corpus / f"seed-{k}").write_bytes(seed)
    work = Path(tempfile.mkdtemp(prefix=f"bridgepack-fuzz-{name}-"))

    def one_input(data: bytes) -> None:
        check(chosen, data, work)

    argv = [
        sys.argv[0],
        f"-max_total_time={seconds}",
        f"-timeout={timeout}",
        f"-rss_limit_mb={rss_mb}",
        f"-max_len={max_len}",
        f"-artifact_prefix={findings}/",
        "-print_final_stats=1",
        os.fspath(corpus),
    ]
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    return 0


def _one_hypothesis(name: str, seconds: int, timeout: int, rss_mb: int, max_len: int) -> int:
    """The same target through hypothesis: mutated seeds and structured garbage until ``seconds`` pass."""
    import resource

    from hypothesis import HealthCheck, given, settings

    from _support.fuzz_strategies import mutated
    from _support.fuzz_targets import check, target

    resource.setrlimit(resource.RLIMIT_AS, (rss_mb << 20, rss_mb << 20))
    chosen = target(name)
    findings = HERE / "findings" / name
    findings.mkdir(parents=True, exist_ok=True)
    current = findings / "current"
    work = Path(tempfile.mkdtemp(prefix=f"bridgepack-fuzz-{name}-"))
    runs = 0

    @settings(
        max_examples=200,
        deadline=timeout * 1000,
        database=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(mutated(chosen.seeds, max_len))
    def batch(raw: bytes) -> None:
        nonlocal runs
        runs += 1
        current.write_bytes(raw)  # what was running if the process dies (a crash in native code)
        try:
            check(chosen, raw, work)
        except BaseException:
            current.replace(findings / "crash-latest")
            raise

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # batches of 200 fresh random inputs until the time is up
        batch()
    current.unlink(missing_ok=True)
    print(f"{name}: {runs} inputs in {seconds} s, no finding", file=sys.stderr)
    return 0


def _reproduce(name: str, path: Path) -> int:
    from _support.fuzz_targets import check, target

    with tempfile.TemporaryDirectory() as tmp:
        check(target(name), path.read_bytes(), Path(tmp))
    print(f"{name}: {path}: no finding")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("targets", nargs="*", help="target names (default: all)")
    parser.add_argument("--seconds", type=int, default=60, help="time per target (default 60)")
    parser.add_argument("--engine", choices=("auto", "atheris", "hypothesis"), default="auto")
    parser.add_argument("--timeout", type=int, default=10, help="seconds one input may take (default 10)")
    parser.add_argument("--rss-mb", type=int, default=3072, help="memory limit per target (default 3072)")
    parser.add_argument("--max-len", type=int, default=65536, help="largest input in bytes (default 64 KiB)")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    parser.add_argument("--reproduce", type=Path, help="run one saved input through the (single) target")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()

    engine = args.engine
    if engine == "auto":
        engine = "atheris" if _have_atheris() else "hypothesis"
    limits = (args.seconds, args.timeout, args.rss_mb, args.max_len)
    if args.one:  # a child of the loop below, its target checked there: nothing of bridgepack imported before
        run_one = _one_atheris if engine == "atheris" else _one_hypothesis  # atheris instruments it
        return run_one(args.one, *limits)

    from _support.fuzz_targets import targets

    names = [t.name for t in targets()]
    if args.list:
        print("\n".join(names))
        return 0
    unknown = sorted(set(args.targets) - set(names))
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; --list shows them")
    if args.reproduce is not None:
        if len(args.targets) != 1:
            parser.error("--reproduce needs exactly one target name")
        return _reproduce(args.targets[0], args.reproduce)
    failed = []
    for name in args.targets or names:
        started = time.monotonic()
        command = [sys.executable, __file__, "--one", name, "--engine", engine]
        command += ["--seconds", str(args.seconds), "--timeout", str(args.timeout)]
        command += ["--rss-mb", str(args.rss_mb), "--max-len", str(args.max_len)]
        code = subprocess.call(command, cwd=ROOT)
        took = time.monotonic() - started
        status = "ok" if code == 0 else f"FINDING (exit {code}); inputs in fuzz/findings/{name}/"
        print(f"== {name}: {engine}, {took:.0f} s: {status}", flush=True)
        if code != 0:
            failed.append(name)
    print(f"== {len(failed)} target(s) with findings: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
