"""The benchmark's pure parts on a tiny budget: the interleaved training race, step costs, the table and the JSON.

Not a timed test: nothing here asserts a speed, only that the numbers are measured, keyed and reported.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))  # the benchmarks are scripts, not a package

import bench  # noqa: E402
import bench_rows  # noqa: E402
import race_bench  # noqa: E402
import ui_bench  # noqa: E402

from core_model import ModelConfig  # noqa: E402
from core_model.tasks import TaskSpec  # noqa: E402
from core_model.training import TrainConfig  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:The PyTorch API of nested tensors", "ignore:Support for mismatched key_padding_mask"
)  # nn.Transformer's notices
CPU = torch.device("cpu")
TINY_RACE = {"check_every": 1, "screen_n": 4, "confirm_n": 8}


def _sides() -> list:
    task = TaskSpec()
    return [race_bench.OursSide("ours", ModelConfig(), TrainConfig(), task, CPU), race_bench.BaselineSide(task, CPU)]


def test_race_steps_every_side_in_turn_and_reports_an_unreached_target():
    results = race_bench.race(_sides(), target=1.5, max_steps=3, **TINY_RACE)  # exact match never exceeds 1
    assert set(results) == {"ours", "nn.Transformer"}
    for r in results.values():
        assert r.steps is None and r.steps_run == 3 and r.seconds > 0


def test_race_stops_each_side_at_its_first_confirmed_check():
    results = race_bench.race(_sides(), target=0.0, max_steps=5, **TINY_RACE)
    assert {r.steps for r in results.values()} == {1}


def test_time_to_99_rows_give_every_key_as_a_number():
    rows = race_bench.time_to_99_rows(CPU, max_steps=2, target=0.0, **TINY_RACE)
    data = bench_rows.metrics_json(rows)
    for key in (
        "time_to_99_ratio_vs_nn_transformer",
        "time_to_99_ratio_rope",
        "time_to_99_ratio_sinusoidal",
        "time_to_99_s_rope",
        "time_to_99_s_sinusoidal",
        "time_to_99_s_nn_transformer",
        "time_to_99_steps_rope",
        "time_to_99_steps_sinusoidal",
        "time_to_99_steps_nn_transformer",
    ):
        assert isinstance(data[key], float) and math.isfinite(data[key]) and data[key] > 0, key
    default = ModelConfig().positional
    assert data["time_to_99_ratio_vs_nn_transformer"] == data[f"time_to_99_ratio_{default}"]


def test_an_unreached_target_leaves_its_keys_out_and_fails_its_bar():
    rows = race_bench.time_to_99_rows(CPU, max_steps=1, target=1.5, **TINY_RACE)
    data = bench_rows.metrics_json(rows)
    assert not any(key.startswith("time_to_99_ratio") for key in data)
    ours = [r for r in rows if r.bar is not None]
    assert ours and all(r.status() == "FAIL" and "not reached" in r.note for r in ours)


def test_step_cost_times_exactly_the_requested_steps_on_both_sides():
    ours, base, spent = bench.measure_step_cost(64, 2, CPU, warmup=1)
    assert ours.steps == base.steps == 3
    assert all(seconds > 0 and tokens > 0 for seconds, tokens in spent.values())
    data = bench_rows.metrics_json(bench.step_cost_rows(64, 2, CPU))
    assert {"train_step_ms", "tokens_per_s", "train_step_ratio_vs_nn_transformer_d64"} <= data.keys()
    assert data["train_step_ratio_vs_nn_transformer_d64"] == pytest.approx(
        data["train_step_ms"] / data["train_step_ms_nn_transformer_d64"]
    )


def test_width_config_at_64_is_the_default_model():
    assert bench.width_config(64) == ModelConfig()
    wide = bench.width_config(512)
    assert (wide.d_model, wide.d_ff, wide.n_heads, wide.n_encoder_layers) == (512, 2048, 8, 6)


def test_table_shows_pass_fail_and_skips_and_json_keeps_only_finite_numbers(tmp_path):
    rows = [
        bench_rows.Row("fast", 10.0, "ms", "a_ms", bench_rows.Bar("<=", 16.0)),
        bench_rows.Row("slow", 20.0, "ms", "b_ms", bench_rows.Bar("<=", 16.0)),
        bench_rows.Row("ratio", 3.0, "s", "c_s", bench_rows.Bar("<=", 1.0, on_ratio=True), 6.0, ratio_key="c_ratio"),
        bench_rows.Row("gap", 5.0, "Hz", "d_hz", extra={"d_gap_ms": float("inf")}),
        bench_rows.skipped("not measured"),
    ]
    table = bench_rows.format_table(rows).splitlines()
    assert "pass" in table[2] and "FAIL" in table[3] and "pass" in table[4] and "0.5" in table[4]
    assert "skipped in --quick" in table[6]
    data = bench_rows.metrics_json(rows)
    assert data == {"a_ms": 10.0, "b_ms": 20.0, "c_s": 3.0, "c_ratio": 0.5, "d_hz": 5.0}
    json.dumps(data, allow_nan=False)


def test_tick_stats_report_rate_and_worst_gap():
    stamps = np.array([0.0, 0.016, 0.032, 0.132, 0.148])  # one 100 ms stall
    hz, worst, _p99 = ui_bench.tick_stats(stamps)
    assert hz == pytest.approx(4 / 0.148)
    assert worst == pytest.approx(100.0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the message is for machines without CUDA")
def test_device_cuda_without_cuda_exits_with_a_clear_message(capsys):
    with pytest.raises(SystemExit) as exc:
        bench.parse_args(["--device", "cuda"])
    assert exc.value.code == 2
    assert "CUDA is not available" in capsys.readouterr().err


def test_time_to_99_takes_medians_over_seeds_and_a_missed_seed_means_not_reached():
    runs = [race_bench.RaceResult("x", s, t, s) for s, t in ((50, 5.0), (75, 9.0), (25, 2.0))]
    median = race_bench._median_result(runs)
    assert (median.steps, median.seconds) == (50, 5.0)
    missed = race_bench._median_result([*runs[:2], race_bench.RaceResult("x", None, 30.0, 600)])
    assert missed.steps is None


def test_time_to_99_rows_race_once_per_seed():
    rows = race_bench.time_to_99_rows(CPU, max_steps=1, target=0.0, seeds=(0, 1), **TINY_RACE)
    assert all("median of 2 seeds" in r.note for r in rows if r.key and r.key.startswith("time_to_99_s"))


def test_page_rows_time_the_shipped_page_and_a_blank_one_of_its_size():
    import page_bench

    if not page_bench.available():
        if os.environ.get("CI"):
            pytest.fail("the page's benchmark needs selenium and Debian's chromium and chromium-driver")
        pytest.skip("the page's benchmark needs selenium and Debian's chromium and chromium-driver")
    rows = bench.page_rows(quick=True)
    items = bench_rows.metrics_json(rows)
    assert set(items) == {"page_open_s", "page_blank_open_s", "page_open_ratio_vs_blank"}
    assert 0 < items["page_blank_open_s"] < items["page_open_s"]  # drawing the maps costs something
    assert "MB, median of 2" in rows[0].note and rows[0].status() in ("pass", "FAIL")


def test_a_task_race_names_its_task_and_counts_it_against_the_minute():
    rows = race_bench.task_race_rows(torch.device("cpu"), max_steps=10, check_every=5, names=("addition",))
    first, share = rows
    assert first.name == "time to 99% EM from scratch: addition" and first.value is None and first.status() == "FAIL"
    assert "not reached in 10 steps" in first.note and "length 15" in first.note
    assert share.value == 0 and share.status() == "FAIL" and share.note == "0 of 1 tasks"
