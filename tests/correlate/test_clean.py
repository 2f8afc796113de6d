"""``bridgepack clean``: lists experiment folders, moves them aside with --yes, deletes with --delete --yes,
never touches anything outside the named folders and never follows a symlink."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from bridgepack.cli import main
from bridgepack.correlate import CleanReport, clean_experiments, find_experiments


def tree(base: Path) -> dict[str, Path]:
    """root/ with a Bridge output base, an MLM checkpoint folder, files to keep; outside/ beside it.

    root/nemo_experiments/default/checkpoints/{latest_train_state.pt, iter_0000005/, iter_0000010/}
    root/old/ckpt/{latest_checkpointed_iteration.txt, iter_0000020/model.bin}
    root/keep/notes.txt, root/link_out -> outside/ (holds its own nemo_experiments/)
    """
    root, outside = base / "root", base / "outside"
    ckpt = root / "nemo_experiments" / "default" / "checkpoints"
    for it in ("iter_0000005", "iter_0000010"):
        (ckpt / it).mkdir(parents=True)
        (ckpt / it / "w.bin").write_bytes(b"x" * 1000)
    (ckpt / "latest_train_state.pt").write_bytes(b"s" * 24)
    mlm = root / "old" / "ckpt"
    (mlm / "iter_0000020").mkdir(parents=True)
    (mlm / "iter_0000020" / "model.bin").write_bytes(b"m" * 300)
    (mlm / "latest_checkpointed_iteration.txt").write_text("20")
    (root / "keep").mkdir()
    (root / "keep" / "notes.txt").write_text("keep me")
    (outside / "nemo_experiments" / "iter_0000001").mkdir(parents=True)
    (root / "link_out").symlink_to(outside, target_is_directory=True)
    (root / "nemo_link").symlink_to(outside / "nemo_experiments", target_is_directory=True)
    return {"root": root, "outside": outside}


def listing(path: Path) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, n), path) for d, ds, fs in os.walk(path) for n in ds + fs)


def clean(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["clean", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_dry_run_lists_with_size_and_newest_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = tree(tmp_path)
    before = listing(tmp_path)
    code, doc = clean(capsys, str(paths["root"]))
    assert code == 0 and doc["dry_run"] is True
    found = {Path(f["path"]).relative_to(paths["root"]).as_posix(): f for f in doc["found"]}
    assert sorted(found) == ["nemo_experiments", "old/ckpt"]
    bridge, mlm = found["nemo_experiments"], found["old/ckpt"]
    assert (bridge["kind"], bridge["bytes"], bridge["newest_checkpoint"]) == (
        "experiments",
        2024,
        "default/checkpoints/iter_0000010",
    )
    assert (mlm["kind"], mlm["bytes"], mlm["newest_checkpoint"]) == ("checkpoints", 302, "iter_0000020")
    assert bridge["action"] == "would move" and "bridgepack-clean-" in bridge["to"]
    assert listing(tmp_path) == before


def test_yes_moves_aside_and_nothing_else(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = tree(tmp_path)
    outside_before = listing(paths["outside"])
    code, doc = clean(capsys, str(paths["root"]), "--yes")
    assert code == 0 and [f["action"] for f in doc["found"]] == ["moved", "moved"]
    for item in doc["found"]:
        moved = Path(item["to"])
        assert moved.is_dir() and not Path(item["path"]).exists()
        assert moved.parent.parent == Path(item["path"]).parent
        assert moved.parent.name.startswith("bridgepack-clean-")
    root = paths["root"]
    assert (root / "keep" / "notes.txt").read_text() == "keep me"
    assert (root / "link_out").is_symlink() and (root / "nemo_link").is_symlink()
    assert listing(paths["outside"]) == outside_before
    # What was moved aside is not found again.
    assert clean(capsys, str(root))[1]["found"] == []


def test_delete_needs_yes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = tree(tmp_path)
    before = listing(tmp_path)
    code, doc = clean(capsys, str(paths["root"]), "--delete")
    assert code == 0 and {f["action"] for f in doc["found"]} == {"would delete"}
    assert listing(tmp_path) == before


def test_delete_yes_deletes_only_what_is_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = tree(tmp_path)
    outside_before = listing(paths["outside"])
    code, doc = clean(capsys, str(paths["root"]), "--delete", "--yes")
    assert code == 0 and {f["action"] for f in doc["found"]} == {"deleted"}
    assert listing(paths["root"]) == ["keep", "keep/notes.txt", "link_out", "nemo_link", "old"]
    assert listing(paths["outside"]) == outside_before


def test_symlinks_are_never_followed(tmp_path: Path) -> None:
    paths = tree(tmp_path)
    names = [f.path.name for f in find_experiments(paths["root"])]
    assert "nemo_link" not in names and all(
        "outside" not in str(f.path) for f in find_experiments(paths["root"])
    )
    # A named folder that is itself a symlink is refused rather than followed.
    assert main(["clean", str(paths["root"] / "link_out")]) == 2


def test_text_output_and_nothing_to_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = tree(tmp_path)
    assert main(["clean", str(paths["root"])]) == 0
    out = capsys.readouterr().out
    assert "would move: " in out and "newest default/checkpoints/iter_0000010" in out and "2.0 KiB" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["clean", str(empty)]) == 0
    assert capsys.readouterr().out.strip() == "nothing to clean"
    assert main(["clean", str(tmp_path / "missing")]) == 2


@pytest.mark.parametrize("extra", [[], ["--delete"]])
def test_a_mount_point_is_left_alone_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, extra: list[str]
) -> None:
    paths = tree(tmp_path)
    root = paths["root"]
    # one found folder is a mount point itself, the other holds one below it
    mounts = {os.fspath(root / "nemo_experiments"), os.fspath(root / "old" / "ckpt" / "iter_0000020")}
    real_ismount = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: os.fspath(p) in mounts or real_ismount(p))
    before = listing(tmp_path)
    code, doc = clean(capsys, str(root), "--yes", *extra)
    assert code == 1 and [f["action"] for f in doc["found"]] == ["skipped", "skipped"]
    assert {f["mount_point"] for f in doc["found"]} == mounts
    assert listing(tmp_path) == before  # nothing moved, no empty bridgepack-clean-* folder left behind
    assert main(["clean", str(root), "--yes", *extra]) == 1
    out, err = capsys.readouterr()
    assert f"skipped: {root / 'nemo_experiments'}" in out and "is a mount point (unmount it" in out
    assert "0 folder(s)" in err and "2 skipped (mount points)" in err


def test_the_json_document_is_the_library_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = tree(tmp_path)
    report = clean_experiments([paths["root"]], yes=False, delete=False, stamp="20260830-101500")
    code, doc = clean(capsys, str(paths["root"]))
    assert code == 0 and doc["schema_version"] == CleanReport.SCHEMA_VERSION == 1
    stamp = Path(doc["found"][0]["to"]).parent.name.removeprefix("bridgepack-clean-")
    expected = json.loads(json.dumps(report.to_dict()).replace("20260830-101500", stamp))
    assert doc == expected and next(iter(doc)) == "schema_version"
    assert [a.action for a in report.actions] == ["would move", "would move"] and not report.skipped
