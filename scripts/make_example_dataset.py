"""Regenerate ``src/bridgepack/resources/sft_example.parquet`` (deterministic: same bytes every run).

python scripts/make_example_dataset.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

OUT = Path(__file__).resolve().parent.parent / "src" / "bridgepack" / "resources" / "sft_example.parquet"
NUM_SAMPLES = 1000
EOS_ID = 2
VOCAB = 4096


def main() -> None:
    rng = np.random.default_rng(20260830)
    runtime = np.clip(rng.lognormal(np.log(120), 0.8, NUM_SAMPLES), 16, 1024).astype(np.int64)
    ids_rows, mask_rows = [], []
    for r in runtime:
        stored = int(r) + 1
        prompt = int(rng.integers(4, max(5, stored // 2)))
        ids = rng.integers(3, VOCAB, stored).astype(np.int32)
        ids[-1] = EOS_ID
        mask = np.ones(stored, dtype=np.int8)
        mask[:prompt] = 0
        ids_rows.append(ids)
        mask_rows.append(mask)
    table = pa.table(
        {
            "input_ids": pa.array(ids_rows, type=pa.list_(pa.int32())),
            "loss_mask": pa.array(mask_rows, type=pa.list_(pa.int8())),
        }
    )
    pq.write_table(table, OUT, compression="zstd")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes, {int(runtime.sum()) + NUM_SAMPLES:,} tokens)")


if __name__ == "__main__":
    main()
