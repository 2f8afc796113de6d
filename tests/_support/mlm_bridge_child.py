"""Megatron-LM's and Megatron-Bridge's own config resolution, side by side: the child of ``mlm_bridge.py``.

Run as ``python mlm_bridge_child.py BRIDGE_ROOT MCORE_ROOT`` with the unpacked Bridge 0.6.2 and Megatron-Core
0.19.2 wheels (the latter ships ``megatron/training``, Megatron-LM's ``arguments.py`` and ``training.py``). It
reads one JSON request per line on stdin and answers one JSON line on stdout (what the frameworks print
is dropped, their warnings go to stderr). A request holds many cases; each case names a side:

* ``mlm``: ``argv`` (``pretrain_gpt.py``'s flags) -> Megatron-LM's own ``parse_args`` and ``validate_args``
  (with ``pretrain_gpt.py``'s ``args_defaults``), then the objects its training builds from the args:
  ``core_transformer_config_from_args``, ``get_megatron_optimizer_config``, ``get_megatron_ddp_config`` and
  ``get_optimizer_param_scheduler``;
* ``bridge``: ``recipe`` + ``overrides`` (argv words, after the shell) -> the recipe function, Bridge's
  ``process_config_with_overrides`` (Hydra's parser, as ``scripts/training/run_recipe.py`` applies them),
  run_recipe's ``model.seq_length = dataset.seq_length``, ``runtime_config_update`` (the mixed-precision
  preset's ``setup``, ``finalize()`` of every section, ``validate()``) and Bridge's ``_get_scheduler``.

Both answer the same *view*: every field of the Megatron-Core ``TransformerConfig``, ``OptimizerConfig`` and
``DistributedDataParallelConfig`` they built (``model.*``, ``optimizer.*``, ``ddp.*``), the scheduler's inputs
and its LR and weight decay at sampled iterations (``schedule.*``), and the training loop, data, seed and
tokenizer values (``train.*``, ``dataset.*``, ...). A refusal (Megatron-LM's argparse exit or assertion,
Bridge's ValueError/AssertionError) is answered as ``{"refused": "..."}``.

Stand-ins, none in the config logic: the config child's (``bridgepack.verify._bridge_config_child``:
packages registered without their ``__init__``, placeholders for Energon and a Triton kernel module,
Python 3.12's ``typing.override``), plus ``megatron.bridge.recipes``, ``.recipes.gpt`` and
``.recipes.gpt.h100`` registered bare (their ``__init__`` imports every model family's recipes); an
optimizer that is only a list of parameter groups (the scheduler reads and writes ``lr`` and
``weight_decay`` there); the GPU architecture ``validate_args`` asks for its environment checks, answered
as an H100's (with ``CUDA_DEVICE_MAX_CONNECTIONS=1``, as the functional tests set); the argument help
texts read once per config class, not per parse (:func:`_remember_help_texts`). ``pretrain_gpt.py``
(not in the wheel) is restated in two facts: ``args_defaults={'tokenizer_type': 'GPT2BPETokenizer'}`` and
its dataset config (``core_gpt_dataset_config_from_args``: ``random_seed=args.seed``,
``split=args.split``, the blend of ``get_blend_and_blend_per_split``, ...).
"""

from __future__ import annotations

import dataclasses
import enum
import gc
import json
import os
import sys
import traceback
import types
import warnings
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path
from typing import Any

if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

#: Bridge packages whose ``__init__`` imports what a GPT recipe does not need (every model family's recipes).
RECIPE_PACKAGES = (
    "megatron.bridge.recipes",
    "megatron.bridge.recipes.gpt",
    "megatron.bridge.recipes.gpt.h100",
)
#: Bridge recipe name -> (module, function) of the recipes the tests resolve.
RECIPES = {
    "vanilla_gpt_pretrain_config": (
        "megatron.bridge.recipes.gpt.h100.vanilla_gpt",
        "vanilla_gpt_pretrain_1gpu_h100_bf16_config",
    ),
}
#: The GPU architecture validate_args is told (Hopper: the functional tests' dgx_h100).
DEVICE_ARCH = 9
#: Iterations at which the LR and weight-decay schedules are read (plus warmup and decay edges per case).
SAMPLED_ITERATIONS = (0, 1, 2, 3, 10, 50, 99, 100, 1000)


def _config_child() -> types.ModuleType:
    """bridgepack's Bridge config child, loaded by path (its stand-ins and wheel loading are the ones
    used)."""
    spec = spec_from_file_location(
        "_bridgepack_bridge_config_child",
        Path(os.environ["BRIDGEPACK_SRC"]) / "bridgepack" / "verify" / "_bridge_config_child.py",
    )
    assert spec is not None and spec.loader is not None
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plain(value: Any) -> Any:
    """A JSON value for a config value: dtypes and enums by name, functions by name, tuples as lists."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if callable(value) and hasattr(value, "__name__"):
        return f"<function {value.__name__}>"
    return str(value)


def dataclass_view(prefix: str, obj: Any, cls: type) -> dict[str, Any]:
    """Every field of ``cls`` (a Megatron-Core config class) as ``prefix.field`` -> value on ``obj``.

    ``model.add_qkv_bias`` is what the attention layer builds: a QKV bias when ``add_bias_linear or
    add_qkv_bias`` (Megatron-LM copies --add-qkv-bias from the linear bias, Bridge leaves it False)."""
    view = {f"{prefix}.{f.name}": plain(getattr(obj, f.name, None)) for f in dataclasses.fields(cls)}
    if prefix == "model":
        view["model.add_qkv_bias"] = bool(obj.add_qkv_bias or obj.add_bias_linear)
    return view


class ParamGroups:
    """What OptimizerParamScheduler touches of an optimizer: its parameter groups."""

    def __init__(self) -> None:
        self.param_groups: list[dict[str, Any]] = [{"params": [], "lr_mult": 1.0, "wd_mult": 1.0}]


def schedule_view(scheduler: Any, global_batch_size: int, train_iters: int | None) -> dict[str, Any]:
    """The scheduler's inputs, and its LR and weight decay at the sampled iterations (a step is a sample)."""
    view = {
        f"schedule.{name}": plain(getattr(scheduler, name, None))
        for name in (
            "init_lr",
            "max_lr",
            "min_lr",
            "lr_warmup_steps",
            "lr_decay_steps",
            "lr_decay_style",
            "start_wd",
            "end_wd",
            "wd_incr_steps",
            "wd_incr_style",
            "wsd_decay_steps",
            "lr_wsd_decay_style",
            "use_checkpoint_opt_param_scheduler",
            "override_opt_param_scheduler",
        )
    }
    warmup = int(scheduler.lr_warmup_steps) // global_batch_size
    decay = int(scheduler.lr_decay_steps) // global_batch_size
    its = sorted({*SAMPLED_ITERATIONS, warmup - 1, warmup, warmup + 1, decay // 2, decay, train_iters or 0})
    for it in (i for i in its if i >= 0):
        scheduler.num_steps = it * global_batch_size
        view[f"schedule.lr@{it}"] = scheduler.get_lr({"lr_mult": 1.0})
        view[f"schedule.wd@{it}"] = scheduler.get_wd()
    return view


def _remember_help_texts(factory: type) -> None:
    """Read each config class's field docstrings once, not on every ``parse_args``.

    Megatron-LM builds its parser anew per call and reads the help texts of ~130 config classes from their
    source (``inspect.getsource`` + ``ast.parse``): 90% of a resolution's time, and no parsed value."""
    read = factory._get_field_docstrings
    seen: dict[type, dict[str, str]] = {}

    def remembered(self: Any, cls: type) -> dict[str, str]:
        if cls not in seen:
            seen[cls] = read(self, cls)
        return dict(seen[cls])

    factory._get_field_docstrings = remembered


class Peer:
    """Both frameworks' modules, imported once."""

    def __init__(self) -> None:
        from megatron.bridge.training import optim
        from megatron.bridge.training.config import runtime_config_update
        from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides
        from megatron.core.distributed import DistributedDataParallelConfig
        from megatron.core.optimizer import OptimizerConfig
        from megatron.core.transformer import TransformerConfig
        from megatron.training import argument_utils, arguments, global_vars, training
        from megatron.training.utils import get_blend_and_blend_per_split

        # validate_args asks the GPU's architecture (to check CUDA_DEVICE_MAX_CONNECTIONS and stream
        # priorities, no config value): answered as the functional tests' H100 (9); no GPU here
        arguments.get_device_arch_version = lambda: DEVICE_ARCH
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"  # as the functional tests' ENV_VARS set it
        _remember_help_texts(argument_utils.ArgumentGroupFactory)
        self.arguments, self.global_vars, self.training = arguments, global_vars, training
        self.blend = get_blend_and_blend_per_split
        self.classes = {
            "model": TransformerConfig,
            "optimizer": OptimizerConfig,
            "ddp": DistributedDataParallelConfig,
        }
        self.optim, self.runtime_config_update = optim, runtime_config_update
        self.process_overrides = process_config_with_overrides

    # -- Megatron-LM ------------------------------------------------------------------------------------
    def mlm(self, case: dict[str, Any]) -> dict[str, Any]:
        os.environ["WORLD_SIZE"], os.environ["RANK"] = str(case.get("world_size", 1)), "0"
        sys.argv = ["pretrain_gpt.py", *case["argv"]]
        try:
            args = self.arguments.parse_args()
            self.arguments.validate_args(args, {"tokenizer_type": "GPT2BPETokenizer"})  # pretrain_gpt.py's
            model = self.arguments.core_transformer_config_from_args(args)
        except SystemExit as exc:
            return {"refused": f"argparse exit {exc.code}"}
        except (AssertionError, ValueError) as exc:
            return {"refused": f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"}
        self.global_vars.set_args(args)
        optimizer, _ = self.training.get_megatron_optimizer_config(args)
        ddp = self.training.get_megatron_ddp_config(args)
        scheduler = self.training.get_optimizer_param_scheduler(ParamGroups())
        blend, blend_per_split = self.blend(args)
        view = {
            **dataclass_view("model", model, self.classes["model"]),
            **dataclass_view("optimizer", optimizer, self.classes["optimizer"]),
            **dataclass_view("ddp", ddp, self.classes["ddp"]),
            **schedule_view(scheduler, args.global_batch_size, args.train_iters),
            # what GPTModel takes beside its TransformerConfig (gpt_builders.py)
            "gpt.position_embedding_type": args.position_embedding_type,
            "gpt.rotary_percent": args.rotary_percent,
            "gpt.rotary_base": args.rotary_base,
            "gpt.seq_len_interpolation_factor": args.rotary_seq_len_interpolation_factor,
            "gpt.share_embeddings_and_output_weights": not args.untie_embeddings_and_output_weights,
            "gpt.make_vocab_size_divisible_by": args.make_vocab_size_divisible_by,
            "gpt.seq_length": args.seq_length,
            # pretrain_gpt.py's core_gpt_dataset_config_from_args
            "dataset.random_seed": args.seed,
            "dataset.sequence_length": args.seq_length,
            "dataset.blend": plain(blend),
            "dataset.blend_per_split": plain(blend_per_split),
            "dataset.split": args.split if blend is not None else None,
            "dataset.mock": blend is None and blend_per_split is None,
            "dataset.path_to_cache": args.data_cache_path,
            "dataset.mmap_bin_files": args.mmap_bin_files,
            "dataset.reset_position_ids": args.reset_position_ids,
            "dataset.reset_attention_mask": args.reset_attention_mask,
            "dataset.eod_mask_loss": args.eod_mask_loss,
            "dataset.num_dataset_builder_threads": args.num_dataset_builder_threads,
            "dataset.dataloader_type": args.dataloader_type,
            "dataset.num_workers": args.num_workers,
            "loss.check_for_nan": args.check_for_nan_in_loss_and_grad,  # pretrain_gpt.py's loss_func
            "rng.seed": args.seed,
            "train.micro_batch_size": args.micro_batch_size,
            "train.global_batch_size": args.global_batch_size,
            "train.train_iters": args.train_iters,
            "train.data_parallel_size": args.data_parallel_size,
            "tokenizer.tokenizer_type": args.tokenizer_type,
            "tokenizer.vocab_size": args.vocab_size,
        }
        return {"view": view, "args": {k: plain(v) for k, v in vars(args).items()}}

    # -- Megatron-Bridge --------------------------------------------------------------------------------
    def bridge(self, case: dict[str, Any]) -> dict[str, Any]:
        os.environ["WORLD_SIZE"], os.environ["RANK"] = str(case.get("world_size", 1)), "0"
        module, function = RECIPES[case["recipe"]]
        cfg = getattr(__import__(module, fromlist=[function]), function)()
        try:
            cfg = self.process_overrides(cfg, cli_overrides=list(case["overrides"]) or None)
            if cfg.model.seq_length != cfg.dataset.seq_length:  # run_recipe.py keeps the two in sync
                cfg.model.seq_length = cfg.dataset.seq_length
            self.runtime_config_update(cfg)
        except (AssertionError, ValueError) as exc:
            return {"refused": f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"}
        except Exception as exc:  # Hydra's OverridesError (an unknown key, a parse error) is a refusal too
            if type(exc).__name__ != "OverridesError":
                raise
            return {"refused": f"OverridesError: {' '.join(str(exc).split())[:400]}"}
        scheduler = self.optim._get_scheduler(cfg.optimizer, cfg.scheduler, ParamGroups())
        model, data = cfg.model, cfg.dataset
        view = {
            **dataclass_view("model", model, self.classes["model"]),
            **dataclass_view("optimizer", cfg.optimizer, self.classes["optimizer"]),
            **dataclass_view("ddp", cfg.ddp, self.classes["ddp"]),
            **schedule_view(scheduler, cfg.train.global_batch_size, cfg.train.train_iters),
            "gpt.position_embedding_type": model.position_embedding_type,
            "gpt.rotary_percent": model.rotary_percent,
            "gpt.rotary_base": model.rotary_base,
            "gpt.seq_len_interpolation_factor": model.seq_len_interpolation_factor,
            "gpt.share_embeddings_and_output_weights": model.share_embeddings_and_output_weights,
            "gpt.make_vocab_size_divisible_by": model.make_vocab_size_divisible_by,
            "gpt.seq_length": model.seq_length,
            "dataset.random_seed": data.random_seed,
            "dataset.sequence_length": data.sequence_length,
            "dataset.blend": plain(data.blend),
            "dataset.blend_per_split": plain(data.blend_per_split),
            "dataset.split": data.split if data.blend is not None else None,
            "dataset.mock": data.blend is None and data.blend_per_split is None,
            "dataset.path_to_cache": data.path_to_cache,
            "dataset.mmap_bin_files": data.mmap_bin_files,
            "dataset.reset_position_ids": data.reset_position_ids,
            "dataset.reset_attention_mask": data.reset_attention_mask,
            "dataset.eod_mask_loss": data.eod_mask_loss,
            "dataset.num_dataset_builder_threads": data.num_dataset_builder_threads,
            "dataset.dataloader_type": data.dataloader_type,
            "dataset.num_workers": data.num_workers,
            "loss.check_for_nan": cfg.rerun_state_machine.check_for_nan_in_loss,
            "rng.seed": cfg.rng.seed,
            "train.micro_batch_size": cfg.train.micro_batch_size,
            "train.global_batch_size": cfg.train.global_batch_size,
            "train.train_iters": cfg.train.train_iters,
            "train.data_parallel_size": cfg.data_parallel_size,
            "tokenizer.tokenizer_type": cfg.tokenizer.tokenizer_type,
            "tokenizer.vocab_size": cfg.tokenizer.vocab_size,
        }
        sections = {
            f"{section}.{f.name}": plain(getattr(getattr(cfg, section), f.name, None))
            for section in (
                "train",
                "validation",
                "logger",
                "checkpoint",
                "dist",
                "tokenizer",
                "rng",
                "dataset",
            )
            if dataclasses.is_dataclass(getattr(cfg, section, None))
            for f in dataclasses.fields(getattr(cfg, section))
        }
        return {"view": view, "config": sections}

    def resolve(self, request: dict[str, Any]) -> dict[str, Any]:
        results = {}
        for case in request["cases"]:
            try:
                results[case["id"]] = getattr(self, case["side"])(case)
            except Exception as exc:  # a crash of one case is that case's answer, with its trace
                results[case["id"]] = {
                    "error": f"{type(exc).__name__}: {exc}",
                    "trace": traceback.format_exc(),
                }
        return {"results": results}


def main() -> None:
    bridge_root, mcore_root = sys.argv[1], sys.argv[2]
    sys.path[:0] = [bridge_root, mcore_root]
    real_stdout = sys.stdout
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the frameworks print their argument tables)
    warnings.simplefilter("ignore")
    stand_ins = _config_child().load_from_wheel(Path(bridge_root), RECIPE_PACKAGES)
    peer = Peer()
    # Imported once, alive to the end: the collector walks only what requests make (tests/conftest.py).
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)  # as bridgepack.cli.GC_THRESHOLDS (this child imports no bridgepack)
    real_stdout.write(json.dumps({"ready": True, "stand_ins": stand_ins}) + "\n")
    real_stdout.flush()
    for line in sys.stdin:
        answer = peer.resolve(json.loads(line))
        real_stdout.write(json.dumps(answer, default=str) + "\n")
        real_stdout.flush()


if __name__ == "__main__":
    main()
    # the test process closed the pipe: its run is ending and waits for this exit, which the interpreter's
    # own shutdown (torch and both frameworks loaded) would delay by seconds; nothing is left to flush
    os._exit(0)
