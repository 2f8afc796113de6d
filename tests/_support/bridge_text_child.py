"""Megatron-Bridge 0.6.2's own text path, served case by case: the child process of ``bridge_text.py``.

Run as ``python bridge_text_child.py BRIDGE_ROOT MCORE_ROOT`` with both unpacked wheels; it reads one JSON
request per line on stdin and answers one JSON line on stdout (logs go to stderr). It imports nothing from
the tests (and of bridgepack only its config child's placeholders).

What runs is Bridge's code, unchanged: the tokenizer is ``build_tokenizer(TokenizerConfig(tokenizer_type=
"HuggingFaceTokenizer", tokenizer_model=DIR, chat_template_path=...))`` (Megatron-Core 0.19.2's
``HuggingFaceTokenizer`` decides every id); the dataset keyword arguments come from Bridge's own
``normalize_gpt_sft_dataset_kwargs(GPTSFTDatasetConfig(...))``; examples come from
``packing/offline.py:tokenize_dataset`` with ``build_gpt_sft_split`` (what ``GPTSFTDatasetBuilder
.prepare_data -> prepare_packed_data -> prepare_gpt_sft_packed_data`` calls, bridge-format §13), and a
``pack`` request runs ``prepare_gpt_sft_packed_data`` itself, writing Bridge's Parquet and metadata file.

Stand-ins (listed in every answer's ``stand_ins``), none on the tokenization path:

* packages registered without their ``__init__`` (``megatron.bridge``: imports every model family;
  ``megatron.bridge.data``/``.data.builders``: import Energon and VLM builders); their modules are then
  imported file by file;
* ``typing.override`` (Python 3.12) = ``typing_extensions.override``; placeholders for ``megatron.energon``
  and Megatron-Core's ``paged_stash`` (a Triton kernel module its schedules import) when not installed, the
  same stand-ins as ``bridgepack.verify._bridge_config_child`` (its ``prepare_modules``, loaded by path;
  nothing else of bridgepack).
"""

from __future__ import annotations

import gc
import importlib.util
import json
import sys
import tempfile
import time
import traceback
import types
import warnings
from importlib.util import find_spec
from pathlib import Path
from typing import Any

if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

BARE_PACKAGES = ("megatron.bridge", "megatron.bridge.data", "megatron.bridge.data.builders")


def _config_child() -> types.ModuleType:
    """bridgepack's own Bridge child (``verify``'s config part), loaded by path without importing bridgepack:
    its
    placeholder modules are the ones used here."""
    spec = find_spec("bridgepack")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / "verify" / "_bridge_config_child.py"
    module_spec = importlib.util.spec_from_file_location("_bridgepack_bridge_config_child", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _load(bridge_root: Path) -> list[str]:
    """The config child's stand-ins, with this child's packages registered bare."""
    stand_ins: list[str] = _config_child().prepare_modules(bridge_root, BARE_PACKAGES)
    return stand_ins


class Peer:
    """Bridge's modules, imported once; one tokenizer per (directory, template) pair."""

    def __init__(self) -> None:
        from megatron.bridge.data.builders import gpt_sft as builder
        from megatron.bridge.data.packing import offline
        from megatron.bridge.data.packing.config import PackedSequenceSpecs
        from megatron.bridge.data.sft_processing import (
            ChatSFTPreprocessingConfig,
            PromptCompletionSFTPreprocessingConfig,
        )
        from megatron.bridge.training.tokenizers.config import TokenizerConfig
        from megatron.bridge.training.tokenizers.tokenizer import build_tokenizer

        self.builder, self.offline, self.specs = builder, offline, PackedSequenceSpecs
        self.chat_config, self.pc_config = ChatSFTPreprocessingConfig, PromptCompletionSFTPreprocessingConfig
        self.tokenizer_config, self.build_tokenizer = TokenizerConfig, build_tokenizer
        self.tokenizers: dict[tuple[str, str | None], Any] = {}

    def tokenizer(self, directory: str, template: str | None) -> Any:
        key = (directory, template)
        if key not in self.tokenizers:
            config = self.tokenizer_config(
                tokenizer_type="HuggingFaceTokenizer", tokenizer_model=directory, chat_template_path=template
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.tokenizers[key] = self.build_tokenizer(config)
        return self.tokenizers[key]

    def config(self, request: dict[str, Any], root: str) -> Any:
        """Bridge's ``GPTSFTDatasetConfig`` for the request (``kind`` picks the preprocessing)."""
        kind = request["kind"]
        options = dict(request.get("options") or {})
        if kind == "chat":
            preprocessing = self.chat_config(**options)
        elif kind == "prompt_completion":
            preprocessing = self.pc_config(**options)
        elif kind == "legacy":
            preprocessing = None
        else:
            raise ValueError(f"unknown kind {kind!r}")
        specs = None
        if request.get("packed_sequence_size"):
            specs = self.specs(
                packed_sequence_size=request["packed_sequence_size"],
                pad_seq_to_mult=request.get("pad_seq_to_mult", 1),
                max_single_sequence_length=request.get("max_single_sequence_length"),
            )
        return self.builder.GPTSFTDatasetConfig(
            seq_length=request["seq_length"],
            dataset_root=root,
            seed=request.get("seed", 1234),
            preprocessing=preprocessing,
            enable_offline_packing=specs is not None,
            offline_packing_specs=specs,
            dataset_kwargs=request.get("dataset_kwargs"),
            do_validation=False,
            do_test=False,
        )

    def examples(self, request: dict[str, Any]) -> dict[str, Any]:
        """``tokenize_dataset``'s examples for one JSONL (what ``create_hist`` receives)."""
        tokenizer = self.tokenizer(request["tokenizer"], request.get("chat_template"))
        with tempfile.TemporaryDirectory() as root:
            jsonl = Path(root) / "training.jsonl"
            jsonl.write_bytes(Path(request["jsonl"]).read_bytes())
            config = self.config(request, root)
            items = self.offline.tokenize_dataset(
                jsonl,
                tokenizer,
                config.seq_length,
                config.seed,
                self.builder.normalize_gpt_sft_dataset_kwargs(config),
                pad_seq_to_mult=request.get("pad_seq_to_mult", 1),
                num_tokenizer_workers=1,
                dataset_builder=self.builder.build_gpt_sft_split,
            )
        return {"examples": [_example(item) for item in items]}

    def pack(self, request: dict[str, Any]) -> dict[str, Any]:
        """``GPTSFTDatasetBuilder.prepare_data`` on one JSONL: Bridge's packed Parquet and metadata file."""
        tokenizer = self.tokenizer(request["tokenizer"], request.get("chat_template"))
        out = Path(request["out_dir"])
        out.mkdir(parents=True, exist_ok=True)
        (out / "training.jsonl").write_bytes(Path(request["jsonl"]).read_bytes())
        builder = self.builder.GPTSFTDatasetBuilder(self.config(request, str(out)), tokenizer)
        start, cpu = time.perf_counter(), time.process_time()  # benchmarks/pack_text.py: prepare_data's own
        builder.prepare_data()
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
        return {
            "parquet": str(builder.train_path_packed),
            "metadata": str(builder.pack_metadata),
            "seconds": seconds,
            "cpu_seconds": cpu_seconds,
        }


def _example(item: dict[str, Any]) -> dict[str, Any]:
    """ids and the unshifted per-token mask (``loss_mask``, or ``answer_start_idx`` as packing reads it)."""
    ids = [int(v) for v in item["input_ids"]]
    if "loss_mask" in item:
        mask = [int(bool(v)) for v in item["loss_mask"]]
        source = "loss_mask"
    else:
        start = int(item["answer_start_idx"])
        mask = [int(i >= start) for i in range(len(ids))]
        source = "answer_start_idx"
    return {"input_ids": ids, "loss_mask": mask, "mask_source": source}


def main() -> None:
    bridge_root, mcore_root = sys.argv[1], sys.argv[2]
    sys.path[:0] = [bridge_root, mcore_root]
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # Bridge prints progress; only answers go to the real stdout
    stand_ins = _load(Path(bridge_root))
    peer = Peer()
    import jinja2
    import tokenizers
    import transformers

    versions = {
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "jinja2": jinja2.__version__,
        "python": sys.version.split()[0],
    }
    # Imported once, alive to the end: the collector walks only what requests make (tests/conftest.py).
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)  # as bridgepack.cli.GC_THRESHOLDS (this child imports no bridgepack)
    ready = {"ready": True, "stand_ins": stand_ins, "versions": versions}
    real_stdout.write(json.dumps(ready) + "\n")
    real_stdout.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = getattr(peer, request["op"])(request)
            answer["ok"] = True
        except Exception as exc:  # the answer carries Bridge's refusal to the test
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
        real_stdout.write(json.dumps(answer) + "\n")
        real_stdout.flush()


if __name__ == "__main__":
    main()
