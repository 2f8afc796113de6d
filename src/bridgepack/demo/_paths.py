"""Where the demo writes: one output directory, never one that already holds something (unless told).

::

    bridgepack-demo-20261130-014500/
      tokenizer/                      built from the bundled conversations (nothing downloaded)
      packed/training_512.idx.parquet packed data, Bridge's layout (bridge-format §3)
      packed/512_metadata.jsonl       its metadata sidecar
      packed/rejects_training_512.jsonl samples truncated to fit a pack
      packed_vocab/                   --tokenizer DIR only: the packs with ids remapped to a small vocabulary
                                      (what the tiny model trains on) and vocab_remap.json, the map back
      config/bridge_sft.yaml          the bundled config, as written (one deliberate mistake)
      config/bridge_sft_fixed.yaml    the same with the doctor's fix applied
      logs/packed.log, logs/padded.log  Megatron-LM log lines of the two training runs
      curves.png, packing.png         the plots the report embeds
      report.html                     the self-contained report
      summary.json                    what ``--format json`` prints
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from bridgepack.data.packset import TRAINING, metadata_filename, packed_filename
from bridgepack.errors import UsageError, param

DEFAULT_PREFIX = "bridgepack-demo-"


@dataclass(frozen=True)
class DemoPaths:
    """The paths of one demo run under ``root``."""

    root: Path
    pack_size: int
    #: ``--tokenizer DIR``: the user's tokenizer, used in place of one built from the conversations.
    user_tokenizer: Path | None = None

    @property
    def tokenizer(self) -> Path:
        return self.user_tokenizer if self.user_tokenizer is not None else self.root / "tokenizer"

    @property
    def train_dir(self) -> Path:
        """Where the packs the model trains on are: a remapped copy with a user's tokenizer."""
        return self.root / "packed_vocab" if self.user_tokenizer is not None else self.packed_dir

    @property
    def train_packed(self) -> Path:
        return self.train_dir / packed_filename(TRAINING, self.pack_size)

    @property
    def packed_dir(self) -> Path:
        return self.root / "packed"

    @property
    def packed(self) -> Path:
        return self.packed_dir / packed_filename(TRAINING, self.pack_size)

    @property
    def metadata(self) -> Path:
        return self.packed_dir / metadata_filename(self.pack_size)

    @property
    def config(self) -> Path:
        return self.root / "config" / "bridge_sft.yaml"

    @property
    def fixed_config(self) -> Path:
        return self.root / "config" / "bridge_sft_fixed.yaml"

    def log(self, mode: str) -> Path:
        return self.root / "logs" / f"{mode}.log"

    @property
    def curves_png(self) -> Path:
        return self.root / "curves.png"

    @property
    def packing_png(self) -> Path:
        return self.root / "packing.png"

    @property
    def report(self) -> Path:
        return self.root / "report.html"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"


def default_out_dir(cwd: Path | None = None) -> Path:
    """A new ``bridgepack-demo-YYYYMMDD-HHMMSS`` directory under ``cwd`` (``-2``, ``-3``... if taken)."""
    base = (cwd or Path.cwd()) / (DEFAULT_PREFIX + time.strftime("%Y%m%d-%H%M%S"))
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def prepare_out_dir(out: Path, *, overwrite: bool) -> None:
    """Create ``out``; refuse a file, or a non-empty directory unless ``overwrite`` (then files are replaced
    one by one as the steps write them; nothing else in the directory is touched)."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{param('out')} {os.fspath(out)}: is a file, expected a directory")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise UsageError(
            f"{param('out')} {os.fspath(out)}: directory is not empty (choose a new one, or pass "
            f"{param('overwrite')} to "
            "replace the demo's files in it)"
        )
    out.mkdir(parents=True, exist_ok=True)
