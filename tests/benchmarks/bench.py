"""Attention Playground's benchmark entry point: every number of the issue "Benchmarks and the GPU path" in one table.

Run: python tests/benchmarks/bench.py [--quick] [--json PATH] [--device cpu|cuda]

Training comparisons interleave our model and torch.nn.Transformer step by step (the machine is shared, so noise
hits both sides alike); evaluation time is never counted. Qt measurements live in ui_bench.py.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = Path(__file__).resolve().parent
for _path in (HERE.parents[1], HERE):  # the repository (core_model, visualizer) and the sibling benchmarks
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import torch
from bench_rows import Bar, Row, format_table, metrics_json, skipped
from race_bench import BaselineSide, OursSide, task_race_rows, time_to_99_rows

from core_model import ModelConfig
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig

log = logging.getLogger("bench")
KEYSTROKE_LENGTHS = (10, 32, 128, 256)


# ----- training speed ---------------------------------------------------------------------------------------------
def width_config(d_model: int) -> ModelConfig:
    """Our model at the widths training_bench.step_cost compares (the default model at 64)."""
    wide = d_model != 64
    layers = 6 if wide else 2
    return replace(
        ModelConfig(),
        d_model=d_model,
        d_ff=4 * d_model,
        n_heads=8 if wide else 4,
        n_encoder_layers=layers,
        n_decoder_layers=layers,
    )


def measure_step_cost(
    d_model: int, steps: int, device: torch.device, warmup: int = 2, batch_size: int = 80
) -> tuple[OursSide, BaselineSide, dict[str, tuple[float, int]]]:
    """Both models at one width, stepped in turn; returns (seconds, tokens) of each side's timed steps.

    Like training_bench.step_cost (same widths, batch 80 on both sides), but interleaved and on `device`.
    """
    task = TaskSpec()
    ours = OursSide(
        f"ours d{d_model}", width_config(d_model), TrainConfig(batch_size=batch_size, device=str(device)), task, device
    )
    base = BaselineSide(task, device, d_model, batch_size)
    for _ in range(warmup):
        ours.step(), base.step()
    start = {s.name: (s.seconds, s.tokens) for s in (ours, base)}
    for k in range(steps):
        for side in (ours, base) if k % 2 else (base, ours):
            side.step()
    spent = {s.name: (s.seconds - start[s.name][0], s.tokens - start[s.name][1]) for s in (ours, base)}
    return ours, base, spent


def step_cost_rows(d_model: int, steps: int, device: torch.device) -> list[Row]:
    ours, base, spent = measure_step_cost(d_model, steps, device)
    (ours_s, ours_tok), (base_s, base_tok) = spent[ours.name], spent[base.name]
    default = d_model == ModelConfig().d_model
    suffix = "" if default else f"_d{d_model}"
    label = "default model, d64" if default else f"d_model {d_model}"
    note = f"{steps} steps each, batch 80"
    return [
        Row(
            f"train step: {label}",
            1000 * ours_s / steps,
            "ms",
            f"train_step_ms{suffix}",
            baseline=1000 * base_s / steps,
            baseline_key=f"train_step_ms_nn_transformer_d{d_model}",
            ratio_key=f"train_step_ratio_vs_nn_transformer_d{d_model}",
            note=note,
        ),
        Row(
            f"tokens/s: {label}",
            ours_tok / ours_s,
            "tok/s",
            f"tokens_per_s{suffix}",
            baseline=base_tok / base_s,
            baseline_key=f"tokens_per_s_nn_transformer_d{d_model}",
            note=note,
        ),
    ]


# ----- Qt measurements (ui_bench, grid_bench) ------------------------------------------------------------------
def startup_rows(runs: int) -> list[Row]:
    import latency_bench
    import ui_bench

    result, torch_runs = ui_bench.measure_startup(runs, lambda: latency_bench.import_torch_s(1))
    torch_s = statistics.median(torch_runs)
    note = f"median of {runs}" if runs > 1 else "1 run"
    ready = ", ".join(f"{t:.2f}" for t in result.model_ready_s)
    return [
        Row(
            "start-up: launch to first paint",
            result.median_first_paint_s,
            "s",
            "startup_s",
            Bar("<=", 1.5),
            note=f"{note}: {', '.join(f'{t:.2f}' for t in result.first_paint_s)}",
        ),
        Row(
            "start-up: launch to model ready",
            result.median_model_ready_s,
            "s",
            "model_ready_s",
            Bar("<=", 1.3, on_ratio=True),
            torch_s,
            "import_torch_s",
            "model_ready_ratio_vs_import_torch",
            note=f"{note}: {ready}; baseline: python -c 'import torch' after each launch: "
            f"{', '.join(f'{t:.2f}' for t in torch_runs)}",
        ),
    ]


def keystroke_rows(window, lengths: Sequence[int], n_keys: int) -> list[Row]:
    """p95 key-to-repaint per source length; the headline is length 32 with the worst of the three grid tabs.

    Each length also gets its floor (latency_bench.BareFloor: capture + a bare ImageItem's upload and paint of the
    same pixels, per tab, measured in blocks alternating with the keystrokes) and the worst tab's keystroke / floor
    ratio.
    """
    import keystroke_bench
    import latency_bench

    rows = []
    for length in lengths:
        r, floor = keystroke_bench.measure_with_floor(window, length, n_keys)
        per_tab = ", ".join(f"{k.split('_')[0]} {v:.1f}" for k, v in r.p95_ms.items())
        paints = min(r.paints_per_key.values())
        note = f"worst tab; p95 per tab: {per_tab}; {n_keys} keys/tab, {paints:g} grid paints/key"
        if r.length != length:
            note += f"; {length} capped at the model's {r.length}"
        key = "keystroke_ms_p95" if length == 32 else f"keystroke_ms_p95_len{r.length}"
        extra = {f"keystroke_ms_p95_len32_{kind}": v for kind, v in r.p95_ms.items()} if length == 32 else {}
        if length == 32 and len(lengths) > 1:
            extra["keystroke_ms_p95_len32"] = r.worst_p95_ms
        rows.append(
            Row(
                f"keystroke -> grids repainted, length {r.length}",
                r.worst_p95_ms,
                "ms",
                key,
                Bar("<=", 16.0) if length == 32 else None,
                note=note,
                extra=extra,
            )
        )
        worst = max(r.p95_ms, key=lambda k: r.p95_ms[k] / floor[k])
        ratio = r.p95_ms[worst] / floor[worst]
        floors = ", ".join(f"{k.split('_')[0]} {v:.1f}" for k, v in floor.items())
        bar = Bar("<=", 1.5) if length in (32, 128) else None
        rows.append(
            Row(
                f"keystroke / floor, length {r.length}",
                ratio,
                "x",
                f"keystroke_ratio_vs_floor_{length}" if bar else f"keystroke_ratio_vs_floor_len{r.length}",
                bar,
                note=f"worst tab ({worst.split('_')[0]}); floor p95 per tab: {floors}",
                extra={f"keystroke_floor_ms_p95_len{r.length}": floor[worst]},
            )
        )
        hot, cold = latency_bench.forward_after_pause(window, n_keys)
        rows.append(
            Row(
                f"forward pass after a 5 ms pause, length {r.length}",
                cold,
                "ms",
                f"forward_after_pause_ms_p95_len{r.length}",
                None,
                hot,
                f"forward_back_to_back_ms_p95_len{r.length}",
                f"forward_pause_ratio_len{r.length}",
                note="informational: the floor's passes run back to back, a keystroke's after a frame",
            )
        )
    return rows


def gc_rows() -> list[Row]:
    """A full garbage collection in the ready window, against the same before the app's start-up freeze."""
    import latency_bench

    after, before = latency_bench.full_gc_ms()
    return [
        Row(
            "full garbage collection in the ready app",
            round(after, 3),
            "ms",
            "full_gc_ms",
            note=f"informational: the GUI thread stalls this long when one runs; {before:.0f} ms before the "
            "app's start-up freeze",
            extra={"full_gc_ms_unfrozen": before},
        )
    ]


def burst_rows() -> list[Row]:
    """8 keys 10 ms apart on a slow model (d_model 512, 6+6 layers), worst of 3 bursts."""
    import latency_bench

    r = latency_bench.measure_burst()
    note = (
        f"slow model: {r.pass_ms:.0f} ms a pass; final maps {'equal' if r.final_matches else 'DIFFER from'} "
        "a direct pass on the final text"
    )
    return [
        Row(
            "burst of 8 keys: forward passes after the first",
            r.passes_after_first if r.final_matches else None,
            "",
            "burst_forwards_per_8_keys",
            Bar("<=", 2.0),
            note=note,
        ),
        Row(
            "burst of 8 keys: longest GUI-thread stall",
            r.max_gap_ms,
            "ms",
            "ui_max_gap_ms_during_burst",
            Bar("<=", 50.0),
            note="100 Hz timer from the first key to the final frame",
        ),
    ]


def ui_rate_rows(window, device: torch.device, seconds: float, also_playground: bool) -> list[Row]:
    """60 Hz timer on the GUI thread while training runs; Trainer tab shown (where a user watches it)."""
    import ui_bench

    rows = []
    tabs = (("Trainer", None, ""), ("Playground", window.playground, "_playground"))  # None: the Trainer tab
    for label, tab, suffix in tabs if also_playground else tabs[:1]:
        r = ui_bench.measure_ui_rate_while_training(window, seconds, str(device), tab=tab)
        rows.append(
            Row(
                f"UI Hz while training ({label} tab shown)",
                r.hz,
                "Hz",
                f"ui_hz_while_training{suffix}",
                Bar(">=", 55.0),
                note=f"worst gap {r.worst_gap_ms:.0f} ms, p99 {r.p99_gap_ms:.0f} ms; "
                f"{r.train_steps} steps in {r.seconds:g} s",
                extra={
                    f"ui_worst_gap_ms_while_training{suffix}": r.worst_gap_ms,
                    f"train_steps_per_s_during_ui{suffix}": r.train_steps / r.seconds,
                },
            )
        )
    return rows


def window_rows(quick: bool, device: torch.device, settings_dir: Path) -> list[Row]:
    """One real MainWindow for the keystroke and UI-rate measurements, closed cleanly afterwards."""
    import ui_bench

    ui_bench.make_app(settings_dir)
    window = ui_bench.open_window(str(device))
    try:
        rows = gc_rows()  # first: the app freezes its start-up objects once ready, and the rest runs as in the app
        lengths = (32,) if quick else KEYSTROKE_LENGTHS
        rows += keystroke_rows(window, lengths, 16 if quick else 40)  # 4 blocks of an even number of keys
        if quick:
            rows += [skipped(f"keystroke, length {n}") for n in KEYSTROKE_LENGTHS if n != 32]
        rows += ui_rate_rows(window, device, 3.0 if quick else 10.0, also_playground=not quick)
        if quick:
            rows.append(skipped("UI Hz while training (Playground tab shown)"))
    finally:
        ui_bench.close_window(window)
    return rows


def grid_rows(seconds: float) -> list[Row]:
    import grid_bench

    baseline = grid_bench.measure_single_imageitem_fps(256, seconds)
    fps = grid_bench.measure_grid_fps(6, 8, 32, seconds)
    return [
        Row(
            "grid fps: 6x8 maps (+avg) at 32x32",
            fps,
            "fps",
            "grid48_fps",
            Bar(">=", 60.0),
            baseline,
            "grid48_baseline_single_imageitem_fps",
            "grid48_ratio_vs_single_imageitem",
            note="baseline: one 256x256 ImageItem",
        )
    ]


def rss_rows(steps: int, device: torch.device, quick: bool) -> list[Row]:
    import ui_bench

    r = ui_bench.measure_peak_rss(steps, str(device))
    note = f"after {r.steps} training steps in the window ({r.seconds:.0f} s); loaded: {r.loaded_rss_mib:.0f} MiB"
    if quick:
        note += "; --quick: fewer steps than the full run's 1000"
    return [
        Row(
            "peak RSS of the app",
            r.peak_rss_mib,
            "MiB",
            "peak_rss_mib",
            note=note,
            extra={"peak_rss_steps": r.steps, "loaded_rss_mib": r.loaded_rss_mib},
        )
    ]


def causal_rows(device: torch.device, quick: bool) -> list[Row]:
    import causal_bench

    t = causal_bench.measure(device, repeats=2 if quick else 5)
    note = f"shipped copy model, source length 16, median of {2 if quick else 5}"
    return [
        Row(
            "patching sweep: every head and encoder position",
            t.patch_sweep_s,
            "s",
            "patch_sweep_s",
            Bar("<=", 1.0),
            note=note,
        ),
        Row(
            "patching sweep vs the same batched forwards",
            t.patch_sweep_s,
            "s",
            None,
            Bar("<=", 1.5, on_ratio=True),
            t.same_forwards_s,
            "patch_sweep_forwards_s",
            "patch_sweep_ratio_vs_forwards",
            note="baseline: the sweep's two batched passes without hooks",
        ),
        Row("attribution: 32 IG steps + occlusion", t.attribute_s, "s", "attribute_s", Bar("<=", 1.0), note=note),
        Row(
            "circuits: every head's QK/OV, composition, baseline",
            t.circuits_s,
            "s",
            "circuits_s",
            Bar("<=", 1.0),
            note=f"shipped copy model, 100 baseline samples, median of {2 if quick else 5}",
        ),
    ]


def page_rows(quick: bool) -> list[Row]:
    import page_bench

    name = "interactive page opens in Chromium (16 tokens)"
    if not page_bench.available():
        return [skipped(name, "skipped: needs selenium and Debian's chromium and chromium-driver")]
    repeats = 2 if quick else 5
    t = page_bench.measure(repeats)
    note = f"shipped copy model, {t.size_bytes / 1e6:.2f} MB, median of {repeats}"
    return [
        Row(name, t.open_s, "s", "page_open_s", Bar("<=", 1.0), note=note),
        Row(
            "interactive page vs a page of its size that draws nothing",
            t.open_s,
            "s",
            None,
            None,
            t.blank_s,
            "page_blank_open_s",
            "page_open_ratio_vs_blank",
            note="what the page's own script costs",
        ),
    ]


# ----- orchestration ----------------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a < 60 s smoke run: fewer samples, no time-to-99 race")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as one JSON object")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the training parts run")
    ns = parser.parse_args(argv)
    if ns.device == "cuda" and not torch.cuda.is_available():
        parser.exit(
            2,
            f"bench.py: --device cuda: CUDA is not available on this machine (torch {torch.__version__}, "
            f"{'a CPU-only build' if torch.version.cuda is None else 'no usable GPU'}); use --device cpu\n",
        )
    return ns


def machine_info(device: torch.device, quick: bool) -> str:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    gpu = f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return (
        f"Attention Playground benchmarks{' (--quick)' if quick else ''}\n"
        f"machine: {platform.machine()}, {cores} usable CPU cores of {os.cpu_count()}, load average {load}\n"
        f"python {platform.python_version()}, torch {torch.__version__}, device {device}{gpu}; "
        f"torch threads: {threads_text()}"
    )


def threads_text() -> str:
    """Which torch thread count each bar ran with: the app's choice per thread, and this process's own."""
    from visualizer.workers import torch_threads

    return (
        f"inference thread {torch_threads.INFERENCE_THREADS} (keystroke and burst rows), training thread "
        f"{torch_threads.TRAINING_THREADS} (UI Hz rows), this process {torch.get_num_threads()} (training-speed "
        "and time-to-99 rows)"
    )


def run_all(quick: bool, device: torch.device, scratch: Path) -> list[Row]:
    """Each measurement in turn: child processes first (a fresh machine state), then the in-process ones."""
    steps = (
        ("start-up", lambda: startup_rows(1 if quick else 3)),
        ("window: keystrokes, UI rate", lambda: window_rows(quick, device, scratch)),
        ("burst of keys on a slow model", lambda: _burst_or_skip(quick)),
        ("grid fps", lambda: grid_rows(1.0 if quick else 2.0)),
        ("train step d64", lambda: step_cost_rows(64, 10 if quick else 40, device)),
        ("train step d512", lambda: _d512_or_skip(quick, device)),
        ("time to 99%", lambda: _race_or_skip(quick, device)),
        ("time to 99% per task", lambda: _task_races_or_skip(quick, device)),
        ("causal lab", lambda: causal_rows(device, quick)),
        ("interactive page", lambda: page_rows(quick)),
        ("peak RSS", lambda: rss_rows(100 if quick else 1000, device, quick)),
    )
    rows: list[Row] = []
    for name, measure in steps:
        start = time.perf_counter()
        log.info("measuring %s ...", name)
        rows += measure()
        log.info("  %s took %.1f s", name, time.perf_counter() - start)
    return rows


def _burst_or_skip(quick: bool) -> list[Row]:
    if quick:
        return [skipped("burst of 8 keys on a slow model")]
    return burst_rows()


def _d512_or_skip(quick: bool, device: torch.device) -> list[Row]:
    if quick and device.type == "cpu":  # ~3 s a step on one CPU thread
        return [skipped("train step / tokens/s: d_model 512")]
    return step_cost_rows(512, 10, device)


def _race_or_skip(quick: bool, device: torch.device) -> list[Row]:
    if quick:
        return [skipped("time to 99% copy EM, ours vs nn.Transformer")]
    return time_to_99_rows(device)


def _task_races_or_skip(quick: bool, device: torch.device) -> list[Row]:
    if quick:
        return [skipped("time to 99% EM per task, ours vs nn.Transformer")]
    return task_race_rows(device)


def main(argv: Sequence[str] | None = None) -> int:
    ns = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    torch.set_num_threads(1)
    for noise in ("The PyTorch API of nested tensors", "Support for mismatched key_padding_mask"):
        warnings.filterwarnings("ignore", message=noise)  # nn.Transformer's own notices, once per run
    device = torch.device(ns.device)
    header = machine_info(device, ns.quick)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-") as scratch:
        rows = run_all(ns.quick, device, Path(scratch))
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    sys.stdout.write(
        f"{header}\n\n{format_table(rows)}\n\ntotal {time.perf_counter() - start:.0f} s; "
        f"load average at the end {load}\n"
    )
    if ns.json is not None:
        from visualizer.workers import torch_threads

        numbers = {
            **metrics_json(rows),
            "threads_inference": torch_threads.INFERENCE_THREADS,
            "threads_training": torch_threads.TRAINING_THREADS,
            "threads_process": torch.get_num_threads(),
        }
        ns.json.write_text(json.dumps(numbers, indent=2, allow_nan=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
