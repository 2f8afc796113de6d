"""The view's defaults and field lists equal Bridge 0.6.2's, read from the wheel's source (never imported)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from _support.peers import bridge_wheel_root
from bridgepack.doctor import _bridge_fields as bf
from bridgepack.doctor._view import DatasetView, ModelView, PackedSpecsView

pytestmark = pytest.mark.network
NOT_LITERAL = object()


def _class_defaults(path: Path, name: str) -> dict[str, Any]:
    """``field -> literal default`` of a dataclass in a source file (``NOT_LITERAL`` otherwise)."""
    tree = ast.parse(path.read_text())
    (cls,) = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name]
    out: dict[str, Any] = {}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            try:
                out[node.target.id] = (
                    ast.literal_eval(node.value) if node.value is not None else dataclasses.MISSING
                )
            except ValueError:
                out[node.target.id] = NOT_LITERAL
    return out


@pytest.fixture(scope="module")
def bridge() -> Path:
    return bridge_wheel_root() / "megatron" / "bridge"


def test_packed_sequence_specs(bridge: Path) -> None:
    theirs = _class_defaults(bridge / "data" / "packing" / "config.py", "PackedSequenceSpecs")
    ours = {f.name: f.default for f in dataclasses.fields(PackedSpecsView)}
    assert ours == theirs
    assert set(theirs) == bf.PACKED_SPECS_FIELDS


def test_sft_dataset_defaults(bridge: Path) -> None:
    theirs = _class_defaults(bridge / "data" / "builders" / "gpt_sft.py", "GPTSFTDatasetConfig")
    ours = {f.name: f.default for f in dataclasses.fields(DatasetView)}
    for name in ("seed", "enable_offline_packing", "offline_packing_specs", "dataset_root"):
        assert ours[name] == theirs[name], name


def test_model_defaults(bridge: Path) -> None:
    theirs = _class_defaults(bridge / "models" / "gpt_provider.py", "GPTModelProvider")
    assert ModelView().seq_length == theirs["seq_length"]
    assert {"seq_length", "hf_model_id"} <= bf.MODEL_FIELDS


def test_container_sections(bridge: Path) -> None:
    theirs = _class_defaults(bridge / "training" / "config.py", "ConfigContainer")
    assert {name for name in theirs if not name.startswith("_")} == bf.CONTAINER_SECTIONS
