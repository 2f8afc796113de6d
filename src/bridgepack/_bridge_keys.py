"""The Megatron-Bridge 0.6.2 config keys bridgepack reads or writes, as dotted override paths (bridge-format
§4).

One owner for every key: the doctor's rules and its defect atlas test them, the config loader maps plain
options onto them, and ``bridgepack pack`` / ``bridgepack plan`` print overrides with them. A key renamed in a
later release is changed here once.
"""

from __future__ import annotations

import re
from typing import Any

# -- dataset: offline packing (bridge-format §1, §4) ----------------------------------------------------
OFFLINE = "dataset.enable_offline_packing"
SPECS = "dataset.offline_packing_specs"
PACK_SIZE = f"{SPECS}.packed_sequence_size"
PAD_MULT = f"{SPECS}.pad_seq_to_mult"
PAD_CU = f"{SPECS}.pad_cu_seqlens"
TRAIN_PATH = f"{SPECS}.packed_train_data_path"
VAL_PATH = f"{SPECS}.packed_val_data_path"
METADATA_PATH = f"{SPECS}.packed_metadata_path"
#: The 0.5.x names of the two switches (bridge-format §1).
LEGACY_SPECS = "dataset.packed_sequence_specs"
LEGACY_IN_BATCH = "dataset.pack_sequences_in_batch"

# -- dataset: in-batch (VLM) packing and the rest of the dataset section -------------------------------
IN_BATCH = "dataset.enable_in_batch_packing"
DEFER = "dataset.defer_in_batch_packing_to_step"
PAD_TO_MAX = "dataset.dataset_kwargs.pad_to_max_length"
DATA_SEQ = "dataset.seq_length"
CHAT = "dataset.dataset_kwargs.chat"
LOSS_MODE = "dataset.preprocessing.loss_mode"

# -- train, model, ddp ------------------------------------------------------------------------------------
MBS = "train.micro_batch_size"
GBS = "train.global_batch_size"
MODEL_SEQ = "model.seq_length"
TP = "model.tensor_model_parallel_size"
PP = "model.pipeline_model_parallel_size"
CP = "model.context_parallel_size"
EP = "model.expert_model_parallel_size"
SP = "model.sequence_parallel"
PER_TOKEN = "model.calculate_per_token_loss"
MTP = "model.mtp_num_layers"
GRAPH_IMPL = "model.cuda_graph_impl"
GRAPH_SCOPE = "model.cuda_graph_scope"
AVG_COLL = "ddp.average_in_collective"


# -- spelling a value as an override ---------------------------------------------------------------------
# run_recipe.py parses its overrides with Hydra's override grammar (``OverridesParser``, then OmegaConf):
# unquoted, ``949,50,1`` is a sweep, ``[a,b]`` a list, ``1234`` an int, ``true`` a bool and ``null`` None.
# A string is therefore written quoted unless Hydra would read it back, unquoted, as that same string.

#: A string Hydra reads back unchanged without quotes: a path-like word that is no number, bool or null.
_PLAIN_STRING = re.compile(r"[A-Za-z_/][A-Za-z0-9_/.:@+\-]*")
#: Words Hydra's grammar reads as another type than str (case-insensitive).
_NON_STRING_WORDS = frozenset({"true", "false", "null", "nan", "inf"})


def override_value(value: Any) -> str:
    """One value as Hydra's override grammar reads it back: ``true``/``false``, ``null``, numbers as Python
    prints them, and strings bare or single-quoted (``'949,50,1'``, ``'it\\'s'``), never a sweep or a list.

    >>> [override_value(v) for v in (True, None, 4096, 1e-05, "nccl", "949,50,1", "/data/my run,v2")]
    ['true', 'null', '4096', '1e-05', 'nccl', "'949,50,1'", "'/data/my run,v2'"]
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    text = str(value)
    if _PLAIN_STRING.fullmatch(text) and text.lower() not in _NON_STRING_WORDS:
        return text
    return "'" + _escape_quoted(text) + "'"


def _escape_quoted(text: str) -> str:
    """Hydra's escapes inside a quoted value: a quote is ``\\'``, and backslashes are doubled only where
    they stand before a quote or at the end (elsewhere a backslash is itself)."""
    out: list[str] = []
    run = 0  # backslashes seen just before the current character
    for ch in text:
        if ch == "\\":
            run += 1
            continue
        if ch == "'":
            out.append("\\" * (2 * run) + "\\'")
        else:
            out.append("\\" * run + ch)
        run = 0
    out.append("\\" * (2 * run))
    return "".join(out)


def override(key: str, value: Any) -> str:
    """``key=value`` exactly as run_recipe.py must receive it (one argv word; quote it for a shell).

    >>> override("dataset.split", "949,50,1")
    "dataset.split='949,50,1'"
    """
    return f"{key}={override_value(value)}"
