"""The main jobs as plain functions with typed arguments and result objects (``import bridgepack``); ``pack``
is :mod:`bridgepack._pack` (the CLI runs it too, and starts without what these jobs import).

Each function is what the command of the same name does, without the terminal: no progress bars, no
printing, errors raised as :class:`~bridgepack.errors.BridgepackError` subclasses (``UsageError``,
``InputError``,
``DataError``). The worked examples below run as doctests in CI (``tests/test_api.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from bridgepack.curves import Comparison, Profile, read_curves
from bridgepack.curves import compare_curves as _compare_curves
from bridgepack.data.packed import Inspection, inspect_packed
from bridgepack.doctor import DoctorOptions, Report, check, load_config
from bridgepack.errors import UsageError
from bridgepack.packing import CostModel, ModelDims
from bridgepack.sizing import SamplerSimulation

PathLike = str | os.PathLike[str]


def inspect(
    path: PathLike,
    *,
    metadata: PathLike | None = None,
    dp: int | None = None,
    gbs: int | None = None,
    model: ModelDims | None = None,
    tokenizer: PathLike | None = None,
) -> Inspection:
    """Check packed data row by row and its metadata sidecar; statistics (``bridgepack inspect``).

    With ``dp`` and ``gbs`` the packs are also dealt the way Bridge's batch sampler deals them, and
    ``dp_imbalance`` says how much longer the slowest rank works than the mean (cost model of ``model``,
    7B-like by default). With ``tokenizer`` (a local tokenizer directory) ``eos`` compares the EOS id the
    metadata records with the tokenizer's; a mismatch makes ``ok`` false.

    >>> import tempfile, bridgepack
    >>> from bridgepack.data.samples import example_dataset_path
    >>> out = bridgepack.pack(example_dataset_path(), tempfile.mkdtemp(), 1024, bridge_compat=True)
    >>> report = bridgepack.inspect(out.packed_path, dp=2, gbs=8)
    >>> report.ok, report.metadata.status, report.summary()["packs"], report.dp_imbalance["steps"]
    (True, 'consistent', 162, 20)
    """
    for name, value in (("dp", dp), ("gbs", gbs)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise UsageError(f"inspect(): {name} must be a positive integer, got {value!r}")
    simulation = None
    if dp is not None or gbs is not None:
        if dp is None or gbs is None:
            raise UsageError("inspect(): dp and gbs go together")
        cost = CostModel.default() if model is None else CostModel.from_dims(model)
        simulation = SamplerSimulation(dp, gbs, cost)
    found = inspect_packed(
        path,
        metadata=metadata,
        on_block=None if simulation is None else simulation.add,
        tokenizer=tokenizer,
    )
    return found if simulation is None else replace(found, dp_imbalance=simulation.result())


def check_config(
    config: PathLike | None = None,
    overrides: Sequence[str] = (),
    *,
    options: Mapping[str, Any] | None = None,
    doctor: DoctorOptions | None = None,
) -> Report:
    """Check a Megatron-Bridge config (YAML, ``key=value`` overrides, plain options) against every packing
    and long-context rule (``bridgepack doctor``). ``options`` are plain settings (``{"cp": 2, "seq_length":
    8192}``); ``doctor`` what the doctor knows beyond the config (world size, packed data, language, ...).

    >>> import bridgepack
    >>> report = bridgepack.check_config(overrides=["model.context_parallel_size=2", "dataset.seq_length=510",
    ...                                          "model.seq_length=510"])
    >>> report.has_error, [f.id for f in report.findings]
    (True, ['SP011'])
    >>> report.findings[0].fix
    ['model.seq_length=512', 'dataset.seq_length=512']
    """
    loaded = load_config(config, overrides, options=options)
    return check(loaded, doctor)


def compare_curves(
    reference: PathLike,
    *candidates: PathLike,
    profile: str | Profile = "bf16",
    metrics: Sequence[str] | None = None,
) -> list[Comparison]:
    """Compare the loss curves of runs (any log format ``bridgepack curves`` reads) with a reference run, one
    :class:`~bridgepack.curves.Comparison` per candidate and metric (``bridgepack curves compare``).

    >>> import json, pathlib, tempfile, bridgepack
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> def golden(name, values):
    ...     doc = {"lm loss": {"start_step": 1, "end_step": 3, "step_interval": 1,
    ...                        "values": {str(i + 1): v for i, v in enumerate(values)}}}
    ...     (root / name).write_text(json.dumps(doc))
    ...     return root / name
    >>> a, b = golden("a.json", [10.9, 9.8, 9.1]), golden("b.json", [10.9, 9.8, 9.7])
    >>> [(c.metric, c.passed) for c in bridgepack.compare_curves(a, b, profile="bf16")]
    [('lm loss', False)]
    >>> [c.passed for c in bridgepack.compare_curves(a, b, profile="golden")]  # 5%, one step of 3 may fail
    [True]
    """
    chosen = profile if isinstance(profile, Profile) else Profile(profile)
    runs = [read_curves(p) for p in candidates]
    return _compare_curves(read_curves(reference), runs, chosen, metrics=list(metrics) if metrics else None)
