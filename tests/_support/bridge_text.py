"""Megatron-Bridge 0.6.2's text path as a test peer: one child interpreter for the whole session.

The child (``bridge_text_child.py``) runs with the unpacked Bridge 0.6.2 and Megatron-Core 0.19.2 wheels first
on its path and answers :class:`TextCase` requests over pipes (one JSON line each way). Tests get it from the
session fixture ``bridge_text`` (in ``tests/conftest.py``)::

    case = TextCase(jsonl, qwen3_tokenizer_dir(), kind="prompt_completion",
                    options={"prompt_column": "input", "completion_column": "output", "separator": " "})
    rows = bridge_text.examples(case)        # [{"input_ids": [...], "loss_mask": [...]}, ...]
    files = bridge_text.pack(case, out_dir)  # Bridge's packed Parquet + metadata file

``loss_mask`` is unshifted, one per input id: Bridge's ``loss_mask`` where the example has one, else
``idx >= answer_start_idx`` (how ``fill_packing_strategy`` reads legacy examples). ``versions`` records the
transformers / tokenizers / jinja2 the child used (the same interpreter, so the same as bridgepack's side) and
``stand_ins`` what was replaced in it (nothing on the tokenization path).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from _support.peers import bridge_wheel_root, megatron_core_wheel_root

CHILD = Path(__file__).resolve().parent / "bridge_text_child.py"
#: Bridge's recipes' prompt-completion preset (``recipes/utils/dataset_utils.py``).
RECIPE_PROMPT_COMPLETION = {"prompt_column": "input", "completion_column": "output", "separator": " "}
MAX_ROWS = 200


@dataclass(frozen=True)
class TextCase:
    """One Bridge run: a JSONL, a tokenizer directory and how ``GPTSFTDatasetConfig`` is set.

    ``kind``: ``prompt_completion`` (``PromptCompletionSFTPreprocessingConfig(**options)``), ``chat``
    (``ChatSFTPreprocessingConfig(**options)``) or ``legacy`` (no preprocessing; ``dataset_kwargs`` carry the
    legacy fields such as ``prompt_template``, ``answer_only_loss``, ``truncation_field``, ``tool_schemas``).
    """

    jsonl: Path
    tokenizer: Path
    kind: str = "prompt_completion"
    options: Mapping[str, Any] = field(default_factory=lambda: dict(RECIPE_PROMPT_COMPLETION))
    chat_template: Path | None = None
    seq_length: int = 2048
    pad_seq_to_mult: int = 1
    #: What Bridge's recipe presets build the dataset with (``GPTSFTDatasetConfig(seed=5678)``).
    seed: int = 5678
    dataset_kwargs: Mapping[str, Any] | None = None
    max_single_sequence_length: int | None = None

    def request(self) -> dict[str, Any]:
        rows = sum(1 for line in self.jsonl.read_bytes().splitlines() if line.strip())
        assert rows <= MAX_ROWS, f"{self.jsonl}: {rows} rows; a Bridge text case holds at most {MAX_ROWS}"
        return {
            "jsonl": str(self.jsonl),
            "tokenizer": str(self.tokenizer),
            "kind": self.kind,
            "options": dict(self.options),
            "chat_template": None if self.chat_template is None else str(self.chat_template),
            "seq_length": self.seq_length,
            "pad_seq_to_mult": self.pad_seq_to_mult,
            "seed": self.seed,
            "dataset_kwargs": None if self.dataset_kwargs is None else dict(self.dataset_kwargs),
            "max_single_sequence_length": self.max_single_sequence_length,
        }


class BridgeRefused(Exception):
    """Bridge raised on the case (its message is the exception's)."""


class BridgeText:
    """The child process and its pipes; requests are serialised (one at a time)."""

    def __init__(self) -> None:
        bridge, mcore = bridge_wheel_root(), megatron_core_wheel_root()
        self._proc = subprocess.Popen(
            [sys.executable, str(CHILD), str(bridge), str(mcore)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._log: list[str] = []
        assert self._proc.stderr is not None
        threading.Thread(target=self._drain, args=(self._proc.stderr,), daemon=True).start()
        self._lock = threading.Lock()
        ready = self._read()
        self.versions: dict[str, str] = ready["versions"]
        self.stand_ins: list[str] = ready["stand_ins"]

    def _drain(self, stream: IO[str]) -> None:
        for line in stream:
            self._log.append(line)
            del self._log[:-200]

    def _read(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError("the Bridge text child died:\n" + "".join(self._log[-40:]))
        return json.loads(line)

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None
        with self._lock:
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
            answer = self._read()
        if not answer["ok"]:
            raise BridgeRefused(answer["error"])
        return answer

    def examples(self, case: TextCase) -> list[dict[str, Any]]:
        """``tokenize_dataset``'s examples (after its pre-padding when ``pad_seq_to_mult > 1``)."""
        return self._ask({"op": "examples", **case.request()})["examples"]

    def pack(self, case: TextCase, out_dir: Path, packed_sequence_size: int) -> tuple[Path, Path]:
        """``GPTSFTDatasetBuilder(...).prepare_data()`` into ``out_dir``: (packed Parquet, metadata file)."""
        request = {"op": "pack", "out_dir": str(out_dir), "packed_sequence_size": packed_sequence_size}
        answer = self._ask({**request, **case.request()})
        self.last_prepare: dict[str, float] = {k: answer[k] for k in ("seconds", "cpu_seconds")}  # benchmarks
        return Path(answer["parquet"]), Path(answer["metadata"])

    def close(self) -> None:
        """End the child (its interpreter's own shutdown, torch included, would take seconds)."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.terminate()
        self._proc.wait(timeout=30)
