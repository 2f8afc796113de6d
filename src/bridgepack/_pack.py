"""``bridgepack.pack``: the one function that runs a pack, for the Python API and for ``bridgepack pack``.

Every option is a typed keyword (an IDE completes it, mypy checks it) and every value is checked again when
the options are made (:mod:`bridgepack._typed`), so a Python caller is refused what the command line is
refused,
with the same :class:`~bridgepack.errors.UsageError` (the CLI shows it with its flags, exit 2): a pad multiple
given beside the CP/TP/SP it would be derived from, an unknown engine, Ray's settings without Ray. The
overrides that train on the result are filled here for both.

It lives apart from :mod:`bridgepack._api` so that ``bridgepack pack`` starts without importing what the other
jobs need (the doctor, the curves readers: ~0.2 s).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bridgepack._typed import conform_fields
from bridgepack.data.packset import TRAINING, Layout
from bridgepack.data.pipeline import (
    PackOptions,
    PackResult,
    Parallelism,
    TooLong,
    overrides_for_result,
    pack_files,
)
from bridgepack.data.samples.text import TextOptions
from bridgepack.engine import pack_on_ray
from bridgepack.errors import UsageError, param
from bridgepack.packing import CostModel

PathLike = str | os.PathLike[str]
#: Where a pack runs: this machine, or a Ray cluster (a directory of shards; docs/scale.md).
Engine = Literal["local", "ray"]
_TEXT = TextOptions()  # the text settings' defaults, repeated as this function's keyword defaults


@dataclass(frozen=True)
class _EngineChoice:
    engine: Engine = "local"
    ray_address: str | None = None
    shards: int | None = None

    def __post_init__(self) -> None:
        conform_fields(self)
        if self.engine == "local" and (self.ray_address is not None or self.shards is not None):
            raise UsageError(f"{param('ray_address')} and {param('shards')} go with {param('engine')} ray")

    def run(self, opts: PackOptions) -> PackResult:
        if self.engine == "ray":
            return pack_on_ray(opts, address=self.ray_address, shards=self.shards)
        return pack_files(opts)


def pack(
    inputs: PathLike | Sequence[PathLike],
    out_dir: PathLike,
    pack_size: int,
    *,
    # what is read (text needs a tokenizer)
    tokenizer: PathLike | None = None,
    eos_id: int | None = None,
    chat_template: PathLike | None = None,
    tool_schemas: PathLike | None = None,
    prompt_field: str | None = None,
    completion_field: str | None = None,
    messages_field: str = _TEXT.messages_field,
    loss_mode: str | None = None,
    assistant_start: str | None = None,
    assistant_end: str | None = None,
    separator: str = _TEXT.separator,
    prompt_template: str = _TEXT.prompt_template,
    strip_whitespace: bool = _TEXT.strip_whitespace,
    add_bos: bool = _TEXT.add_bos,
    add_sep: bool = _TEXT.add_sep,
    add_eos: bool = _TEXT.add_eos,
    truncation_method: str = _TEXT.truncation_method,
    # the packs
    bridge_compat: bool = False,
    algorithm: str | None = None,
    cost_model: CostModel | None = None,
    seed: int | None = None,
    pad_seq_to_mult: int | None = None,
    cp: int | None = None,
    tp: int | None = None,
    sequence_parallel: bool = False,
    max_seq_length: int | None = None,
    too_long: TooLong | str | None = None,
    # the run
    split: str = TRAINING,
    layout: Layout | str = Layout.bridge,
    workers: int | None = None,
    chunk_rows: int | None = None,
    scratch_dir: PathLike | None = None,
    overwrite: bool = False,
    quiet: bool = True,
    engine: Engine = "local",
    ray_address: str | None = None,
    shards: int | None = None,
) -> PackResult:
    """Pack SFT samples into Megatron-Bridge's packed Parquet + metadata (``bridgepack pack``; docs/pack.md
    says what each option does, by its flag: ``pad_seq_to_mult`` is ``--pad-seq-to-mult``).

    ``cp``/``tp``/``sequence_parallel`` derive the pre-padding multiple (instead of ``pad_seq_to_mult``) and
    ``PackResult.overrides`` trains on the result with them; ``engine="ray"`` (with ``ray_address``,
    ``shards``) packs on a Ray cluster into a directory of shards (docs/scale.md); progress bars are off
    unless ``quiet=False``.

    >>> import tempfile, bridgepack
    >>> from bridgepack.data.samples import example_dataset_path
    >>> out = tempfile.mkdtemp()
    >>> result = bridgepack.pack(example_dataset_path(), out, 1024, bridge_compat=True, cp=2)
    >>> result.counts.samples_in, result.num_packs, result.metadata.packing_efficiency
    (1000, 164, 98.72)
    >>> result.packed_path.name, result.metadata_path.name, result.record.pad_seq_to_mult
    ('training_1024.idx.parquet', '1024_metadata.jsonl', 4)
    >>> [o for o in result.overrides if "parallel" in o]
    ['model.context_parallel_size=2']
    """
    options = dict(locals())  # the keywords as given: every one but these few is a field of the options
    parallel = Parallelism(options.pop("cp"), options.pop("tp"), options.pop("sequence_parallel"))
    runner = _EngineChoice(options.pop("engine"), options.pop("ray_address"), options.pop("shards"))
    options["pad_seq_to_mult"] = parallel.pad_multiple(pad_seq_to_mult)
    for positional in ("inputs", "out_dir", "pack_size"):
        del options[positional]
    opts = PackOptions.from_flat(_as_tuple(inputs), out_dir, pack_size, **options)
    result = runner.run(opts)
    result.overrides = overrides_for_result(
        result, cp=parallel.cp or 1, tp=parallel.tp or 1, sequence_parallel=parallel.sequence_parallel
    )
    return result


def _as_tuple(inputs: PathLike | Sequence[PathLike]) -> tuple[PathLike, ...]:
    """One input or several, as the tuple :class:`InputOptions` holds (made ``Path`` s there)."""
    return (inputs,) if isinstance(inputs, (str, os.PathLike)) else tuple(inputs)
