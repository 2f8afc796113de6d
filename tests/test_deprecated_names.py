"""Import paths documented before 0.2 keep working for one release, each with a DeprecationWarning."""

from __future__ import annotations

import importlib
import sys

import pytest

import seqpack.batching
import seqpack.data.packed_source
import seqpack.diff
import seqpack.doctor
import seqpack.env
import seqpack.fingerprint
import seqpack.verify


@pytest.mark.parametrize(
    ("name", "home"),
    [
        ("fingerprint_packed", seqpack.data.packed_source),
        ("PackedFingerprinter", seqpack.fingerprint),
        ("hash_block", seqpack.fingerprint),
        ("env_findings", seqpack.env),
        ("VersionTable", seqpack.env),
        ("verify_bridge", seqpack.verify),
        ("dump_batches", seqpack.batching),
    ],
)
def test_old_diff_names_resolve_with_a_warning(name: str, home: object) -> None:
    with pytest.warns(DeprecationWarning, match=f"seqpack.diff.{name} moved"):
        assert getattr(seqpack.diff, name) is getattr(home, name)


def test_unknown_diff_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        seqpack.diff.no_such_thing  # noqa: B018


def test_config_is_the_doctor_under_its_old_name() -> None:
    sys.modules.pop("seqpack.config", None)
    with pytest.warns(DeprecationWarning, match="seqpack.config is now seqpack.doctor"):
        config = importlib.import_module("seqpack.config")
    assert config.check is seqpack.doctor.check and config.RULES is seqpack.doctor.RULES
