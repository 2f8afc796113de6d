"""The Megatron-Bridge 0.6.2 config keys seqpack reads or writes, as dotted override paths (bridge-format §4).

One owner for every key: the doctor's rules and its defect atlas test them, the config loader maps plain
options onto them, and ``seqpack pack`` / ``seqpack plan`` print overrides with them. A key renamed in a
later release is changed here once.
"""

from __future__ import annotations

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
