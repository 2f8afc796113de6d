"""The repository's ``.pre-commit-hooks.yaml`` with the real pre-commit, on a temporary git repository
(#40 item 2): a commit that changes a config with an error is refused, naming ``file:line:col``; a YAML
outside the default ``files:`` pattern is not checked; ``files:`` and ``args:`` in the user's config
override the defaults. Nothing needs the network: the hook is ``language: system`` (the ``bridgepack`` on
PATH, this checkout's) and the hook repository is a local path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
GOOD = "model:\n  seq_length: 4096\n  context_parallel_size: 2\n"
BAD = "model:\n  seq_length: 510\n  context_parallel_size: 2\n"  # SP011: 510 is not a multiple of 2*CP


@pytest.fixture(scope="module")
def pre_commit() -> list[str]:
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("pre-commit is not installed (it is in the dev extra)")
        pytest.skip("pre-commit is not installed (pip install pre-commit; it is in the dev extra)")
    return [sys.executable, "-m", "pre_commit"]


def _git(cwd: Path, *args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No network, no user config: pre-commit's cache and git's identity in the test's own folder, this
    Python's scripts (its ``bridgepack``) first on PATH."""
    return {
        **os.environ,
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        "PRE_COMMIT_HOME": str(tmp_path / "cache"),
        "HOME": str(tmp_path / "home"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "COLUMNS": "40",
    }


def _hook_repo(tmp_path: Path, env: dict[str, str]) -> tuple[Path, str]:
    """A git repository holding the checkout's ``.pre-commit-hooks.yaml`` as it is, and its commit."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    shutil.copy(REPO_ROOT / ".pre-commit-hooks.yaml", hooks)
    _git(hooks, "init", "-q", env=env)
    _git(hooks, "add", ".", env=env)
    _git(hooks, "commit", "-q", "-m", "hooks", env=env)
    return hooks, _git(hooks, "rev-parse", "HEAD", env=env).stdout.strip()


def _project(tmp_path: Path, env: dict[str, str], pre_commit: list[str], hook: str) -> Path:
    hooks, rev = _hook_repo(tmp_path, env)
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q", env=env)
    config = f"repos:\n- repo: {hooks}\n  rev: {rev}\n  hooks:\n  - id: bridgepack-doctor\n{hook}"
    (project / ".pre-commit-config.yaml").write_text(config)
    subprocess.run([*pre_commit, "install"], cwd=project, env=env, check=True, capture_output=True)
    return project


def _commit(project: Path, env: dict[str, str], files: dict[str, str]) -> subprocess.CompletedProcess[str]:
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    _git(project, "add", "-A", env=env)
    return _git(project, "commit", "-m", "change", env=env, check=False)


def test_a_commit_with_a_broken_config_is_refused(
    tmp_path: Path, env: dict[str, str], pre_commit: list[str]
) -> None:
    project = _project(tmp_path, env, pre_commit, "")
    done = _commit(project, env, {"configs/sft.yaml": BAD, "notes/other.yaml": BAD})
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "configs/sft.yaml:2:3: SP011 error: seq_length 510 is not divisible by 2*CP = 4" in out
    assert "fix: model.seq_length=512" in out
    assert "notes/other.yaml" not in out  # outside the default files: pattern
    done = _commit(project, env, {"configs/sft.yaml": GOOD})
    assert done.returncode == 0, done.stdout + done.stderr
    assert _git(project, "log", "--oneline", env=env).stdout.count("\n") == 1


def test_files_and_args_in_the_users_config_override_the_defaults(
    tmp_path: Path, env: dict[str, str], pre_commit: list[str]
) -> None:
    hook = "    files: ^bridge/.*\\.yaml$\n    args: [--world-size, '6']\n"
    project = _project(tmp_path, env, pre_commit, hook)
    four_way = "model:\n  tensor_model_parallel_size: 4\n"  # 6 ranks cannot hold TP 4: SP018
    done = _commit(project, env, {"configs/a.yaml": BAD, "bridge/run.yaml": four_way})
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "bridge/run.yaml:2:3: SP018 error: world size 6 is not divisible by TP x PP x CP = 4" in out
    assert "configs/a.yaml" not in out
