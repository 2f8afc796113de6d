"""The ray engine's options, without a cluster: what is refused before Ray is touched, and that bridgepack
never imports Ray unless a run asks for it."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridgepack.cli import main
from bridgepack.data.samples import example_dataset_path


def test_import_and_a_local_pack_never_import_ray(tmp_path: Path) -> None:
    script = (
        "import sys, bridgepack\n"
        "assert 'ray' not in sys.modules, 'import bridgepack'\n"
        "bridgepack.pack(sys.argv[1], sys.argv[2], 1024)\n"
        "from bridgepack.cli import main\n"
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
        (["--scratch-dir", "elsewhere"], "--scratch-dir is for a local pack"),
        (["--layout", "padding-free"], "Bridge's layout only"),
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


def test_without_an_address_a_run_starts_its_own_ray_whatever_ray_address_says(tmp_path: Path) -> None:
    """``--ray-address`` unset means a Ray instance of the run's own (docs/scale.md): not the cluster that
    ``RAY_ADDRESS`` or another user's ``ray start`` on this machine points at, which ``ray.init()`` joins.
    In a child process: ray must not be imported here before the session cluster sets its environment."""
    if importlib.util.find_spec("ray") is None:  # not importorskip: that imports ray here
        pytest.skip("needs the ray extra")
    script = f"""
import json, ray, bridgepack
from bridgepack.errors import InputError
asked = []
def refuse(address=None, logging_level=None, **_):
    asked.append([address, logging_level])
    raise ConnectionError("stopped here by the test")
ray.is_initialized = lambda: False
ray.init = refuse
errors = []
for extra in ({{}}, {{"ray_address": "10.0.0.9:6379"}}):
    try:
        bridgepack.pack(
            [{str(example_dataset_path())!r}], {str(tmp_path / "out")!r}, 256, engine="ray", **extra
        )
    except InputError as exc:
        errors.append(str(exc))
print(json.dumps([asked, errors]))
"""
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    asked, errors = json.loads(done.stdout.splitlines()[-1])
    # quiet (the API's default): Ray's own INFO lines are kept off stderr too
    assert asked == [["local", logging.ERROR], ["10.0.0.9:6379", logging.ERROR]]
    assert errors[0].startswith("cannot start Ray on this machine")
    assert errors[1].startswith("ray_address 10.0.0.9:6379: cannot connect to Ray")
    assert not (tmp_path / "out").exists()
