"""Build Megatron-Bridge ``ConfigContainer`` objects and run ``validate()`` on each: the child process of the
``config`` part of ``bridgepack verify --bridge``.

Run as a script, in its own interpreter (``python _bridge_config_child.py REQUEST.json RESULT.json``), so
the imports below never touch the calling process's ``sys.modules``; it imports nothing from bridgepack (and
takes its own directory off ``sys.path``, so no sibling module can shadow a real one).

REQUEST: ``{"bridge_root": DIR | null, "paths": [DIR, ...], "configs": [{"key", "world_size", "raw"}]}``;
``raw`` is a config as nested sections (``model``, ``train``, ``dataset``, ...), the same mapping bridgepack's
doctor reads. RESULT: the Bridge and Megatron-Core versions and files used, the stand-ins installed, and per
config ``outcome`` = ``accepted`` | ``rejected`` (Bridge refused it: ValueError/AssertionError while
building or validating; ``stage`` and ``error`` say where and why) | ``unbuilt`` (this Bridge cannot express
the config: a field or class it lacks) | ``error`` (validate failed for a reason that is no verdict).

Two ways to load Bridge:

* installed (``bridge_root`` null): ``import megatron.bridge.training.config`` as is; nothing is replaced.
* unpacked wheel (``bridge_root`` set, with a Megatron-Core that has ``megatron.training`` on ``paths``):
  Bridge's package ``__init__`` files import the whole model registry (every model family, Hugging Face
  conversion, PEFT layers built on Transformer Engine), none of which building or validating a config
  uses, and which does not import without a GPU stack. So -- the one place bridgepack does this -- the
  packages in :data:`BARE_PACKAGES` are registered without running their ``__init__`` (their modules are
  then imported file by file as ``training/config.py`` asks for them), and, only where missing here:
  ``megatron.energon`` (Energon data loading, a separate distribution) and Megatron-Core's
  ``paged_stash`` (a Triton kernel module, imported by its pipeline schedules) get placeholder modules
  whose classes refuse to be instantiated, and ``typing.override`` (Python 3.12) gets the identity
  decorator of ``typing_extensions``. Every replacement is listed in RESULT's ``stand_ins``.
"""

from __future__ import annotations

import json
import os
import sys
import types
import warnings
from importlib.util import find_spec
from pathlib import Path
from typing import Any

# A script's directory is sys.path[0]; bridgepack's diff modules there must not shadow anything Bridge
# imports.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

#: Packages registered without their ``__init__`` in wheel mode (see the module docstring).
BARE_PACKAGES = (
    "megatron.bridge",
    "megatron.bridge.models",
    "megatron.bridge.models.hf_pretrained",
    "megatron.bridge.models.conversion",
)
#: Names ``training/config.py`` imports from the bare ``megatron.bridge.models``: (module, class).
MODELS_EXPORTS = {
    "GPTModelProvider": "megatron.bridge.models.gpt_provider",
    "T5ModelProvider": "megatron.bridge.models.t5_provider",
}
#: Modules replaced by placeholders when the distribution they need is missing here: module -> needed.
PLACEHOLDERS = {
    "megatron.energon": "megatron.energon",
    "megatron.core.transformer.moe.paged_stash": "triton",
}
#: Exceptions that mean "Bridge refuses this config" (its checks raise ValueError or assert).
REFUSALS = (ValueError, AssertionError)
#: Exceptions while *building* that mean "this Bridge has no such field or class".
CANNOT_EXPRESS = (TypeError, AttributeError, ImportError, KeyError)


def _placeholder_module(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = []

    def attribute(attr: str) -> type:
        if attr.startswith("__"):
            raise AttributeError(attr)

        def refuse(self: Any, *_args: Any, **_kwargs: Any) -> None:
            raise RuntimeError(f"{name}.{attr} is a bridgepack stand-in: not available here")

        return type(attr, (), {"__init__": refuse, "__module__": name})

    module.__getattr__ = attribute  # type: ignore[method-assign]
    return module


def prepare_modules(bridge_root: Path, bare_packages: tuple[str, ...]) -> list[str]:
    """Prepare ``sys.modules`` for importing Bridge's modules file by file from an unpacked wheel: the
    stand-ins (Python 3.12's ``typing.override``, placeholders for what is not installed) and
    ``bare_packages`` registered without their ``__init__``. Returns what was stood in, one line each.

    Also used by the tests' Bridge text peer (loaded by path), so both children stand in the same way."""
    stand_ins: list[str] = []
    # Bridge's package_info appends the git HEAD of the directory it sits in: an unpacked wheel inside some
    # repository would report that repository's commit as Bridge's
    os.environ["NO_VCS_VERSION"] = "1"
    if sys.version_info < (3, 12):
        import typing

        import typing_extensions

        typing.override = typing_extensions.override  # type: ignore[attr-defined]
        stand_ins.append("typing.override (Python 3.12) = typing_extensions.override")
    for name, needed in PLACEHOLDERS.items():
        if find_spec(needed) is None:
            sys.modules[name] = _placeholder_module(name)
            stand_ins.append(f"{name}: placeholder ({needed} is not installed)")
    for name in bare_packages:
        package = types.ModuleType(name)
        package.__path__ = [str(bridge_root.joinpath(*name.split(".")))]
        sys.modules[name] = package
        stand_ins.append(f"{name}: package without its __init__")
    return stand_ins


def load_from_wheel(bridge_root: Path, more_bare: tuple[str, ...] = ()) -> list[str]:
    """Prepare ``sys.modules`` so ``megatron.bridge.training.config`` imports from an unpacked wheel;
    ``more_bare`` are further packages registered without their ``__init__`` (the tests' Megatron-LM vs
    Bridge peer adds ``megatron.bridge.recipes``, whose ``__init__`` imports every model family's recipes)."""
    stand_ins = prepare_modules(bridge_root, (*BARE_PACKAGES, *more_bare))
    models = sys.modules["megatron.bridge.models"]
    for attr, module_name in MODELS_EXPORTS.items():
        __import__(module_name)
        setattr(models, attr, getattr(sys.modules[module_name], attr))
    return stand_ins


def _version(module_name: str) -> str:
    info = sys.modules.get(module_name) or __import__(module_name, fromlist=["__version__"])
    return str(getattr(info, "__version__", "unknown"))


class _Classes:
    """Bridge's own config classes, by the config section they build."""

    def __init__(self) -> None:
        from megatron.bridge.training import config as c

        self.container = c.ConfigContainer
        self.sections: dict[str, Any] = {
            "model": c.GPTModelProvider,
            "train": c.TrainingConfig,
            "optimizer": c.OptimizerConfig,
            "scheduler": c.SchedulerConfig,
            "ddp": c.DistributedDataParallelConfig,
            "dist": c.DistributedInitConfig,
            "logger": c.LoggerConfig,
            "tokenizer": c.TokenizerConfig,
            "checkpoint": c.CheckpointConfig,
        }
        self.datasets: dict[str, Any] = {
            "sft": c.GPTSFTDatasetConfig,
            "sft_in_batch": c.DirectHFSFTDatasetConfig,
        }
        from megatron.bridge.data.packing.config import PackedSequenceSpecs

        self.specs = PackedSequenceSpecs
        self.source = c.HFDatasetSourceConfig

    def dataset(self, body: dict[str, Any]) -> Any:
        body = dict(body)
        kind = body.pop("kind", "sft")
        if isinstance(body.get("offline_packing_specs"), dict):
            body["offline_packing_specs"] = self.specs(**body["offline_packing_specs"])
        if isinstance(body.get("source"), dict):
            body["source"] = self.source(**body["source"])
        return self.datasets[kind](**body)

    @staticmethod
    def peft(body: Any) -> Any:
        """``peft: lora`` (or a mapping of its fields): Bridge's LoRA (layers need Transformer Engine)."""
        from megatron.bridge.peft.lora import LoRA

        return LoRA(**body) if isinstance(body, dict) else LoRA()

    def build(self, raw: dict[str, Any]) -> Any:
        unknown = sorted(set(raw) - set(self.sections) - {"dataset", "peft"})
        if unknown:
            raise KeyError(f"no Bridge class is mapped for section(s) {', '.join(unknown)}")
        kwargs = {name: cls(**raw.get(name, {})) for name, cls in self.sections.items()}
        kwargs["dataset"] = self.dataset(raw.get("dataset", {}))
        if raw.get("peft") is not None:
            kwargs["peft"] = self.peft(raw["peft"])
        return self.container(**kwargs)


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def _run_one(classes: _Classes, config: dict[str, Any]) -> dict[str, Any]:
    saved = os.environ.get("WORLD_SIZE")
    os.environ["WORLD_SIZE"] = str(config["world_size"])
    try:
        try:
            container = classes.build(config["raw"])
        except REFUSALS as exc:
            return {"outcome": "rejected", "stage": "build", "error": _describe(exc)}
        except CANNOT_EXPRESS as exc:
            return {"outcome": "unbuilt", "stage": "build", "error": _describe(exc)}
        try:
            container.validate()
        except REFUSALS as exc:
            return {"outcome": "rejected", "stage": "validate", "error": _describe(exc)}
        except Exception as exc:  # anything else is reported as an error, not as a verdict
            return {"outcome": "error", "stage": "validate", "error": _describe(exc)}
        return {"outcome": "accepted", "stage": "validate", "error": ""}
    finally:
        if saved is None:
            os.environ.pop("WORLD_SIZE", None)
        else:
            os.environ["WORLD_SIZE"] = saved


def main(request_path: str, result_path: str) -> None:
    request = json.loads(Path(request_path).read_text())
    for path in reversed(request["paths"]):
        sys.path.insert(0, path)
    warnings.simplefilter("ignore")
    stand_ins: list[str] = []
    if request["bridge_root"] is not None:
        stand_ins = load_from_wheel(Path(request["bridge_root"]))
    classes = _Classes()
    results = {config["key"]: _run_one(classes, config) for config in request["configs"]}
    import megatron.bridge.training.config as bridge_config
    import megatron.core

    report = {
        "bridge_version": _version("megatron.bridge.package_info"),
        "bridge_file": bridge_config.__file__,
        "megatron_core_version": _version("megatron.core.package_info"),
        "megatron_core_file": megatron.core.__file__,
        "python": sys.version.split()[0],
        "stand_ins": stand_ins,
        "results": results,
    }
    Path(result_path).write_text(json.dumps(report, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
