"""``PaddingFreeCollator`` with a tiny random-init Llama (built here, float64): every sequence of a packed
batch has the loss it has alone; ``DataCollatorWithFlattening`` and ``use_cache=True`` break that."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from _support.tiny_llama import tiny_llama  # noqa: E402
from bridgepack.errors import DataError  # noqa: E402
from bridgepack.trl import PaddingFreeCollator  # noqa: E402

VOCAB = 61


def _model(attn: str) -> object:
    return tiny_llama(VOCAB, attn)


def _rows() -> list[dict[str, list[int]]]:
    """Three packed rows (as ``pack_dataset`` writes them) of 3, 1 and 2 sequences, with completion masks."""
    rng = np.random.default_rng(0)
    rows = []
    for lengths in ([7, 5, 3], [9], [4, 6]):
        ids = rng.integers(1, VOCAB, sum(lengths)).tolist()
        mask = [int(i >= n // 3) for n in lengths for i in range(n)]
        rows.append({"input_ids": ids, "completion_mask": mask, "seq_lengths": lengths})
    return rows


def _sequences(rows: list[dict[str, list[int]]]) -> list[tuple[list[int], list[int]]]:
    out = []
    for row in rows:
        ends = np.cumsum([0, *row["seq_lengths"]])
        out += [(row["input_ids"][a:b], row["completion_mask"][a:b]) for a, b in itertools.pairwise(ends)]
    return out


def _token_losses(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-token loss of the next-token prediction (0 where the label is -100), as transformers shifts."""
    shifted = torch.nn.functional.pad(labels, (0, 1), value=-100)[..., 1:]
    return torch.nn.functional.cross_entropy(
        logits.transpose(1, 2), shifted, ignore_index=-100, reduction="none"
    )


def _alone(model: object, sequences: list[tuple[list[int], list[int]]]) -> list[float]:
    """Each sequence's summed loss, run on its own (batch of one, no packing)."""
    out = []
    for ids, mask in sequences:
        x = torch.tensor([ids])
        labels = torch.where(torch.tensor([mask]) == 0, -100, x)
        with torch.no_grad():
            out.append(float(_token_losses(model(input_ids=x, use_cache=False).logits, labels).sum()))
    return out


def _packed(model: object, batch: dict, rows: list[dict], **kwargs: object) -> list[float]:
    """Each sequence's summed loss, read off a packed forward pass (sequences cut at ``seq_lengths``)."""
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"], **kwargs).logits
    losses = _token_losses(logits, batch["labels"])
    out = []
    for r, row in enumerate(rows):
        ends = np.cumsum([0, *row["seq_lengths"]])
        out += [float(losses[r, a:b].sum()) for a, b in itertools.pairwise(ends)]
    return out


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_per_sequence_losses_equal_the_unpacked_run(attn: str) -> None:
    model, rows = _model(attn), _rows()
    batch = PaddingFreeCollator(pad_token_id=0, pad_to_multiple_of=8)(rows)
    assert set(batch) == {"input_ids", "position_ids", "labels"}  # no attention_mask
    assert batch["input_ids"].shape == (3, 16)
    alone = _alone(model, _sequences(rows))
    np.testing.assert_allclose(
        _packed(model, batch, rows, use_cache=False), alone, rtol=1e-8
    )  # eager: float32 softmax
    # The model's own loss (mean over supervised tokens; transformers computes it in float32) is the same.
    supervised = sum(sum(m[1:]) for _, m in _sequences(rows))
    with torch.no_grad():
        loss = model(**batch, use_cache=False).loss
    assert float(loss) == pytest.approx(sum(alone) / supervised, rel=1e-6)
    # With a cache (the config's default use_cache=True) transformers no longer cuts the rows.
    mixed = _packed(model, batch, rows, use_cache=True)
    assert not np.allclose(mixed, alone, rtol=1e-6)


def test_labels_positions_and_padding_exactly() -> None:
    rows = [
        {"input_ids": [11, 12, 13, 21, 22], "seq_lengths": [3, 2], "completion_mask": [0, 1, 1, 1, 1]},
        {"input_ids": [31, 32, 33], "position_ids": [0, 1, 2], "labels": [31, -100, 33]},
    ]
    batch = PaddingFreeCollator(pad_token_id=7, return_flash_attn_kwargs=True)(rows)
    assert batch["input_ids"].tolist() == [[11, 12, 13, 21, 22], [31, 32, 33, 7, 7]]
    assert batch["position_ids"].tolist() == [[0, 1, 2, 0, 1], [0, 1, 2, 0, 1]]
    assert batch["labels"].tolist() == [[-100, 12, 13, -100, 22], [-100, -100, 33, -100, -100]]
    assert batch["cu_seq_lens_q"].tolist() == [0, 3, 5, 8, 10] == batch["cu_seq_lens_k"].tolist()
    assert batch["max_length_q"] == batch["max_length_k"] == 3


def test_bad_rows_name_the_row_and_field() -> None:
    collate = PaddingFreeCollator()
    with pytest.raises(
        DataError, match=r"row 1: field 'seq_lengths': expected positive lengths summing to 3"
    ):
        collate([{"input_ids": [1, 2], "seq_lengths": [2]}, {"input_ids": [1, 2, 3], "seq_lengths": [2]}])
    with pytest.raises(DataError, match=r"row 0: field 'completion_mask': expected 2 values, found 1"):
        collate([{"input_ids": [1, 2], "completion_mask": [1]}])


def test_flattening_collator_merges_the_sequences_of_a_packed_row() -> None:
    """transformers' DataCollatorWithFlattening gives each *row* one run of positions: the 6 sequences of
    these 3 packed rows become 3, and their losses are no longer the unpacked ones."""
    model, rows = _model("sdpa"), _rows()
    flat = transformers.DataCollatorWithFlattening()([{"input_ids": r["input_ids"]} for r in rows])
    assert int((flat["position_ids"] == 0).sum()) == len(rows) == 3 < len(_sequences(rows)) == 6
    ours = PaddingFreeCollator()(rows)
    real = torch.zeros_like(ours["input_ids"], dtype=torch.bool)
    for r, row in enumerate(rows):
        real[r, : len(row["input_ids"])] = True
    assert int((ours["position_ids"][real] == 0).sum()) == 6
    # Row 0's three sequences, their own boundaries masked: attention now crosses them, the loss moves.
    labels = torch.tensor([rows[0]["input_ids"]])
    labels[0, [0, 7, 12]] = -100
    with torch.no_grad():
        logits = model(input_ids=flat["input_ids"], position_ids=flat["position_ids"], use_cache=False).logits
    merged = float(_token_losses(logits[:, :15], labels).sum())
    alone = _alone(model, [(ids, [1] * len(ids)) for ids, _ in _sequences(rows)[:3]])
    assert not np.isclose(merged, sum(alone), rtol=1e-6)
