"""``PackOptions``: what ``pack_files`` takes, in four frozen groups (input, pack size, length policy, run).

``bridgepack.pack`` (the Python API and the CLI's one way to run a pack) builds the groups from its typed
keywords; :meth:`PackOptions.from_flat` sorts flat keywords into them for tests and tools. Each group checks
its fields against their declared types when it is made (:func:`bridgepack._typed.conform_fields`: a path
given
as a string becomes a ``Path``, ``too_long="split"`` its :class:`TooLong`, ``eos_id=2.5`` a usage error).
Errors name these parameters; the CLI shows their flags instead (:func:`bridgepack.errors.param`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from bridgepack._ranges import RANKS
from bridgepack._typed import conform_fields
from bridgepack.data.packset import SPLITS, TRAINING, Layout, check_eos_id
from bridgepack.data.pipeline._shape import TooLong, check_lengths
from bridgepack.data.samples import default_workers
from bridgepack.data.samples.text import TextOptions
from bridgepack.errors import UsageError, param
from bridgepack.packing import (
    BALANCED,
    BRIDGE_ALGORITHMS,
    BRIDGE_DEFAULT_ALGORITHM,
    BRIDGE_DEFAULT_SEED,
    DEFAULT_ALGORITHM,
    MAX_PAD_MULTIPLE,
    CostModel,
    pad_multiple,
)


@dataclass(frozen=True)
class InputOptions:
    """What is read and how records become token ids (text needs ``tokenizer``)."""

    paths: tuple[Path, ...]
    tokenizer: Path | None = None
    eos_id: int | None = None  # None: the tokenizer's, else the rows' most common last token
    text: TextOptions = field(default_factory=TextOptions)
    chat_template: Path | None = None  # Bridge's TokenizerConfig.chat_template_path
    tool_schemas: Path | None = None  # Bridge's dataset_kwargs.tool_schemas
    chunk_rows: int | None = None  # None: by the input's kind (bridgepack.data.samples.chunk_rows_for)

    def __post_init__(self) -> None:
        conform_fields(self)
        conform_fields(self.text)

    def check(self) -> None:
        """Usage errors of the input alone (``pack`` and the lengths ``plan`` reads)."""
        text = self.text
        if not self.paths:
            raise UsageError("no input files given")
        if (text.prompt_field is None) != (text.completion_field is None):
            raise UsageError(f"{param('prompt_field')} and {param('completion_field')} go together")
        if text.prompt_field is not None and self.tokenizer is None:
            raise UsageError(f"{param('prompt_field')}/{param('completion_field')} need {param('tokenizer')}")
        check_eos_id(self.eos_id)
        if self.chunk_rows is not None and self.chunk_rows < 1:
            raise UsageError(f"{param('chunk_rows')} must be >= 1, got {self.chunk_rows}")


@dataclass(frozen=True)
class PackSize:
    """The packs: capacity, pre-padding multiple and the algorithm that fills them."""

    pack_size: int
    pad_seq_to_mult: int = 1
    algorithm: str | None = None  # None: balanced, or Bridge's first_fit_shuffle with bridge_compat
    cost_model: CostModel | None = None  # what the balanced algorithm evens out (None: 7B-like default)
    seed: int | None = None  # None: BRIDGE_DEFAULT_SEED with bridge_compat, else 0

    def __post_init__(self) -> None:
        conform_fields(self)


@dataclass(frozen=True)
class LengthPolicy:
    """What happens to a sample longer than ``max_seq_length`` (default: the pack size)."""

    max_seq_length: int | None = None
    too_long: TooLong | None = None  # None: reject (bridge_compat decides as Bridge does)

    def __post_init__(self) -> None:
        conform_fields(self)


@dataclass(frozen=True)
class Parallelism:
    """The model parallelism of the run that will train on the packs, when the user gives it instead of a
    pre-padding multiple: context parallelism splits every sequence into ``2 CP`` chunks and sequence
    parallelism over TP ranks into ``CP TP`` slices, so Bridge pads each sample to ``lcm(2 CP, CP TP)``
    (bridge-format §7, :func:`bridgepack.packing.pad_multiple`), and the overrides printed after a pack name
    these sizes (:func:`bridgepack.data.pipeline.overrides_for_result`)."""

    cp: int | None = None
    tp: int | None = None
    sequence_parallel: bool = False

    def __post_init__(self) -> None:
        conform_fields(self)
        for name in ("cp", "tp"):
            value = getattr(self, name)
            if value is not None:
                RANKS.check(param(name), value)

    @property
    def given(self) -> bool:
        return self.cp is not None or self.tp is not None or self.sequence_parallel

    def pad_multiple(self, pad_seq_to_mult: int | None) -> int:
        """The pre-padding multiple: ``pad_seq_to_mult`` (default 1), or the one these sizes need; a usage
        error when both are given (which one was meant is unknown) or the derived one is too large."""
        if not self.given:
            return 1 if pad_seq_to_mult is None else pad_seq_to_mult
        if pad_seq_to_mult is not None:
            raise UsageError(
                f"give either {param('pad_seq_to_mult')} or "
                f"{param('cp')}/{param('tp')}/{param('sequence_parallel')}, not both"
            )
        cp, tp = self.cp or 1, self.tp or 1
        derived = pad_multiple(cp, tp, self.sequence_parallel)
        if derived > MAX_PAD_MULTIPLE:
            raise UsageError(
                f"{param('cp')} {cp} {param('tp')} {tp} need a pre-padding multiple of {derived}, "
                f"larger than {MAX_PAD_MULTIPLE}, the largest bridgepack writes"
            )
        return derived


@dataclass(frozen=True)
class RunSettings:
    """Where the set is written and how the run behaves; nothing here changes the packs."""

    out_dir: Path
    split: str = TRAINING
    layout: Layout = Layout.bridge  # a name (``"hf"``) is taken too
    workers: int | None = None  # None: all cores
    scratch_dir: Path | None = None
    overwrite: bool = False
    quiet: bool = False

    def __post_init__(self) -> None:
        conform_fields(self)


def resolve_workers(workers: int | None) -> int:
    """The number of workers: ``workers`` (at least 1), or all cores."""
    if workers is None:
        return default_workers()
    if workers < 1:
        raise UsageError(f"{param('workers')} must be >= 1, got {workers}")
    return workers


#: Fields given otherwise than as flat keywords: positionally, or (``text``) as its own fields.
_NOT_FLAT = frozenset({"paths", "text", "pack_size", "out_dir"})


@dataclass(frozen=True)
class PackOptions:
    """Everything ``bridgepack pack`` takes; ``bridge_compat`` (reproduce Bridge 0.6.2) reaches every
    group."""

    input: InputOptions
    size: PackSize
    run: RunSettings
    length: LengthPolicy = LengthPolicy()
    bridge_compat: bool = False

    def __post_init__(self) -> None:
        conform_fields(self)

    @classmethod
    def from_flat(
        cls,
        inputs: Sequence[str | os.PathLike[str]],
        out_dir: str | os.PathLike[str],
        pack_size: int,
        **options: Any,
    ) -> PackOptions:
        """The options from flat keywords, each in its group: the keywords of ``bridgepack.pack`` that name
        fields (``bridge_compat``, ``algorithm``, ``pad_seq_to_mult``, ``tokenizer``, ``too_long``,
        ``layout``, the :class:`TextOptions`, ...); an unknown one is a ``TypeError``."""
        given = dict(options)

        def take(kind: type[Any]) -> dict[str, Any]:
            """The given keywords that are fields of ``kind``, removed from ``given``."""
            names = [f.name for f in fields(kind) if f.name not in _NOT_FLAT]
            return {name: given.pop(name) for name in names if name in given}

        text, input_, size, run, length = (
            take(TextOptions),
            take(InputOptions),
            take(PackSize),
            take(RunSettings),
            take(LengthPolicy),
        )
        bridge_compat = given.pop("bridge_compat", False)
        if given:
            option = next(iter(given))
            raise TypeError(f"got an unexpected option {option!r} (see bridgepack.data.pipeline.PackOptions)")
        return cls(
            InputOptions(tuple(inputs), text=TextOptions(**text), **input_),  # type: ignore[arg-type]
            PackSize(pack_size, **size),
            RunSettings(out_dir, **run),  # type: ignore[arg-type]
            LengthPolicy(**length),
            bridge_compat=bridge_compat,
        )

    @property
    def max_seq_length(self) -> int:
        """The longest sample kept as is: ``max_seq_length`` or the pack size."""
        given = self.length.max_seq_length
        return self.size.pack_size if given is None else given

    @property
    def algorithm(self) -> str:
        """The packing algorithm: the one asked for, else the default of the mode."""
        return self.size.algorithm or (BRIDGE_DEFAULT_ALGORITHM if self.bridge_compat else DEFAULT_ALGORITHM)

    @property
    def too_long(self) -> TooLong:
        return self.length.too_long or TooLong.reject

    @property
    def packing_seed(self) -> int:
        """The seed of the packing shuffles: compat defaults to Bridge's ``GPTSFTDatasetConfig.seed``."""
        if self.size.seed is not None:
            return self.size.seed
        return BRIDGE_DEFAULT_SEED if self.bridge_compat else 0

    def check(self) -> None:
        """Usage errors for values or combinations that cannot work, before anything is read."""
        size, run = self.size, self.run
        if size.pack_size <= 0:
            raise UsageError(f"{param('pack_size')} must be a positive integer, got {size.pack_size}")
        if run.split not in SPLITS:
            raise UsageError(f"{param('split')} must be one of {', '.join(SPLITS)}, got {run.split!r}")
        self.input.check()
        max_len = self.max_seq_length
        if max_len > size.pack_size:
            raise UsageError(
                f"{param('max_seq_length')} {max_len} is larger than {param('pack_size')} {size.pack_size}"
            )
        check_lengths(max_len, size.pad_seq_to_mult)
        compat = param("bridge_compat")
        if self.bridge_compat and self.length.too_long is not None:
            raise UsageError(
                f"{param('too_long')} cannot be combined with {compat} (compat decides long samples)"
            )
        if size.cost_model is not None and self.algorithm != BALANCED:
            raise UsageError(
                f"{param('cost_model')} sets the cost model of the {BALANCED} algorithm, "
                f"not of {self.algorithm}"
            )
        if self.bridge_compat and self.algorithm not in BRIDGE_ALGORITHMS:
            raise UsageError(f"{compat} needs one of Bridge's algorithms ({', '.join(BRIDGE_ALGORITHMS)})")
        layout = param("layout")
        # the padding-free layout counts stored tokens (docs/pack.md); Bridge's bins do not
        if run.layout is Layout.padding_free:
            if self.bridge_compat:
                raise UsageError(f"{compat} builds Bridge's packs; it cannot be combined with {layout} hf")
            if self.too_long is TooLong.split and max_len // size.pad_seq_to_mult * size.pad_seq_to_mult < 2:
                raise UsageError(
                    f"{param('too_long')} split with {layout} hf needs pieces of at least 2 tokens"
                )
        resolve_workers(run.workers)
