"""Override keys that are not dotted paths of field names are refused, never ignored or applied elsewhere.

Before: ``model..seq_length=4096`` and ``++model.seq_length`` passed doctor as if they set nothing wrong
(OmegaConf read the first as an empty section), ``.model.seq_length=4096`` and ``--model.seq_length=4096``
became an unknown section ``''`` / ``--model`` (a warning, the value never checked), ``+++model.x=1`` lost
its extra ``+`` silently. Every variant below is exit 2 naming the key, in ``doctor`` and in
``bridgepack.doctor.parse_override`` (which ``correlate`` parses its Bridge overrides with).
"""

from __future__ import annotations

import pytest

from bridgepack.cli import main
from bridgepack.doctor import parse_override
from bridgepack.errors import UsageError

BAD = {
    "empty segment inside": "model..seq_length=4096",
    "empty segment first": ".model.seq_length=4096",
    "empty segment last": "model.seq_length.=4096",
    "only dots": "..=1",
    "dashes before the key": "--model.seq_length=4096",
    "one dash": "-model.seq_length=4096",
    "three pluses": "+++model.seq_length=4096",
    "plus after the start": "model.+seq_length=4096",
    "space before =": "model.seq_length =4096",
    "space inside": "model seq_length=4",
    "bracket index": "model.layers[0]=1",
    "bracketed segment": "model.[0].x=1",
    "delete with an empty segment": "~model..seq_length=1",
    "non-ASCII digit": "model.٣=1",
    "dollar": "model.$x=1",
}
GOOD = {
    "plain": ("model.seq_length=4096", "model.seq_length", 4096),
    "add": ("+model.seq_length=8", "model.seq_length", 8),
    "force add": ("++model.seq_length=8", "model.seq_length", 8),
    "list index": ("model.layers.0.x=1", "model.layers.0.x", 1),
    "underscores": ("dataset._private_1=2", "dataset._private_1", 2),
}


@pytest.mark.parametrize("item", BAD.values(), ids=list(BAD))
def test_a_key_that_is_not_a_dotted_path_is_refused(item: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match="is not a dotted path of field names"):
        parse_override(item)
    assert main(["doctor", "--", item]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: override ") and "is not a dotted path of field names" in err, err
    assert err.count("\n") == 1


@pytest.mark.parametrize(("item", "key", "value"), GOOD.values(), ids=list(GOOD))
def test_dotted_paths_are_read(item: str, key: str, value: object) -> None:
    assert parse_override(item) == (key, value)
