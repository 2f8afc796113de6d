"""Load a :class:`ConfigView` from a Bridge YAML, Megatron-LM flags, plain options and ``a.b=c`` overrides.

Layers, lowest precedence first (a later layer replaces a value of an earlier one, as run_recipe applies
its overrides on top of the recipe)::

    1. Bridge YAML (a --dry-run dump with _target_ keys, a run directory's config, or a partial override file)
    2. Megatron-LM flags (a model_config.yaml's MODEL_ARGS and/or --mlm-args), through bridgepack.translate
    3. the command line: plain options (--cp 2 --mbs 1 ...) and then KEY=VALUE overrides (OmegaConf dotlist)

Two different values for one key *within* a layer are a contradiction (reported, not silently resolved).
Problems found while reading (unknown section, misspelled field, wrong type, contradiction, names of both
config eras) are collected as :class:`LoadProblem` and reported by the rule table's loader rules.
"""

from __future__ import annotations

import difflib
import os
import re
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from bridgepack._bridge_keys import (
    AVG_COLL,
    CP,
    DATA_SEQ,
    EP,
    GBS,
    GRAPH_IMPL,
    IN_BATCH,
    MBS,
    MODEL_SEQ,
    MTP,
    OFFLINE,
    PACK_SIZE,
    PAD_CU,
    PAD_MULT,
    PAD_TO_MAX,
    PER_TOKEN,
    PP,
    SP,
    SPECS,
    TP,
)
from bridgepack._ranges import COUNT0, RANKS, SIZE, Range
from bridgepack._typed import Mismatch, conform, field_types
from bridgepack._yaml import load_yaml
from bridgepack.doctor import _bridge_fields as bf
from bridgepack.doctor._fields import KNOWN_FIELDS
from bridgepack.doctor._view import SECTION_CLASSES, ConfigView, DatasetKind, DatasetView, PackedSpecsView
from bridgepack.errors import InputError, UsageError, shown
from bridgepack.findings import Location
from bridgepack.translate import Translation

#: v0.5 name -> v0.6 name inside ``dataset`` (bridge-format §1).
LEGACY_DATASET_NAMES: Mapping[str, str] = {
    "packed_sequence_specs": "offline_packing_specs",
    "pack_sequences_in_batch": "enable_in_batch_packing",
}
#: Names that exist only from v0.6 on (bridge-format §1).
V06_DATASET_NAMES = frozenset(
    {
        "enable_offline_packing",
        "offline_packing_specs",
        "enable_in_batch_packing",
        "defer_in_batch_packing_to_step",
        "in_batch_packing_pad_to_multiple_of",
    }
)
#: The v0.5 module of PackedSequenceSpecs (a ``_target_`` naming it marks a v0.5 dump).
LEGACY_SPECS_MODULE = "megatron.bridge.data.datasets.packed_sequence"

_DATASET_KINDS: Mapping[str, DatasetKind] = {
    "GPTSFTDatasetConfig": "sft",
    "FinetuningDatasetConfig": "sft",
    "DirectHFSFTDatasetConfig": "sft_in_batch",
    "EnergonDatasetConfig": "sft_in_batch",
    "MockVLMSFTDatasetConfig": "sft_in_batch",
    "GPTDatasetConfig": "pretrain",
    "MockGPTDatasetConfig": "pretrain",
    "GPTFIMDatasetConfig": "pretrain",
}

#: Sections whose known-field list (``_fields.KNOWN_FIELDS``, for "did you mean") is complete: any other
#: name there is reported, even without a close match.
_COMPLETE_FIELD_LISTS = frozenset({SPECS})

#: Plain CLI option -> the Bridge keys it sets (``bridgepack doctor --cp 2 --mbs 1 ...``).
PLAIN_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "tp": (TP,),
    "pp": (PP,),
    "cp": (CP,),
    "ep": (EP,),
    "sequence_parallel": (SP,),
    "mbs": (MBS,),
    "gbs": (GBS,),
    "seq_length": (DATA_SEQ, MODEL_SEQ),
    "pack_size": (OFFLINE, PACK_SIZE),
    "pad_seq_to_mult": (PAD_MULT,),
    "pad_cu_seqlens": (PAD_CU,),
    "pad_to_max_length": (PAD_TO_MAX,),
    "in_batch_packing": (IN_BATCH,),
    "per_token_loss": (PER_TOKEN,),
    "average_in_collective": (AVG_COLL,),
    "mtp_num_layers": (MTP,),
    "cuda_graph_impl": (GRAPH_IMPL,),
}


#: Numeric fields whose every value outside the range breaks Bridge (a parallel size of 0 divides by zero,
#: a negative batch never runs): reported as an ``out-of-range`` problem (SP106) and read as the default.
#: Fields whose special values mean something (``packed_sequence_size: -1``, ``pad_seq_to_mult``) have
#: their own rules (SP004, SP021).
FIELD_RANGES: dict[str, Range] = {
    "model.tensor_model_parallel_size": RANKS,
    "model.pipeline_model_parallel_size": RANKS,
    "model.context_parallel_size": RANKS,
    "model.expert_model_parallel_size": RANKS,
    "model.seq_length": SIZE,
    "model.mtp_num_layers": COUNT0,
    "dataset.seq_length": SIZE,
    "dataset.in_batch_packing_pad_to_multiple_of": SIZE,
    "train.micro_batch_size": SIZE,
    "train.global_batch_size": SIZE,
}
NOT_A_NUMBER = "not-a-number"


@dataclass
class LoadProblem:
    """Something wrong with the input itself: ``kind`` is one of ``unknown-section``, ``unknown-field``,
    ``wrong-type``, ``out-of-range``, ``not-a-number``, ``duplicate-key``, ``contradiction``, ``mixed-era``;
    ``key`` the dotted field; ``detail`` the specifics."""

    kind: str
    key: str
    detail: str
    suggestion: str | None = None
    #: ``file:line:col`` where the key was written, when it came from a YAML file.
    where: str | None = None


@dataclass
class LoadedConfig:
    view: ConfigView
    problems: list[LoadProblem] = field(default_factory=list)
    #: The merged config as plain data (all layers applied), for rules that read raw names.
    raw: dict[str, Any] = field(default_factory=dict)
    #: The file name, when a YAML was read (used in messages).
    source: str | None = None
    #: Where the YAML file wrote each key whose value is still the file's (a later layer's key is not here),
    #: by dotted key; <= v0.5 names are also found under the v0.6 name they are read as.
    locations: dict[str, Location] = field(default_factory=dict)
    #: The Megatron-LM flags no Bridge key expresses (``{"--sft": True, "--fp8-format": "hybrid"}``): the
    #: known-defect atlas reads them (``_defect_facts``).
    mlm_flags: dict[str, Any] = field(default_factory=dict)


class _Delete:
    """The value of a ``~key`` override: remove the key (Hydra's deletion syntax)."""

    def __repr__(self) -> str:
        return "<deleted>"


DELETE = _Delete()


#: One segment of an override key: a config field name, or a list index.
_KEY_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+", re.ASCII)


def _check_key(item: str, key: str) -> None:
    """Refuse a key that is not a dotted path of field names (``model..seq_length``, ``.model.x``,
    ``--model.x``, ``model.x ``): OmegaConf reads some of them as another key (an empty section, a field
    named ``--model``), so the override would be ignored, or applied somewhere else, without a word."""
    bad = next((part for part in key.split(".") if not _KEY_SEGMENT.fullmatch(part)), None)
    if bad is not None:
        what = "an empty segment" if not bad else f"segment {shown(bad)}"
        raise UsageError(
            f"override {shown(item)}: key {shown(key)} is not a dotted path of field names ({what}); "
            "e.g. model.context_parallel_size=2"
        )


def parse_override(item: str) -> tuple[str, Any]:
    """Parse one override as run_recipe does: ``a.b=c`` (values in the OmegaConf dotlist grammar),
    ``+a.b=c`` and ``++a.b=c`` (add / force-add: the same here), ``~a.b`` or ``~a.b=c`` (delete: the value
    is :data:`DELETE`). The key must be a dotted path of field names (:func:`_check_key`)."""
    if item.startswith("~"):
        key = item[1:].split("=", 1)[0]
        if not key.strip():
            raise UsageError(f"override {item!r}: expected ~KEY")
        _check_key(item, key)
        return key, DELETE
    text = item[2:] if item.startswith("++") else item[1:] if item.startswith("+") else item
    if "=" not in text or not text.split("=", 1)[0].strip():
        raise UsageError(f"override {item!r}: expected KEY=VALUE, e.g. model.context_parallel_size=2")
    _check_key(item, text.split("=", 1)[0])
    try:
        parsed = OmegaConf.from_dotlist([text])
        key = text.split("=", 1)[0].strip()
        value = OmegaConf.to_container(parsed, resolve=False)
        for part in key.split("."):
            assert isinstance(value, dict)
            value = value[part]
    except Exception as exc:  # OmegaConf's grammar, its YAML value parser and the lookup all raise their own
        raise UsageError(f"override {shown(item)}: cannot parse ({exc.__class__.__name__})") from None
    return key, value


def plain_option_overrides(options: Mapping[str, Any]) -> list[tuple[str, Any, str]]:
    """Turn plain options (``{"cp": 2, "pack_size": 4096}``) into ``(key, value, source)`` overrides."""
    out: list[tuple[str, Any, str]] = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        keys = PLAIN_OPTIONS.get(name)
        if keys is None:
            raise UsageError(f"unknown plain option {name!r}")
        source = "--" + name.replace("_", "-")
        if name == "pack_size":
            out += [(keys[0], True, source), (keys[1], value, source)]
        else:
            out += [(key, value, source) for key in keys]
    return out


#: The name Bridge saves the full config under in every checkpoint (training/utils/checkpoint_utils.py).
RUN_CONFIG_NAME = "run_config.yaml"


def resolve_config_path(path: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """A config file, or for a checkpoint / run directory its ``run_config.yaml`` (the newest ``iter_*``)."""
    directory = Path(path)
    if not directory.is_dir():
        return path
    direct = directory / RUN_CONFIG_NAME
    if direct.is_file():
        return direct
    found = sorted(directory.glob(f"iter_*/{RUN_CONFIG_NAME}"))
    if not found:
        raise InputError(
            f"{os.fspath(path)}: a directory without {RUN_CONFIG_NAME} (nor iter_*/{RUN_CONFIG_NAME})"
        )
    return found[-1]


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: Sequence[str] = (),
    *,
    mlm: Translation | None = None,
    options: Mapping[str, Any] | None = None,
    dataset_kind: DatasetKind | None = None,
) -> LoadedConfig:
    """Read every input layer and return the typed view plus the problems found on the way."""
    problems: list[LoadProblem] = []
    document: Any = {}
    positions: dict[str, tuple[int, int]] = {}
    source = None
    if path is not None:
        path = resolve_config_path(path)
        source = os.fspath(path)
        repeated: list[tuple[str, int, int]] = []
        columns: dict[str, int] = {}
        document, lines = load_yaml(path, repeated, columns=columns)
        positions = {key: (line, columns[key]) for key, line in lines.items()}
        problems += [
            LoadProblem("duplicate-key", key, f"given twice (lines {first} and {line}); YAML keeps the last")
            for key, line, first in repeated
        ]
        if document is None:
            document = {}
        if not isinstance(document, dict):
            raise InputError(
                f"{source}: expected a mapping of config sections, found {type(document).__name__}"
            )
        document, positions = _unwrap_container(document, positions)

    cli_layer = plain_option_overrides(options or {}) + [(*parse_override(o), o) for o in overrides]
    mlm_layer: list[tuple[str, Any, str]] = []
    if mlm is not None:
        mlm_layer = [(key, value, mlm.origin.get(key, "MLM flags")) for key, value in mlm.overrides.items()]
        problems += [LoadProblem("contradiction", line.split(":", 1)[0], line) for line in mlm.conflicts]
    problems += _contradictions(cli_layer)

    try:
        merged = OmegaConf.create(document)
        for layer in (mlm_layer, cli_layer):
            for key, value, _source in layer:
                set_key(merged, key, value)
        raw = to_plain(merged)
    except OmegaConfBaseException as exc:
        raise InputError(
            f"{source or 'config'}: cannot merge the overrides ({str(exc).splitlines()[0]})"
        ) from None
    view = _build_view(raw, problems)
    written = {key: Location(source, *at) for key, at in _legacy_aliases(positions).items()} if source else {}
    locations = replaced_by([key for key, _, _ in (*mlm_layer, *cli_layer)], written)
    for problem in problems:  # a duplicate is in the file whatever a later layer sets
        at = (written if problem.kind == "duplicate-key" else locations).get(problem.key)
        if at is not None and problem.kind != "contradiction":
            problem.where = str(at)
    given = {key: given_as for key, _, given_as in (*mlm_layer, *cli_layer)}
    for problem in problems:  # no rule can judge a count that is not a number: unusable input, exit 2
        if problem.kind == NOT_A_NUMBER:
            error = InputError if problem.where else UsageError
            typed = given.get(problem.key)
            where = problem.where or (
                f"override {shown(typed)}" if typed and "=" in typed else typed or "config"
            )
            raise error(f"{where}: field '{problem.key}': {problem.detail}")
    if dataset_kind is not None:
        view.dataset.kind = dataset_kind
    flags = dict(_untranslated_flag(item) for item in (mlm.untranslated if mlm is not None else ()))
    return LoadedConfig(
        view=view, problems=problems, raw=raw, source=source, locations=locations, mlm_flags=flags
    )


def _untranslated_flag(item: str) -> tuple[str, Any]:
    """``"--fp8-format hybrid"`` -> ``("--fp8-format", "hybrid")``; ``"--sft"`` -> ``("--sft", True)``."""
    flag, _, value = item.partition(" ")
    return flag, value or True


def replaced_by(keys: Sequence[str], locations: Mapping[str, Location]) -> dict[str, Location]:
    """``locations`` without the keys a later layer sets (nor what lies under them): the value the rules
    read there is no longer the file's."""
    prefixes = tuple(f"{key}." for key in keys)
    gone = set(keys)
    return {k: at for k, at in locations.items() if k not in gone and not k.startswith(prefixes)}


def _legacy_aliases(positions: Mapping[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """``positions`` plus each <= v0.5 dataset name under the v0.6 name it is read as (bridge-format §1):
    a rule about ``dataset.offline_packing_specs.pad_seq_to_mult`` points at ``packed_sequence_specs``'s
    line in a v0.5 file, and ``enable_offline_packing`` (implied there by the specs) at the specs."""
    out = dict(positions)
    for old, new in LEGACY_DATASET_NAMES.items():
        old_key, new_key = f"dataset.{old}", f"dataset.{new}"
        for key, at in positions.items():
            if key == old_key or key.startswith(old_key + "."):
                out.setdefault(new_key + key[len(old_key) :], at)
    specs = positions.get("dataset.packed_sequence_specs")
    if specs is not None:
        out.setdefault(OFFLINE, specs)
    return out


#: The key Bridge's performance scripts write around a whole config (``ConfigContainer: {model: ...}``).
_CONTAINER_WRAPPER = "ConfigContainer"


def _unwrap_container(
    document: dict[Any, Any], positions: dict[str, tuple[int, int]]
) -> tuple[Any, dict[str, tuple[int, int]]]:
    """A YAML whose only top-level key is ``ConfigContainer`` holds the config one level down: read that,
    with the key positions re-keyed to the sections inside it."""
    if list(document) != [_CONTAINER_WRAPPER] or not isinstance(document[_CONTAINER_WRAPPER], dict):
        return document, positions
    prefix = _CONTAINER_WRAPPER + "."
    return document[_CONTAINER_WRAPPER], {
        key[len(prefix) :]: at for key, at in positions.items() if key.startswith(prefix)
    }


def set_key(cfg: DictConfig, key: str, value: Any) -> None:
    """Apply one parsed override to ``cfg`` (creating missing sections; :data:`DELETE` removes the key)."""
    if value is not DELETE:
        OmegaConf.update(cfg, key, value, merge=True, force_add=True)
        return
    *parents, last = key.split(".")
    node: Any = cfg
    for part in parents:
        node = node.get(part) if isinstance(node, DictConfig) else None
    if isinstance(node, DictConfig) and last in node:
        del node[last]


def to_plain(cfg: DictConfig) -> dict[str, Any]:
    """An OmegaConf mapping as plain data, interpolations (``${...}``) kept as written."""
    raw = OmegaConf.to_container(cfg, resolve=False)
    return {str(k): v for k, v in raw.items()} if isinstance(raw, dict) else {}


def _contradictions(layer: Sequence[tuple[str, Any, str]]) -> list[LoadProblem]:
    seen: dict[str, tuple[Any, str]] = {}
    out: list[LoadProblem] = []
    for key, value, source in layer:
        if key in seen and seen[key][0] != value:
            first_value, first_source = seen[key]
            out.append(
                LoadProblem(
                    "contradiction",
                    key,
                    f"{key}: {first_source} sets {first_value!r}, {source} sets {value!r}",
                )
            )
        seen[key] = (value, source)
    return out


def _closest(name: str, known: frozenset[str] | set[str]) -> str | None:
    matches = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
    return matches[0] if matches else None


#: Suffixes of section names in old Bridge/NeMo example YAMLs (``model_config:``, ``train_cfg:``).
_OLD_SECTION_SUFFIXES = ("_config", "_cfg")


def _closest_section(name: str) -> str | None:
    """The ConfigContainer section ``name`` most likely means: ``model_config`` -> ``model`` (old-style
    example YAMLs), else a close spelling (``modle`` -> ``model``); ``None`` when nothing is close."""
    for suffix in _OLD_SECTION_SUFFIXES:
        stem = name[: -len(suffix)] if name.endswith(suffix) else None
        if stem:
            found = stem if stem in bf.CONTAINER_SECTIONS else _closest(stem, bf.CONTAINER_SECTIONS)
            if found is not None:
                return found
    return _closest(name, bf.CONTAINER_SECTIONS)


def _build_view(raw: dict[str, Any], problems: list[LoadProblem]) -> ConfigView:
    view = ConfigView()
    for section, body in raw.items():
        if not isinstance(section, str):
            problems.append(LoadProblem("unknown-section", str(section), "not a section name"))
            continue
        if section.startswith("_"):
            continue
        if section not in bf.CONTAINER_SECTIONS:
            problems.append(
                LoadProblem(
                    "unknown-section",
                    section,
                    "not a ConfigContainer section",
                    _closest_section(section),
                )
            )
            continue
        if section == "mixed_precision":
            view.mixed_precision = body if isinstance(body, str) or body is None else "custom"
            continue
        if section == "peft":
            view.peft = body is not None
            continue
        cls = SECTION_CLASSES.get(section)
        if cls is None or body is None:
            continue
        if not isinstance(body, dict):
            problems.append(LoadProblem("wrong-type", section, f"expected a mapping, found {body!r}"))
            continue
        if section == "dataset":
            body = _dataset_era(body, view, problems)
        setattr(view, section, _read_section(section, body, cls, problems))
    view.dataset.kind = _dataset_kind(view.dataset, raw.get("dataset"))
    return view


def _dataset_era(body: dict[str, Any], view: ConfigView, problems: list[LoadProblem]) -> dict[str, Any]:
    """Map <= v0.5 dataset names to v0.6 ones and record which era the config is written in."""
    legacy = {k for k in LEGACY_DATASET_NAMES if k in body}
    specs = body.get("packed_sequence_specs") or body.get("offline_packing_specs")
    if isinstance(specs, dict) and str(specs.get("_target_", "")).startswith(LEGACY_SPECS_MODULE):
        legacy.add("packed_sequence_specs._target_")
    modern = {k for k in V06_DATASET_NAMES if k in body}
    if legacy and modern:
        view.era = "mixed"
        problems.append(
            LoadProblem(
                "mixed-era", "dataset", f"v0.6 names {sorted(modern)} and <= v0.5 names {sorted(legacy)}"
            )
        )
    elif legacy:
        view.era = "<=v0.5"
    elif modern:
        view.era = "v0.6"
    body = dict(body)
    old_specs = body.pop("packed_sequence_specs", None)
    if old_specs is not None and body.get("offline_packing_specs") is None:
        body["offline_packing_specs"] = old_specs
        body.setdefault("enable_offline_packing", True)  # v0.5: setting the specs was the switch
    old_in_batch = body.pop("pack_sequences_in_batch", None)
    if old_in_batch is not None:
        body.setdefault("enable_in_batch_packing", old_in_batch)
    return body


def _read_section(path: str, body: dict[str, Any], cls: type, problems: list[LoadProblem]) -> Any:
    hints = field_types(cls)
    names = set(hints)
    known = KNOWN_FIELDS.get(path, frozenset()) | names
    values: dict[str, Any] = {}
    for name, value in body.items():
        key = f"{path}.{name}"
        if name == "_target_":
            if "target" in names:
                values["target"] = str(value)
            continue
        if not isinstance(name, str) or name.startswith("_"):
            continue
        if name not in names or name in {"target", "kind"}:
            if name not in known:
                suggestion = _closest(name, known)
                if suggestion is not None or path in _COMPLETE_FIELD_LISTS:
                    problems.append(
                        LoadProblem(
                            "unknown-field",
                            key,
                            f"not a field of {path}",
                            suggestion and f"{path}.{suggestion}",
                        )
                    )
            continue
        if name == "offline_packing_specs":
            values[name] = None if value is None else _read_specs(key, value, problems)
            continue
        if name == "dataset_kwargs":
            if value is None:
                values[name] = {}
            elif isinstance(value, dict):
                values[name] = value
            else:
                problems.append(LoadProblem("wrong-type", key, f"expected a mapping, found {value!r}"))
            continue
        try:
            ok, coerced = True, conform(value, hints[name], numbers_as_text=True)
        except Mismatch:
            ok, coerced = False, value
        expected = f"expected {_type_name(hints[name])}, found {shown(value)}"
        out_of_range = range_problem(key, coerced) if ok else None
        if out_of_range is not None:
            problems.append(LoadProblem("out-of-range", key, out_of_range))
        elif ok:
            values[name] = coerced
        elif (
            _wants_number(hints[name])
            and isinstance(value, (str, bool, list, dict))
            and not _interpolation(value)
        ):
            problems.append(LoadProblem(NOT_A_NUMBER, key, expected))
        else:
            problems.append(LoadProblem("wrong-type", key, expected))
    return cls(**values)


def _read_specs(key: str, value: Any, problems: list[LoadProblem]) -> PackedSpecsView | None:
    if not isinstance(value, dict):
        problems.append(
            LoadProblem("wrong-type", key, f"expected a mapping (PackedSequenceSpecs), found {value!r}")
        )
        return None
    specs: PackedSpecsView = _read_section(key, value, PackedSpecsView, problems)
    return specs


def range_problem(key: str, value: Any) -> str | None:
    """What is wrong with ``value`` for ``key`` by :data:`FIELD_RANGES`, or None (None, ``${...}`` pass)."""
    limits = FIELD_RANGES.get(key)
    if limits is None or value is None or _interpolation(value) or limits.contains(value):
        return None
    return f"expected {limits.expected()}, found {shown(value)}"


def _wants_number(hint: Any) -> bool:
    """A field that holds a number and nothing else (``int``, ``float | None``; not ``str | int``)."""
    options = set(typing.get_args(hint) or (hint,)) - {type(None)}
    return bool(options) and options <= {int, float}


def _interpolation(value: Any) -> bool:
    """``${model.seq_length}``: OmegaConf resolves it when the run starts; its value is not known here."""
    return isinstance(value, str) and "${" in value


def _type_name(hint: Any) -> str:
    names = [getattr(a, "__name__", str(a)) for a in (typing.get_args(hint) or (hint,))]
    return " or ".join("null" if n == "NoneType" else n for n in names)


def _dataset_kind(dataset: DatasetView, raw: Any) -> DatasetKind:
    if dataset.target:
        cls_name = dataset.target.rsplit(".", 1)[-1]
        if cls_name in _DATASET_KINDS:
            return _DATASET_KINDS[cls_name]
    body = raw if isinstance(raw, dict) else {}
    if (
        dataset.enable_in_batch_packing
        or dataset.defer_in_batch_packing_to_step
        or dataset.packing_buffer_size
    ):
        return "sft_in_batch"
    if dataset.enable_offline_packing or dataset.offline_packing_specs is not None or "dataset_root" in body:
        return "sft"
    if any(k in body for k in ("blend", "data_path", "mock", "split", "blend_per_split")):
        return "pretrain"
    return "unknown"
