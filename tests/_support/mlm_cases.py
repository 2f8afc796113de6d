"""The command lines the resolved-config tests put through both frameworks: a small full launch (BASE)
and, per table row, what the row's flag adds to it (a value other than Megatron-LM's default, and what the
flag needs beside it, e.g. ``--num-query-groups`` with ``--group-query-attention``).

A sample is ``(words, world size)``; ``-TRAIN`` among the words drops BASE's ``--train-iters`` (sample-based
schedules), ``-MOCK`` drops its ``--mock-data`` (real data), and every flag of the sample replaces BASE's
value of that flag.
"""

from __future__ import annotations

from collections.abc import Mapping

_BASE_TEXT = (
    "--num-layers 4 --hidden-size 128 --num-attention-heads 4 --seq-length 256 --max-position-embeddings 256"
    " --micro-batch-size 2 --global-batch-size 16 --train-iters 100 --lr 3e-4 --mock-data"
    " --tokenizer-type NullTokenizer --vocab-size 1024"
)
#: A small whole ``pretrain_gpt.py`` launch, every row's starting point.
BASE = _BASE_TEXT.split()

_ROPE = "--position-embedding-type rope --no-rope-fusion"  # rope fusion needs TE (no GPU here)
_TP2 = "--tensor-model-parallel-size 2"
_PP2 = "--pipeline-model-parallel-size 2"
_MOE = "--num-experts 4"
_MLA = "--multi-latent-attention --q-lora-rank 64 --kv-lora-rank 32 --qk-head-dim 32 --qk-pos-emb-head-dim 16"
_SAMPLES = "-TRAIN --train-samples 1600"
_WSD = "--lr-decay-style WSD --lr-wsd-decay-iters 20"
_GPT2 = "--tokenizer-type GPT2BPETokenizer --vocab-file /tok/vocab.json --merge-file /tok/merges.txt"

#: flag -> (what it adds to BASE, world size)
ROW_SAMPLES: Mapping[str, tuple[str, int]] = {
    "--num-layers": ("--num-layers 6", 1),
    "--hidden-size": ("--hidden-size 256", 1),
    "--ffn-hidden-size": ("--ffn-hidden-size 320", 1),
    "--num-attention-heads": ("--num-attention-heads 8", 1),
    "--num-query-groups": ("--group-query-attention --num-query-groups 2", 1),
    "--kv-channels": ("--kv-channels 16", 1),
    "--normalization": ("--normalization RMSNorm", 1),
    "--init-method-std": ("--init-method-std 0.01", 1),
    "--hidden-dropout": ("--hidden-dropout 0.0", 1),
    "--attention-dropout": ("--attention-dropout 0.0", 1),
    "--position-embedding-type": (_ROPE, 1),
    "--rotary-percent": (f"{_ROPE} --rotary-percent 0.5", 1),
    "--rotary-base": (f"{_ROPE} --rotary-base 500000", 1),
    "--make-vocab-size-divisible-by": ("--make-vocab-size-divisible-by 64", 1),
    "--attention-backend": ("--attention-backend flash", 1),
    "--seq-length": ("--seq-length 128", 1),
    "--norm-epsilon": ("--norm-epsilon 1e-6", 1),
    "--rotary-seq-len-interpolation-factor": (
        f"{_ROPE} --rotary-seq-len-interpolation-factor 2",
        1,
    ),
    "--swiglu": ("--swiglu", 1),
    "--group-query-attention": ("--group-query-attention", 1),
    "--disable-bias-linear": ("--disable-bias-linear", 1),
    "--untie-embeddings-and-output-weights": ("--untie-embeddings-and-output-weights", 1),
    "--qk-layernorm": ("--qk-layernorm", 1),
    "--attention-softmax-in-fp32": ("--attention-softmax-in-fp32", 1),
    "--apply-query-key-layer-scaling": ("--apply-query-key-layer-scaling", 1),
    "--no-gradient-accumulation-fusion": ("--no-gradient-accumulation-fusion", 1),
    "--no-bias-gelu-fusion": ("--no-bias-gelu-fusion", 1),
    "--no-masked-softmax-fusion": ("--no-masked-softmax-fusion", 1),
    "--no-bias-dropout-fusion": ("--no-bias-dropout-fusion", 1),
    "--no-rope-fusion": ("--position-embedding-type rope --no-rope-fusion", 1),
    "--cross-entropy-loss-fusion": ("--cross-entropy-loss-fusion", 1),
    "--cross-entropy-fusion-impl": ("--cross-entropy-fusion-impl te", 1),
    "--squared-relu": ("--squared-relu --no-bias-gelu-fusion", 1),
    "--add-qkv-bias": ("--disable-bias-linear --add-qkv-bias", 1),
    "--fp16-lm-cross-entropy": ("--fp16 --fp16-lm-cross-entropy", 1),
    "--multi-latent-attention": (_MLA, 1),
    "--q-lora-rank": (_MLA, 1),
    "--kv-lora-rank": (_MLA, 1),
    "--qk-head-dim": (_MLA, 1),
    "--qk-pos-emb-head-dim": (_MLA, 1),
    "--v-head-dim": (f"{_MLA} --v-head-dim 24", 1),
    "--rotary-scaling-factor": (f"{_MLA} --rotary-scaling-factor 2.0", 1),
    "--mscale": (f"{_MLA} --mscale 0.5", 1),
    "--mscale-all-dim": (f"{_MLA} --mscale-all-dim 0.5", 1),
    "--deterministic-mode": ("--deterministic-mode", 1),
    "--calculate-per-token-loss": ("--calculate-per-token-loss", 1),
    "--tensor-model-parallel-size": (_TP2, 2),
    "--pipeline-model-parallel-size": (_PP2, 2),
    "--context-parallel-size": ("--context-parallel-size 2", 2),
    "--expert-model-parallel-size": (f"{_MOE} --expert-model-parallel-size 2", 2),
    "--expert-tensor-parallel-size": (f"{_MOE} {_TP2} --expert-tensor-parallel-size 1", 2),
    "--sequence-parallel": (f"{_TP2} --sequence-parallel", 2),
    "--pipeline-model-parallel-layout": (f"{_PP2} --pipeline-model-parallel-layout Et*2|t*2L", 2),
    "--num-layers-per-virtual-pipeline-stage": (f"{_PP2} --num-layers-per-virtual-pipeline-stage 1", 2),
    "--num-virtual-stages-per-pipeline-rank": (f"{_PP2} --num-virtual-stages-per-pipeline-rank 2", 2),
    "--account-for-embedding-in-pipeline-split": (
        f"{_PP2} --num-layers 3 --account-for-embedding-in-pipeline-split",
        2,
    ),
    "--account-for-loss-in-pipeline-split": (
        f"{_PP2} --num-layers 3 --account-for-loss-in-pipeline-split",
        2,
    ),
    "--cp-comm-type": ("--context-parallel-size 2 --cp-comm-type a2a", 2),
    "--num-experts": (_MOE, 1),
    "--moe-ffn-hidden-size": (f"{_MOE} --moe-ffn-hidden-size 64", 1),
    "--moe-router-load-balancing-type": (f"{_MOE} --moe-router-load-balancing-type sinkhorn", 1),
    "--moe-router-topk": (f"{_MOE} --moe-router-topk 1 --moe-router-pre-softmax", 1),
    "--moe-aux-loss-coeff": (f"{_MOE} --moe-aux-loss-coeff 0.01", 1),
    "--moe-token-dispatcher-type": (f"{_MOE} --moe-token-dispatcher-type alltoall", 1),
    "--moe-router-dtype": (f"{_MOE} --moe-router-dtype fp32", 1),
    "--moe-layer-freq": (f"{_MOE} --moe-layer-freq 2", 1),
    "--moe-shared-expert-intermediate-size": (f"{_MOE} --moe-shared-expert-intermediate-size 64", 1),
    "--moe-router-group-topk": (f"{_MOE} --moe-router-num-groups 2 --moe-router-group-topk 1", 1),
    "--moe-router-num-groups": (f"{_MOE} --moe-router-num-groups 2 --moe-router-group-topk 1", 1),
    "--moe-router-topk-scaling-factor": (f"{_MOE} --moe-router-topk-scaling-factor 2.0", 1),
    "--moe-router-score-function": (f"{_MOE} --moe-router-score-function sigmoid", 1),
    "--moe-router-bias-update-rate": (
        f"{_MOE} --moe-router-score-function sigmoid --moe-router-enable-expert-bias"
        " --moe-router-bias-update-rate 0.01",
        1,
    ),
    "--mtp-num-layers": (f"{_ROPE} --mtp-num-layers 1", 1),
    "--mtp-loss-scaling-factor": (f"{_ROPE} --mtp-num-layers 1 --mtp-loss-scaling-factor 0.2", 1),
    "--moe-router-enable-expert-bias": (
        f"{_MOE} --moe-router-score-function sigmoid --moe-router-enable-expert-bias",
        1,
    ),
    "--moe-router-fusion": (f"{_MOE} --moe-router-fusion", 1),
    "--moe-grouped-gemm": (f"{_MOE} --moe-grouped-gemm", 1),
    "--moe-router-pre-softmax": (f"{_MOE} --moe-router-pre-softmax", 1),
    "--moe-permute-fusion": (f"{_MOE} --moe-permute-fusion", 1),
    "--recompute-granularity": ("--recompute-granularity selective", 1),
    "--recompute-method": (
        "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
        1,
    ),
    "--recompute-num-layers": (
        "--recompute-granularity full --recompute-method block --recompute-num-layers 2",
        1,
    ),
    "--cuda-graph-impl": ("--cuda-graph-impl transformer_engine", 1),
    "--bf16": ("--bf16", 1),
    "--fp16": ("--fp16", 1),
    "--micro-batch-size": ("--micro-batch-size 4", 1),
    "--global-batch-size": ("--global-batch-size 32", 1),
    "--train-iters": ("--train-iters 200", 1),
    "--train-samples": (_SAMPLES, 1),
    "--exit-interval": ("--exit-interval 50", 1),
    "--exit-duration-in-mins": ("--exit-duration-in-mins 30", 1),
    "--manual-gc": ("--manual-gc", 1),
    "--manual-gc-interval": ("--manual-gc --manual-gc-interval 10", 1),
    "--empty-unused-memory-level": ("--empty-unused-memory-level 1", 1),
    "--eval-iters": ("--eval-iters 5", 1),
    "--eval-interval": ("--eval-interval 20", 1),
    "--skip-train": ("--skip-train", 1),
    "--optimizer": ("--optimizer sgd", 1),
    "--lr": ("--lr 1e-3", 1),
    "--min-lr": ("--min-lr 1e-5", 1),
    "--weight-decay": ("--weight-decay 0.05", 1),
    "--clip-grad": ("--clip-grad 0.5", 1),
    "--adam-beta1": ("--adam-beta1 0.8", 1),
    "--adam-beta2": ("--adam-beta2 0.98", 1),
    "--adam-eps": ("--adam-eps 1e-6", 1),
    "--sgd-momentum": ("--optimizer sgd --sgd-momentum 0.8", 1),
    "--decoupled-lr": ("--decoupled-lr 1e-4 --decoupled-min-lr 1e-5", 1),
    "--decoupled-min-lr": ("--decoupled-lr 1e-4 --decoupled-min-lr 1e-5", 1),
    "--log-num-zeros-in-grad": ("--log-num-zeros-in-grad", 1),
    "--lr-decay-style": ("--lr-decay-style cosine", 1),
    "--lr-decay-iters": ("--lr-decay-iters 80", 1),
    "--lr-decay-samples": (f"{_SAMPLES} --lr-decay-samples 1280", 1),
    "--lr-warmup-iters": ("--lr-warmup-iters 10", 1),
    "--lr-warmup-samples": (f"{_SAMPLES} --lr-warmup-samples 160", 1),
    "--lr-warmup-fraction": ("--lr-warmup-fraction 0.1", 1),
    "--lr-warmup-init": ("--lr-warmup-iters 10 --lr-warmup-init 1e-5", 1),
    "--lr-wsd-decay-style": (f"{_WSD} --lr-wsd-decay-style cosine", 1),
    "--lr-wsd-decay-iters": (_WSD, 1),
    "--lr-wsd-decay-samples": (f"{_SAMPLES} --lr-decay-style WSD --lr-wsd-decay-samples 320", 1),
    "--start-weight-decay": (
        "--weight-decay-incr-style linear --start-weight-decay 0.01 --end-weight-decay 0.1",
        1,
    ),
    "--end-weight-decay": (
        "--weight-decay-incr-style cosine --start-weight-decay 0.02 --end-weight-decay 0.2",
        1,
    ),
    "--weight-decay-incr-style": (
        "--weight-decay-incr-style linear --start-weight-decay 0.0 --end-weight-decay 0.1",
        1,
    ),
    "--use-checkpoint-opt_param-scheduler": ("--use-checkpoint-opt_param-scheduler", 1),
    "--override-opt_param-scheduler": ("--override-opt_param-scheduler", 1),
    "--use-distributed-optimizer": ("--use-distributed-optimizer", 1),
    "--overlap-grad-reduce": ("--overlap-grad-reduce", 1),
    "--overlap-param-gather": ("--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather", 1),
    "--ddp-average-in-collective": ("--ddp-average-in-collective", 1),
    "--accumulate-allreduce-grads-in-fp32": ("--accumulate-allreduce-grads-in-fp32", 1),
    "--no-check-for-nan-in-loss-and-grad": ("--no-check-for-nan-in-loss-and-grad", 1),
    "--data-path": ("-MOCK --data-path 0.3 /data/a 0.7 /data/b", 1),
    "--split": ("-MOCK --data-path /data/a --split 90,5,5", 1),
    "--data-cache-path": ("--data-cache-path /data/cache", 1),
    "--mock-data": ("--mock-data", 1),
    "--num-workers": ("--num-workers 4", 1),
    "--dataloader-type": ("--dataloader-type cyclic", 1),
    "--num-dataset-builder-threads": ("--num-dataset-builder-threads 2", 1),
    "--no-mmap-bin-files": ("--no-mmap-bin-files", 1),
    "--reset-position-ids": ("--reset-position-ids", 1),
    "--reset-attention-mask": ("--reset-attention-mask", 1),
    "--eod-mask-loss": ("--eod-mask-loss", 1),
    "--tokenizer-type": (_GPT2, 1),
    "--tokenizer-model": ("--tokenizer-type HuggingFaceTokenizer --tokenizer-model /tok", 1),
    "--vocab-file": (_GPT2, 1),
    "--merge-file": (_GPT2, 1),
    "--vocab-size": ("--vocab-size 2048", 1),
    "--seed": ("--seed 42", 1),
    "--distributed-backend": ("--distributed-backend gloo", 1),
    "--distributed-timeout-minutes": ("--distributed-timeout-minutes 30", 1),
    "--save": ("--save /runs/ckpt --save-interval 50", 1),
    "--load": ("--load /runs/ckpt", 1),
    "--save-interval": ("--save /runs/ckpt --save-interval 10", 1),
    "--pretrained-checkpoint": ("--pretrained-checkpoint /tmp", 1),  # Bridge checks it exists
    "--ckpt-format": ("--ckpt-format torch", 1),
    "--dist-ckpt-strictness": ("--dist-ckpt-strictness log_all", 1),
    "--finetune": ("--finetune", 1),
    "--exit-on-missing-checkpoint": ("--exit-on-missing-checkpoint", 1),
    "--use-checkpoint-args": ("--load /runs/ckpt --use-checkpoint-args", 1),
    "--ckpt-step": ("--load /runs/ckpt --ckpt-step 5", 1),
    "--async-save": ("--save /runs/ckpt --save-interval 50 --async-save --use-persistent-ckpt-worker", 1),
    "--use-persistent-ckpt-worker": ("--use-persistent-ckpt-worker", 1),
    "--no-ckpt-fully-parallel-save": ("--no-ckpt-fully-parallel-save", 1),
    "--ckpt-fully-parallel-load": ("--ckpt-fully-parallel-load", 1),
    "--dist-ckpt-optim-fully-reshardable": ("--dist-ckpt-optim-fully-reshardable", 1),
    "--no-save-optim": ("--no-save-optim", 1),
    "--no-load-optim": ("--no-load-optim", 1),
    "--no-save-rng": ("--no-save-rng", 1),
    "--no-load-rng": ("--no-load-rng", 1),
    "--log-interval": ("--log-interval 5", 1),
    "--tensorboard-dir": ("--tensorboard-dir /runs/tb", 1),
    "--tensorboard-log-interval": ("--tensorboard-log-interval 5", 1),
    "--timing-log-level": ("--timing-log-level 1", 1),
    "--timing-log-option": ("--timing-log-option all", 1),
    "--wandb-project": ("--wandb-project p", 1),
    "--wandb-exp-name": ("--wandb-exp-name e", 1),
    "--wandb-entity": ("--wandb-entity x", 1),
    "--logging-level": ("--logging-level 20", 1),
    "--log-params-norm": ("--log-params-norm", 1),
    "--log-throughput": ("--log-throughput", 1),
    "--log-timers-to-tensorboard": ("--log-timers-to-tensorboard", 1),
    "--log-validation-ppl-to-tensorboard": ("--log-validation-ppl-to-tensorboard", 1),
    "--log-memory-to-tensorboard": ("--log-memory-to-tensorboard", 1),
    "--log-world-size-to-tensorboard": ("--log-world-size-to-tensorboard", 1),
    "--no-log-loss-scale-to-tensorboard": ("--no-log-loss-scale-to-tensorboard", 1),
}


def launch(sample: str) -> list[str]:
    """BASE with ``sample`` on top: a sample's flag replaces BASE's, ``-TRAIN`` drops ``--train-iters``."""
    words = sample.split()
    drop = {
        flag for marker, flag in (("-TRAIN", "--train-iters"), ("-MOCK", "--mock-data")) if marker in words
    }
    words = [w for w in words if w not in ("-TRAIN", "-MOCK")]
    given = {w for w in words if w.startswith("--")}
    out: list[str] = []
    i = 0
    while i < len(BASE):
        flag, j = BASE[i], i + 1
        while j < len(BASE) and not BASE[j].startswith("--"):
            j += 1
        if flag not in given and flag not in drop:
            out += BASE[i:j]
        i = j
    return out + words
