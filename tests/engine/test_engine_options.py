"""The ray engine's options, without a cluster: what is refused before Ray is touched, and that seqpack
never imports Ray unless a run asks for it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from seqpack.cli import main
from seqpack.data.samples import example_dataset_path


def test_import_and_a_local_pack_never_import_ray(tmp_path: Path) -> None:
    script = (
        "import sys, seqpack\n"
        "assert 'ray' not in sys.modules, 'import seqpack'\n"
        "seqpack.pack(sys.argv[1], sys.argv[2], 1024)\n"
        "from seqpack.cli import main\n"
        "assert main(['pack', '-q', '--example', '-o', sys.argv[2] + '-cli', '-n', '1024']) == 0\n"
        "loaded = sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.'))\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(example_dataset_path()), str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--bridge-compat"], "plans each shard alone"),
        (["--layout", "hf"], "Bridge's layout only"),
        (["--shards", "0"], "--shards"),
    ],
)
def test_refused_in_one_line_before_any_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], expected: str
) -> None:
    code = main(["pack", "-q", "--example", "-o", str(tmp_path), "-n", "1024", "--engine", "ray", *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert expected in err and len(err.splitlines()) == 1
    assert not any(tmp_path.iterdir())


def test_ray_flags_without_the_engine_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", "-q", "--example", "-o", str(tmp_path), "-n", "1024", "--shards", "4"]) == 2
    assert "--engine ray" in capsys.readouterr().err


def test_without_an_address_a_run_starts_its_own_ray_whatever_ray_address_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--ray-address`` unset means a Ray instance of the run's own (docs/scale.md): not the cluster that
    ``RAY_ADDRESS`` or another user's ``ray start`` on this machine points at, which ``ray.init()`` joins."""
    ray = pytest.importorskip("ray")
    import seqpack
    from seqpack.errors import InputError

    asked: list[object] = []

    def refuse(address: object = None, **_: object) -> None:
        asked.append(address)
        raise ConnectionError("stopped here by the test")

    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(InputError, match="cannot start Ray on this machine"):
        seqpack.pack([example_dataset_path()], tmp_path / "out", 256, engine="ray")
    assert asked == ["local"]
    there = "10.0.0.9:6379"
    with pytest.raises(InputError, match=re.escape(f"ray_address {there}: cannot connect")):
        seqpack.pack([example_dataset_path()], tmp_path / "out", 256, engine="ray", ray_address=there)
    assert asked == ["local", there]
    assert not (tmp_path / "out").exists()
