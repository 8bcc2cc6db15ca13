"""Time to 99% exact match, our model against torch.nn.Transformer, stepped in turn on one machine: on copy (every
positional kind, three seeds) and on every task of the library with the recipe the Trainer starts from.

bench.py prints these rows with the others; evaluation time is never counted.
"""

from __future__ import annotations

import copy
import logging
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from bench_rows import Bar, Row
from torch import nn
from training_bench import TorchSeq2Seq, baseline_exact_match

from core_model import PAD, ModelConfig, build_model
from core_model.tasks import TaskSpec, make_batch
from core_model.training import TrainConfig, Trainer, default_recipe, evaluate

log = logging.getLogger("bench")


# ----- training sides, stepped in turn --------------------------------------------------------------------------
class OursSide:
    """The app's model and TrainConfig recipe, one optimisation step at a time (Trainer.train_steps(1))."""

    def __init__(
        self,
        name: str,
        config: ModelConfig,
        train: TrainConfig,
        task: TaskSpec,
        device: torch.device,
        length: int | None = None,
    ):
        """length: where exact match is measured (default the task's max_len)."""
        self.name, self.task, self.device = name, task, device
        self.length = task.max_len if length is None else length
        self.trainer = Trainer(build_model(config, seed=train.seed), task, train, device=device)
        self.steps, self.seconds, self.tokens = 0, 0.0, 0

    def step(self) -> None:
        metrics = next(self.trainer.train_steps(1))  # past TrainConfig.steps the schedule holds its floor
        self.steps, self.seconds, self.tokens = metrics.step, metrics.elapsed_s, self.tokens + metrics.tokens

    def exact_match(self, n: int) -> float:
        return evaluate(self.trainer.model, self.task, n=n, length=self.length, device=self.device).exact_match


class BaselineSide:
    """training_bench's nn.Transformer recipe (Adam 1e-3, batch 80), its step timed like train_baseline's."""

    def __init__(
        self,
        task: TaskSpec,
        device: torch.device,
        d_model: int = 64,
        batch_size: int = 80,
        seed: int = 0,
        length: int | None = None,
    ):
        self.name, self.task, self.device, self.batch_size = "nn.Transformer", task, device, batch_size
        self.length = task.max_len if length is None else length
        torch.manual_seed(seed)
        wide = d_model != 64  # training_bench's widths: 4 heads, 2+2 layers at 64; 8 heads, 6+6 layers wider
        self.model = TorchSeq2Seq(len(task.vocabulary), d_model, 8 if wide else 4, 6 if wide else 2, 4 * d_model)
        self.model.to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.generator = torch.Generator().manual_seed(seed)
        self.steps, self.seconds, self.tokens = 0, 0.0, 0

    def step(self) -> None:
        batch = make_batch(self.task, self.batch_size, self.generator).to(self.device)
        start = time.perf_counter()
        log_probs = self.model(batch.src, batch.tgt_in)
        loss = nn.functional.nll_loss(log_probs.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)  # ours syncs inside the step when it reads the loss
        self.seconds += time.perf_counter() - start
        self.steps += 1
        self.tokens += batch.n_tokens

    def exact_match(self, n: int) -> float:
        model = self.model if self.device.type == "cpu" else copy.deepcopy(self.model).cpu()  # its decoder is CPU-only
        return baseline_exact_match(model, self.task, n, self.length)


@dataclass(frozen=True)
class RaceResult:
    name: str
    steps: int | None  # steps to the confirmed target, None when the cap came first
    seconds: float  # optimisation time until then (or until the cap)
    steps_run: int


def race(
    sides: Sequence,
    *,
    target: float = 0.99,
    check_every: int = 5,
    screen_n: int = 300,
    confirm_n: int = 1000,
    max_steps: int = 2000,
) -> dict[str, RaceResult]:
    """Step every side in turn (alternating who goes first); each stops once it reaches `target` exact match on
    `screen_n` sequences and then on `confirm_n`; evaluations are not timed.

    A side is checked every `check_every` steps, so its time is counted to the first check past the target: a
    coarse grid overstates the fastest side the most (25 steps are a third of RoPE's ~60, a sixth of the
    baseline's ~150), which is why the checks are 5 steps apart.
    """
    active, done = list(sides), {}
    for step in range(1, max_steps + 1):
        for side in active if step % 2 else active[::-1]:
            side.step()
        if step % check_every:
            continue
        for side in list(active):
            screen = side.exact_match(screen_n)
            log.info("  step %4d  %-22s exact match %.3f (%d seqs)", step, side.name, screen, screen_n)
            if screen >= target and side.exact_match(confirm_n) >= target:
                done[side.name] = RaceResult(side.name, step, side.seconds, step)
                active.remove(side)
        if not active:
            break
    done.update({s.name: RaceResult(s.name, None, s.seconds, s.steps) for s in active})
    return done


def time_to_99_rows(
    device: torch.device, max_steps: int = 2000, seeds: Sequence[int] = (0, 1, 2), **race_kw
) -> list[Row]:
    """Our default model (each positional kind, its default recipe) vs nn.Transformer, to 99% copy exact match.

    One race per seed (both sides seeded alike); every number is the median over the seeds, each ratio the median
    of the per-seed ratios (a side that misses the target in any seed has no median).
    """
    task = TaskSpec()
    per_seed = []
    for seed in seeds:
        sides = [
            OursSide(
                pe,
                replace(ModelConfig(), positional=pe),
                default_recipe(pe, device=str(device), seed=seed),
                task,
                device,
            )
            for pe in ("rope", "sinusoidal")
        ]
        per_seed.append(race([*sides, BaselineSide(task, device, seed=seed)], max_steps=max_steps, **race_kw))
    base = _median_result([r["nn.Transformer"] for r in per_seed])
    seeds_note = f"median of {len(seeds)} seeds"
    rows = [
        Row(
            "time to 99% copy EM: nn.Transformer",
            base.seconds if base.steps is not None else None,
            "s",
            "time_to_99_s_nn_transformer",
            note=f"{_steps_note(base, max_steps)}; {seeds_note}",
            extra=_steps_extra("nn_transformer", base),
        )
    ]
    default = ModelConfig().positional
    for pe in ("rope", "sinusoidal"):
        ours = _median_result([r[pe] for r in per_seed])
        ratios = [
            r[pe].seconds / r["nn.Transformer"].seconds
            for r in per_seed
            if r[pe].steps is not None and r["nn.Transformer"].steps is not None
        ]
        ratio = statistics.median(ratios) if len(ratios) == len(per_seed) else None
        limit = 0.25 if pe == default else 0.5
        extra = {**_steps_extra(pe, ours)}
        if ratio is not None:
            extra[f"time_to_99_ratio_{pe}"] = ratio
            if pe == default:
                extra["time_to_99_ratio_vs_nn_transformer"] = ratio
        per = ", ".join(f"{x:.2f}" for x in ratios)
        rows.append(
            Row(
                f"time to 99% copy EM: ours, {pe}{' (default)' if pe == default else ''}",
                ours.seconds if ours.steps is not None else None,
                "s",
                f"time_to_99_s_{pe}",
                None,
                note=f"{_steps_note(ours, max_steps)}; {seeds_note}; ratios per seed: {per or '-'}",
                extra=extra,
            )
        )
        rows.append(
            Row(
                f"time to 99%: ours {pe} / nn.Transformer",
                ratio,
                "x",
                None,
                Bar("<=", limit),
                note="median of the per-seed ratios, same run"
                if ratio is not None
                else f"target not reached by both sides in every seed: {_steps_note(ours, max_steps)}",
            )
        )
    return rows


def _steps_note(result: RaceResult, max_steps: int) -> str:
    if result.steps is None:
        return f"not reached in {max_steps} steps ({result.seconds:.1f} s of steps)"
    return f"{result.steps} steps"


def _steps_extra(name: str, result: RaceResult) -> dict[str, float]:
    return {f"time_to_99_steps_{name}": result.steps} if result.steps is not None else {}


def _median_result(results: Sequence[RaceResult]) -> RaceResult:
    """Median seconds and steps over seeds; not reached (steps None) if any seed missed the target."""
    reached = all(r.steps is not None for r in results)
    steps = int(statistics.median(r.steps for r in results)) if reached else None
    return RaceResult(
        results[0].name,
        steps,
        statistics.median(r.seconds for r in results),
        int(statistics.median(r.steps_run for r in results)),
    )


def task_race_rows(
    device: torch.device, max_steps: int | None = None, check_every: int = 25, names: Sequence[str] | None = None
) -> list[Row]:
    """Every task of the library from scratch, as the Trainer starts it (RoPE, the task's data and training recipe,
    a vocabulary that holds its symbols), against nn.Transformer on the same batches' recipe: steps and seconds of
    optimisation to 99% exact match at the task's longest training length, one seed; each side runs at most
    `max_steps` (None: the task's recipe, as the Trainer does).

    A row per task holds ours to the human threshold of a minute; the last row counts the tasks under it, held to
    half of the library. names: the tasks to race (default: every task of the library).
    """
    from core_model.recipe import recipe_task, task_train_config
    from core_model.tasks import TASK_NAMES

    names = TASK_NAMES if names is None else tuple(names)
    rows, fast = [], 0
    for name in names:
        task = recipe_task(name, "rope")
        config = replace(ModelConfig(), vocab_size=max(ModelConfig().vocab_size, task.vocab_size))
        longest = max(task.lengths())
        train = task_train_config(name, "rope", device=str(device))
        ours = OursSide("ours", config, train, task, device, length=longest)
        base = BaselineSide(task, device, length=longest)
        cap = train.steps if max_steps is None else max_steps  # the Trainer runs the task's recipe to its end
        result = race([ours, base], max_steps=cap, check_every=check_every)
        mine, theirs = result["ours"], result["nn.Transformer"]
        seconds = mine.seconds if mine.steps is not None else None
        fast += seconds is not None and seconds <= 60
        rows.append(
            Row(
                f"time to 99% EM from scratch: {name}",
                seconds,
                "s",
                f"task_time_to_99_s_{name}",
                Bar("<=", 60),
                note=f"ours {_steps_note(mine, cap)} ({train.steps} steps at {train.lr:g}); "
                f"nn.Transformer {_steps_note(theirs, cap)}"
                + (f", {theirs.seconds:.1f} s" if theirs.steps is not None else "")
                + f"; length {longest}, checked every {check_every} steps",
                extra={
                    **_steps_extra(f"task_{name}", mine),
                    **({f"task_time_to_99_s_{name}_nn_transformer": theirs.seconds} if theirs.steps else {}),
                },
            )
        )
    rows.append(
        Row(
            "tasks reaching 99% EM in under a minute",
            fast / len(names),
            "share",
            "tasks_under_a_minute_share",
            Bar(">=", 0.5),
            note=f"{fast} of {len(names)} tasks",
        )
    )
    return rows
