"""`train`: the core Trainer behind a progress bar, a checkpoint saved somewhere, one JSON line out."""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from visualizer.cli.budget import attention_weights, check_budget, lower_to
from visualizer.cli.common import CliError, Interrupted, ProgressBar, StopRequests, Verb, device_arg, given
from visualizer.cli.limits import ranged
from visualizer.cli.options import device_option, seed_option, task_option
from visualizer.cli.output import check_out_before_work, json_line, kept_if_interrupted, save_or_fall_back
from visualizer.headless.interrupts import said_for

UNTIL = 0.99  # the exact match every trained length reaches before `train` without --steps stops
UNTIL_CAP = 4000  # the most steps `train` takes to get there: the shipped models' count, or the task's own if more
CHECK_EVERY = 100  # steps between two checks of every trained length
CHECK_N = 50  # fresh sources per trained length in one check
CHECK_SEED = 4321  # the checks' sources: the same each time, none of the final evaluation's (seed 1234)


def add_options(train: argparse.ArgumentParser) -> None:
    """The `train` subcommand's options. The data defaults are the shipped models' (core_model.recipe); the training
    numbers default to the task's recipe for the positional kind (core_model.recipe.task_train_config), not the
    shipped models' longer one."""
    task_option(train, "the toy task to learn", required=True)
    train.add_argument(
        "--steps",
        **ranged(
            "train",
            "--steps",
            f"optimisation steps; without it, train until every trained length is right (see --until), at most "
            f"{UNTIL_CAP} (more for a task whose own recipe takes more; `tasks` lists them)",
        ),
    )
    train.add_argument(
        "--until",
        **ranged(
            "train",
            "--until",
            f"stop once greedy exact match reaches this on every trained length, checked every {CHECK_EVERY} steps "
            f"on {CHECK_N} fresh sources per length (default {UNTIL} without --steps; with --steps, --steps is the "
            "most steps; 0: never stop early)",
        ),
    )
    seed_option(train, "train", "seed for initialisation and batches")
    device_option(train)
    own = "for copy, reverse and sort; each task's own training lengths otherwise (`tasks` lists them)"
    train.add_argument("--min-len", **ranged("train", "--min-len", f"shortest source sequence (default 1) {own}"))
    train.add_argument("--max-len", **ranged("train", "--max-len", f"longest source sequence (default 16) {own}"))
    train.add_argument(
        "--symbols",
        **ranged(
            "train",
            "--symbols",
            "the task's size: its number of symbols, number base or number of keys (`tasks` lists each task's); the "
            "model's vocabulary holds every symbol the task reads or writes plus <pad>, <bos> and <eos>",
        ),
    )
    train.add_argument(
        "--runs",
        **ranged(
            "train",
            "--runs",
            "share of training sources drawn as the task's hard cases (runs of repeated symbols, like 0000, for "
            "copy) (default 0.25)",
        ),
    )
    train.add_argument(
        "--anchored",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="read each source as <bos> symbols <eos> (default: anchored for rope, which needs the "
        "anchors to tell 00 from 0000; not for sinusoidal)",
    )
    train.add_argument(
        "--batch-size",
        **ranged(
            "train", "--batch-size", "sequences per step (default: the task's; else 32 for rope, 24 for sinusoidal)"
        ),
    )
    train.add_argument(
        "--lr",
        **ranged(
            "train", "--lr", "peak learning rate (default: the task's; else 0.006 for rope, 0.003 for sinusoidal)"
        ),
    )
    train.add_argument(
        "--adam-beta1",
        **ranged("train", "--adam-beta1", "Adam's momentum (default 0.8; the paper and the shipped models: 0.9)"),
    )
    train.add_argument(
        "--positional", choices=("sinusoidal", "rope"), help="positional encoding of the new model (default: rope)"
    )
    train.add_argument(
        "--eval-n",
        default=500,
        **ranged(
            "train",
            "--eval-n",
            "sequences per source length in the final evaluation (every trained length is reported, "
            "and every one-symbol source of those lengths, or the task's hard cases where it takes none)",
        ),
    )
    train.add_argument("--out", required=True, type=Path, help="checkpoint file to write")


def until_cap(task: str) -> int:
    """The most steps `train` without --steps takes: UNTIL_CAP, or the task's default recipe's steps if more."""
    from core_model.recipe import task_train_config

    return max(UNTIL_CAP, task_train_config(task, "rope").steps)


def _task(ns: argparse.Namespace, positional: str):
    """The recipe's task with the lengths, symbols, runs and anchors given; one length given moves the other."""
    from core_model.recipe import recipe_task
    from core_model.tasks import task_named

    shortest, longest = task_named(ns.task).training_lengths

    task_kw = given(
        ns, {"symbols": "n_symbols", "min_len": "min_len", "max_len": "max_len", "runs": "runs", "anchored": "anchored"}
    )
    if "max_len" in task_kw and "min_len" not in task_kw:
        task_kw["min_len"] = min(shortest, task_kw["max_len"])
    if "min_len" in task_kw and "max_len" not in task_kw:
        task_kw["max_len"] = max(longest, task_kw["min_len"])
    return recipe_task(ns.task, positional, **task_kw)


def _setup(ns: argparse.Namespace, parser: argparse.ArgumentParser):
    """Task, model config, train config and device from the arguments; invalid values are argument errors."""
    from core_model import ModelConfig
    from core_model.recipe import task_train_config

    device = device_arg(ns.device)
    try:
        model_kw = given(ns, {"positional": "positional"})
        task = _task(ns, model_kw.get("positional", ModelConfig().positional))
        defaults = ModelConfig()
        model_config = ModelConfig(vocab_size=max(defaults.vocab_size, task.vocab_size), **model_kw)
        task.check_fits(model_config.max_len)
        train_kw = given(
            ns,
            {"steps": "steps", "seed": "seed", "batch_size": "batch_size", "lr": "lr", "adam_beta1": "adam_beta1"},
        )
        train_kw.setdefault("steps", until_cap(ns.task))
        config = task_train_config(ns.task, model_config.positional, device=ns.device or "auto", **train_kw)
    except ValueError as exc:
        parser.error(str(exc))
    tgt_len = task.longest_target() + 1  # <bos> and the longest expected output
    one = 3 * attention_weights(model_config, 1, task.max_len + 2, tgt_len)  # kept for the backward pass too
    what = f"--batch-size {config.batch_size} at --max-len {task.max_len}"
    fewer = lower_to("--batch-size", one)
    check_budget(config.batch_size * one, what, f"{fewer}, or a lower --max-len" if fewer else "use a lower --max-len")
    return task, model_config, config, device


def until_target(ns: argparse.Namespace) -> float | None:
    """The exact match to stop at (None: train every step): --until, or UNTIL when no --steps was given."""
    until = ns.until if ns.until is not None else (UNTIL if ns.steps is None else None)
    return until or None  # 0 never stops early


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Train, evaluate, save and print one JSON line; divergence keeps the last good weights (exit 1)."""
    task, model_config, config, device = _setup(ns, parser)
    check_out_before_work(ns.out)  # a pipe or device is refused now, not after minutes of training
    from core_model import build_model
    from core_model.training import Trainer, TrainingDiverged

    start = time.perf_counter()
    model = build_model(model_config, seed=config.seed)
    trainer = Trainer(model, task, config, device=device)
    until = until_target(ns)
    bar = ProgressBar(config.steps, sys.stderr, may_end_early=until is not None)
    try:
        with StopRequests() as stop:
            for metrics in trainer.train_steps():
                bar.update(metrics.step, metrics.loss, metrics.token_accuracy, metrics.tokens_per_s)
                if stop.requested:  # between steps: the weights are those of a whole step
                    break
                if until is not None and metrics.step % CHECK_EVERY == 0 and metrics.step < config.steps:
                    if _every_length_reaches(trainer.model, task, until, device):
                        break
    except TrainingDiverged as exc:
        bar.close()
        raise CliError(f"training diverged: {exc}; {_keep_last_good(ns.out, trainer, task, config)}") from None
    bar.close()
    if stop.requested:
        raise Interrupted(
            f"stopped at step {trainer.step}; {_keep_last_good(ns.out, trainer, task, config, 'stopped')}"
        )
    try:
        final = {**_final(trainer, task, ns, device, start), "until": until, "max_steps": config.steps}
    except KeyboardInterrupt as exc:  # a quit signal while the trained model is measured: its weights are kept
        kept = _keep_last_good(ns.out, trainer, task, config, "stopped")
        raise Interrupted(f"training had finished; {kept}", said=said_for(exc)) from None
    written, problem = _save(ns.out, trainer, task, config, final)
    if problem:  # the model is kept in a spare file when it can be; exit 1 either way
        raise CliError(problem)
    short = short_of(final, until or UNTIL, until is not None, until_cap(ns.task))
    if short:
        sys.stderr.write(f"attention-playground: note: {short}\n")
    with kept_if_interrupted(f"the model was written to {written}"):
        sys.stdout.write(json_line(final))
    return 0


def _every_length_reaches(model: Any, task: Any, until: float, device: Any) -> bool:
    """Whether greedy exact match reaches `until` at every trained length on the checks' own sources."""
    from core_model.length_eval import evaluate_lengths

    sweep = evaluate_lengths(model, task, task.lengths(), n=CHECK_N, seed=CHECK_SEED, device=device)
    return min(r.exact_match for r in sweep.per_length.values()) >= until


def short_of(final: dict[str, Any], target: float, trained_until: bool, cap: int) -> str:
    """One sentence when the final evaluation finds a trained length below `target`, with what to change; "" when
    every length reaches it. `trained_until`: the run stopped at --until or at its cap, not at a --steps asked for;
    `cap`: the most steps a run without --steps takes."""
    below = {int(n): em for n, em in final["per_length"].items() if em < target}
    if not below:
        return ""
    worst = min(below, key=below.__getitem__)
    steps = final["step"]
    said = (
        f"exact match is below {target:g} at {len(below)} of {len(final['per_length'])} trained lengths "
        f"(worst {below[worst]:.3f} at length {worst}) after {steps} steps"
    )
    more = min(2 * steps, 100_000)
    if trained_until:
        return f"{said}: train longer (--steps {more}), or try another --seed or a lower --lr"
    return f"{said}: leave --steps out to train until every length reaches {UNTIL:g} (at most {cap} steps)"


def _final(trainer: Any, task: Any, ns: argparse.Namespace, device: Any, start: float) -> dict[str, Any]:
    """The trained model's numbers: the JSON line, and the final metrics its checkpoint records."""
    result = trainer.evaluate(n=1000)  # teacher-forced loss and accuracy over the whole length range
    last = trainer.history[-1]
    return {
        "step": last.step,
        "loss": result.loss,
        "token_accuracy": result.token_accuracy,
        **_measured(trainer.model, task, ns.eval_n, device),
        "train_loss": last.loss,
        "task": asdict(task),
        "seconds": round(time.perf_counter() - start, 3),
        "device": str(device),
        "out": str(ns.out),
    }


def _measured(model: Any, task: Any, eval_n: int, device: Any) -> dict[str, Any]:
    """Greedy exact match on fresh sources of every trained length the task takes, and on its hard sources of them
    (length_eval.repeated_symbol_sources: every one-symbol source, "0000", where the task takes one)."""
    from core_model.length_eval import evaluate_lengths, repeated_symbol_sources, wrong_sources

    lengths = task.lengths()
    sweep = evaluate_lengths(model, task, lengths, n=eval_n, device=device)
    per_length = {str(r.length): r.exact_match for r in sweep.per_length.values()}
    sources = repeated_symbol_sources(task, lengths)
    wrong = wrong_sources(model, task, sources)
    vocab = task.vocabulary
    repeated = {
        "exact_match": 1 - len(wrong) / len(sources),
        "sources": len(sources),
        "wrong_examples": [f"{vocab.decode(s)} -> {vocab.decode(o)}" for s, o in wrong[:5]],
    }
    return {
        "exact_match": sum(per_length.values()) / len(per_length),
        "per_length": per_length,
        "worst_length": int(min(per_length, key=per_length.__getitem__)),
        "eval_n": eval_n,
        "repeated": repeated,
    }


def _save(out: Path, trainer: Any, task: Any, config: Any, final: dict[str, Any]) -> tuple[Path | None, str]:
    """Save the trainer's model to `out`, or to a spare file in the temp folder when `out` cannot be written."""
    from core_model.checkpoint import CheckpointExtra, save_checkpoint

    extra = CheckpointExtra(task=task, train_config=config.to_dict(), final_metrics=_finite(final))
    history = [asdict(m) for m in trainer.history]
    return save_or_fall_back(out, lambda path: save_checkpoint(path, trainer.model, history=history, extra=extra))


def _keep_last_good(out: Path, trainer: Any, task: Any, config: Any, why: str = "diverged") -> str:
    """After divergence or a stop: write the weights of the last whole step (the trainer keeps them) and say where,
    or why not. `why` is recorded in the checkpoint's final metrics."""
    step = trainer.step  # steps completed; a failed step changed no weights, a stop comes between steps
    if step < 1:
        return "nothing was written (no step had completed)"
    written, problem = _save(out, trainer, task, config, {"step": step, why: True, "out": str(out)})
    if written is None:
        return problem
    note = f"the weights from step {step} were written to {written}"
    return f"{note} ({problem})" if problem else note


def _finite(data: dict[str, Any]) -> dict[str, Any]:
    """The metrics with non-finite numbers as None (a checkpoint's extras stay plain, comparable data)."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in data.items()}


VERB = Verb(
    "train", "--task TASK --out FILE [options]", "train a model on a toy task and save a checkpoint", add_options, run
)
