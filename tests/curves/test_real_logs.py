"""Every excerpt under ``shared/data/real-logs`` reads with the right series (values read off the files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridgepack.curves import read_curves

pytestmark = pytest.mark.shared


@pytest.fixture(scope="module")
def logs(shared_dir: Path) -> Path:
    return shared_dir / "data" / "real-logs"


def test_every_excerpt_reads_and_has_a_loss(logs: Path) -> None:
    files = sorted(logs.glob("*.log"))
    assert len(files) == 9
    for path in files:
        curves = read_curves(path)
        assert len(curves.metrics["lm loss"]) >= 1, path.name
        assert curves.restarts == 0, path.name


def test_nemo_lightning_line_counts_from_zero(logs: Path) -> None:
    curves = read_curves(logs / "01_nemo2-lightning-format.log")
    assert curves.format == "nemo"
    loss = curves.metrics["lm loss"].as_dict()
    # "iteration 0/19 ... reduced_train_loss: 10.84" is Megatron iteration 1; "iteration 4/19 ... 10.83" is 5.
    assert sorted(loss) == list(range(1, 21))
    assert loss[1] == 10.84 and loss[5] == 10.83
    timing = curves.metrics["iteration-time"].as_dict()
    assert timing[1] == 3.632
    assert timing[10] == -12.71  # the negative timing is kept, as printed
    assert curves.metrics["consumed-samples"].as_dict()[20] == 1280


def test_bridge_step_time_validation_and_test_sets(logs: Path) -> None:
    curves = read_curves(logs / "02_megatron-bridge-val-and-test-set.log")
    assert curves.format == "bridge"
    m = curves.metrics
    assert m["lm loss"].as_dict() == {10: 9.763827}
    assert m["iteration-time"].as_dict() == {10: pytest.approx(4.6478)}  # 4647.8 ms
    assert m["step-time"].as_dict() == {10: 4.65}
    assert m["gpu-utilization"].as_dict() == {10: 59892.5}
    assert m["lm loss validation"].as_dict() == {10: 9.647480}
    assert m["lm loss test"].as_dict() == {10: 9.625707}
    assert m["lm loss PPL test"].as_dict() == {10: 1.514926e04}


def test_2021_no_timestamp_skipped_and_run_together_lines(logs: Path) -> None:
    curves = read_curves(logs / "04_megatron-2021-no-timestamp-skipped-rank-interleave.log")
    m = curves.metrics
    loss = m["lm loss"].as_dict()
    assert 10 not in loss  # every step of the interval skipped: no loss printed
    assert curves.skipped.tolist() == [10]
    assert "lm loss" not in curves.missing
    assert loss[20] == 12.10588 and loss[30] == 26.48119 and loss[130] == 7.893549
    grad = m["grad-norm"].as_dict()
    assert 20 not in grad and grad[30] == 67.033
    assert m["learning-rate"].as_dict()[10] == 0.0
    assert m["lm loss validation"].as_dict() == {100: 8.095942}
    assert len(m["lm loss"]) == 12
    # [Rank N] memory lines run together never leak into the metrics.
    assert "allocated" not in m and "reserved" not in m


def test_deepspeed_overflow_lines_between_records(logs: Path) -> None:
    curves = read_curves(logs / "07_bigscience-104b-deepspeed-overflow-interleaved.log")
    m = curves.metrics
    assert sorted(m["lm loss"].as_dict()) == list(range(17060, 17069))
    assert m["lm loss"].as_dict()[17062] == 4.374269
    assert m["loss-scale"].as_dict()[17068] == 32768.0
    assert m["skipped-iterations"].as_dict()[17064] == 0.0
    assert m["consumed-tokens"].as_dict()[17060] == 16643457024
    assert m["TFLOPs"].as_dict()[17061] == 32.03


def test_megatron_v1_without_consumed_samples(logs: Path) -> None:
    curves = read_curves(logs / "10_megatron-v1-2021-no-consumed-samples-slurm-cancel.log")
    m = curves.metrics
    assert m["lm loss"].as_dict() == {1: 12.52221, 2: 12.51770, 3: 40.75232, 4: 38.99556}
    assert "consumed-samples" not in m and "grad-norm" not in m
    assert m["iteration-time"].as_dict()[1] == pytest.approx(123.7424)


def test_moe_log_with_throughput_num_zeros_params_norm(logs: Path) -> None:
    curves = read_curves(logs / "12_megatron-core-moe-2024-throughput-numzeros-paramsnorm.log")
    m = curves.metrics
    assert list(m["lm loss"].as_dict())[:2] == [20, 40]
    assert m["lm loss"].as_dict()[300] == 6.147610
    assert m["load_balancing_loss"].as_dict()[20] == 1.436231
    assert m["num-zeros"].as_dict()[20] == 328659928.0
    assert m["params-norm"].as_dict()[20] == 1104.931
    assert m["throughput"].as_dict()[20] == 11.9


def test_fp16_skips_and_validation_every_50(logs: Path) -> None:
    curves = read_curves(logs / "13_megatron-2025-timestamp-skipped-fp16-validation.log")
    m = curves.metrics
    assert curves.skipped.tolist() == [10]
    assert m["lm loss"].as_dict()[20] == 10.72453
    assert m["lm loss"].as_dict()[30] == 10.38769
    assert m["grad-norm"].as_dict()[20] == 3.874 and 30 not in m["grad-norm"].as_dict()
    assert m["num-zeros"].as_dict()[20] == 71.0
    assert m["lm loss validation"].as_dict() == {50: 8.889540, 100: 7.398865, 150: 7.269834}
    assert m["lm loss"].as_dict()[160] == 7.211591


def test_launcher_prefix_with_hostname(logs: Path) -> None:
    curves = read_curves(logs / "15_megatron-2025-torchrun-hostname-role-prefix-leonardo.log")
    loss = curves.metrics["lm loss"].as_dict()
    assert list(loss) == [50, 100, 150, 200, 250, 300, 350]
    assert loss[50] == 6.258318 and loss[350] == 3.181144
    assert curves.metrics["throughput"].as_dict()[100] == 142.7


def test_mtp_loss_key_with_space_and_digit(logs: Path) -> None:
    curves = read_curves(logs / "26_doc-megatron-bridge-mtp_1-loss.log")
    m = curves.metrics
    assert m["lm loss"].as_dict() == {100: 7.968678}
    assert m["mtp_1 loss"].as_dict() == {100: 7.925096}
    assert m["load_balancing_loss"].as_dict() == {100: 1.329517}
