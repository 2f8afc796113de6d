"""bridgepack pack records the fingerprints of what it writes, equal to reading the file back."""

from __future__ import annotations

from pathlib import Path

from bridgepack.data.packed import fingerprint_packed
from bridgepack.data.packset import BRIDGEPACK_KEY, read_metadata
from bridgepack.data.pipeline import PackOptions, pack_files
from bridgepack.data.samples import example_dataset_path
from bridgepack.diff import diff_paths


def test_pack_writes_fingerprint_of_its_file(tmp_path: Path) -> None:
    compat = pack_files(
        PackOptions.from_flat(
            [example_dataset_path()], tmp_path / "compat", 512, bridge_compat=True, quiet=True
        )
    )
    best = pack_files(PackOptions.from_flat([example_dataset_path()], tmp_path / "best", 512, quiet=True))
    for result in (compat, best):
        record = read_metadata(result.metadata_path)[0][BRIDGEPACK_KEY]
        assert record["fingerprint"] == fingerprint_packed(result.packed_path).to_dict()
    a = read_metadata(compat.metadata_path)[0][BRIDGEPACK_KEY]["fingerprint"]
    b = read_metadata(best.metadata_path)[0][BRIDGEPACK_KEY]["fingerprint"]
    assert a["content"] == b["content"] and a["packs"] != b["packs"]
    report = diff_paths(compat.packed_path, best.packed_path)
    assert report["verdict"].startswith("same sequences and masks")
    assert report["metadata"]["differences"]["bridgepack.mode"] == ["bridge-compat", "bridgepack"]
    assert not any(key.startswith("bridgepack.fingerprint") for key in report["metadata"]["differences"])
