"""What torch's thread count on the inference and training threads does to the GUI thread (a table and --json).

Run: python tests/benchmarks/threads_bench.py [--rounds N] [--json PATH]

One real window. For each thread count (1 and 2) the inference thread is switched to it and keystrokes are timed
against their floor at length 32 (keystroke_bench.measure_with_floor), then training runs with that many threads
while a 60 Hz timer ticks on the GUI thread (ui_bench.measure_ui_rate_while_training). The counts alternate
1, 2, 2, 1, ... so that a drift of the machine's speed weighs on both alike; each number is the median over rounds.
The app's choice lives in visualizer/workers/torch_threads.py.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = Path(__file__).resolve().parent
for _path in (HERE.parents[1], HERE):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import torch  # noqa: E402

log = logging.getLogger("threads_bench")
COUNTS = (1, 2)


def set_inference_threads(window, count: int) -> None:
    """Choose the torch thread count of the passes (each pass sets it on its pool thread) and check it on a slot
    built as the session's is."""
    import ui_bench

    from visualizer.workers import torch_threads
    from visualizer.workers.inference import keystroke_slot

    torch_threads.INFERENCE_THREADS = count
    probe, done = keystroke_slot(), []
    probe.finished.connect(done.append)
    probe.failed.connect(lambda message: done.append(-1))
    probe.submit(lambda _state: torch.get_num_threads())
    ui_bench.wait_until(lambda: bool(done), 10.0, "the inference thread")
    probe.shutdown()
    if done[0] != count:
        raise RuntimeError(f"the inference thread runs {done[0]} threads, not {count}")


def measure(window, count: int, n_keys: int, seconds: float) -> dict[str, float]:
    """Keystroke / floor at length 32 and the GUI's tick rate while training, both with `count` torch threads."""
    import keystroke_bench
    import ui_bench

    from visualizer.workers import torch_threads

    set_inference_threads(window, count)
    result, floor = keystroke_bench.measure_with_floor(window, 32, n_keys)
    worst = max(result.p95_ms, key=lambda k: result.p95_ms[k] / floor[k])
    torch_threads.TRAINING_THREADS = count
    try:
        rate = ui_bench.measure_ui_rate_while_training(window, seconds, "cpu")
    finally:
        torch_threads.TRAINING_THREADS = 1
        set_inference_threads(window, 1)
    return {
        "keystroke_ratio": result.p95_ms[worst] / floor[worst],
        "keystroke_ms_p95": result.p95_ms[worst],
        "ui_hz_while_training": rate.hz,
        "ui_worst_gap_ms": rate.worst_gap_ms,
        "train_steps_per_s": rate.train_steps / rate.seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        choices=range(1, 11),
        metavar="1-10",
        help="each round measures 1 and 2 threads (in alternating order)",
    )
    parser.add_argument(
        "--keys", type=int, default=40, choices=range(8, 401), metavar="8-400", help="keystrokes per grid tab"
    )
    parser.add_argument("--seconds", type=float, default=8.0, help="training seconds per measurement (1-60)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the medians as one JSON object")
    ns = parser.parse_args(argv)
    if not 1.0 <= ns.seconds <= 60.0:
        parser.error("--seconds must be from 1 to 60")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    torch.set_num_threads(1)
    import ui_bench

    samples: dict[int, list[dict[str, float]]] = {count: [] for count in COUNTS}
    with ui_bench.scratch_window("threads-bench-") as window:
        for round_ in range(ns.rounds):
            for count in COUNTS if round_ % 2 == 0 else reversed(COUNTS):
                log.info("round %d: %d thread(s)", round_ + 1, count)
                samples[count].append(measure(window, count, ns.keys, ns.seconds))
    medians = {
        count: {key: statistics.median(s[key] for s in runs) for key in runs[0]} for count, runs in samples.items()
    }
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        f"torch threads on the inference and training threads ({ns.rounds} rounds, medians; "
        f"{os.cpu_count()} cores, load average {load})",
        f"{'threads':>8} {'key/floor@32':>13} {'key p95 ms':>11} {'UI Hz train':>12} {'worst gap ms':>13} "
        f"{'steps/s':>8}",
    ]
    for count, m in medians.items():
        lines.append(
            f"{count:>8} {m['keystroke_ratio']:>13.2f} {m['keystroke_ms_p95']:>11.1f} "
            f"{m['ui_hz_while_training']:>12.1f} {m['ui_worst_gap_ms']:>13.0f} {m['train_steps_per_s']:>8.1f}"
        )
    sys.stdout.write("\n".join(lines) + "\n")
    if ns.json is not None:
        ns.json.write_text(
            json.dumps({f"threads_{c}_{k}": v for c, m in medians.items() for k, v in m.items()}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
