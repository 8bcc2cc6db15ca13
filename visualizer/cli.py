"""Headless `train` and `eval` commands: the core Trainer behind a progress bar, one JSON line out (no Qt)."""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, TextIO

from visualizer.cli_output import json_line, save_or_fall_back

PROG = "attention-playground"
TTY_INTERVAL_S, LINE_INTERVAL_S = 0.1, 2.0  # a TTY bar redraws often; a log file gets a line every few seconds


class CliError(Exception):
    """A failure that ends the command with exit status 1 and a one-line message."""


class ArgumentError(Exception):
    """A bad argument worth one line (not argparse's usage block): exit status 2."""


def main(args: list[str]) -> int:
    """Run `train ...` or `eval ...`; returns 0 ok, 1 on divergence or I/O errors, 2 on bad arguments."""
    parser, commands = _parser()
    try:
        ns = parser.parse_args(args)
        command = commands[ns.command]
        return _train(ns, command) if ns.command == "train" else _eval(ns, command)
    except SystemExit as exc:  # argparse: 2 for bad arguments, 0 for --help
        return exc.code if isinstance(exc.code, int) else 2
    except CliError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 1
    except ArgumentError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(prog=PROG, description="Train or evaluate a model without opening the window.")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train a model on a toy task and save a checkpoint")
    train.add_argument("--task", choices=("copy", "reverse", "sort"), required=True)
    train.add_argument("--steps", type=int, help="optimisation steps (default: TrainConfig's)")
    train.add_argument("--seed", type=int, help="seed for initialisation and batches")
    train.add_argument("--device", help="cpu, cuda, cuda:1, mps (default: best available)")
    train.add_argument("--min-len", type=int, help="shortest source sequence")
    train.add_argument("--max-len", type=int, help="longest source sequence")
    train.add_argument("--symbols", type=int,
                       help="number of task symbols (vocabulary = symbols + the <pad>, <bos>, <eos> specials)")
    train.add_argument("--batch-size", type=int)
    train.add_argument("--lr", type=float, help="peak learning rate")
    train.add_argument("--positional", choices=("sinusoidal", "rope"), help="positional encoding of the new model")
    train.add_argument("--out", required=True, type=Path, help="checkpoint file to write")
    train.add_argument("--threads", type=int, default=1,
                       help="CPU threads for torch (default 1: toy models gain nothing from more, and a busy "
                            "machine makes several threads wait on each other)")
    ev = sub.add_parser("eval", help="greedy exact match of a checkpoint on fresh sequences")
    ev.add_argument("path", type=Path)
    ev.add_argument("--task", choices=("copy", "reverse", "sort"), help="default: the task stored in the checkpoint")
    ev.add_argument("--n", type=int, default=1000, help="number of sequences")
    ev.add_argument("--seed", type=int, default=1234, help="seed of the evaluation sequences")
    ev.add_argument("--length", type=int, help="source length (default: the task's max_len)")
    ev.add_argument("--device", help="cpu, cuda, cuda:1, mps (default: best available)")
    return parser, {"train": train, "eval": ev}


def _given(ns: argparse.Namespace, mapping: dict[str, str]) -> dict[str, Any]:
    """Keyword arguments for the options the user set (None means: keep the dataclass default)."""
    return {field: getattr(ns, attr) for attr, field in mapping.items() if getattr(ns, attr) is not None}


def _device(name: str | None):
    """The device named by --device; an unknown or unavailable one is a one-line error listing the available ones."""
    from core_model.device import pick_device

    try:
        return pick_device(name)
    except ValueError as exc:
        raise ArgumentError(f"--device: {exc}") from None


def _train_setup(ns: argparse.Namespace, parser: argparse.ArgumentParser):
    """Task, model config, train config and device from the arguments; invalid values are argument errors."""
    from core_model import ModelConfig
    from core_model.tasks import TaskSpec
    from core_model.training import TrainConfig

    device = _device(ns.device)
    try:
        base = TaskSpec()
        task_kw = _given(ns, {"symbols": "n_symbols", "min_len": "min_len", "max_len": "max_len"})
        if "max_len" in task_kw and "min_len" not in task_kw:
            task_kw["min_len"] = min(base.min_len, task_kw["max_len"])
        if "min_len" in task_kw and "max_len" not in task_kw:
            task_kw["max_len"] = max(base.max_len, task_kw["min_len"])
        task = TaskSpec(task=ns.task, **task_kw)
        defaults = ModelConfig()
        model_kw = _given(ns, {"positional": "positional"})
        model_config = ModelConfig(vocab_size=max(defaults.vocab_size, task.vocab_size), **model_kw)
        task.check_fits(model_config.max_len)
        train_kw = _given(ns, {"steps": "steps", "seed": "seed", "batch_size": "batch_size", "lr": "lr"})
        config = TrainConfig(device=ns.device or "auto", **train_kw)
    except ValueError as exc:
        parser.error(str(exc))
    return task, model_config, config, device


def _train(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    task, model_config, config, device = _train_setup(ns, parser)
    import torch

    if ns.threads < 1:
        parser.error(f"--threads must be >= 1, got {ns.threads}")
    torch.set_num_threads(ns.threads)
    from core_model import build_model
    from core_model.training import Trainer, TrainingDiverged

    start = time.perf_counter()
    model = build_model(model_config, seed=config.seed)
    trainer = Trainer(model, task, config, device=device)
    bar = ProgressBar(config.steps, sys.stderr)
    try:
        for metrics in trainer.train_steps():
            bar.update(metrics.step, metrics.loss, metrics.token_accuracy, metrics.tokens_per_s)
    except TrainingDiverged as exc:
        bar.close()
        raise CliError(f"training diverged: {exc}; {_keep_last_good(ns.out, trainer, task, config)}") from None
    bar.close()
    result = trainer.evaluate(n=1000, length=task.max_len)
    last = trainer.history[-1]
    final = {"step": last.step, "loss": result.loss, "token_accuracy": result.token_accuracy,
             "exact_match": result.exact_match, "train_loss": last.loss, "seconds": round(time.perf_counter() - start, 3),
             "device": str(device), "out": str(ns.out)}
    _, problem = _save(ns.out, trainer, task, config, final)
    if problem:  # the model is kept in a spare file when it can be; exit 1 either way
        raise CliError(problem)
    sys.stdout.write(json_line(final))
    return 0


def _save(out: Path, trainer: Any, task: Any, config: Any, final: dict[str, Any]) -> tuple[Path | None, str]:
    """Save the trainer's model to `out`, or to a spare file in the temp folder when `out` cannot be written."""
    from core_model.checkpoint import save_checkpoint

    extra = {"task": asdict(task), "train_config": config.to_dict(), "final_metrics": _finite(final)}
    history = [asdict(m) for m in trainer.history]
    return save_or_fall_back(out, lambda path: save_checkpoint(path, trainer.model, history=history, extra=extra))


def _keep_last_good(out: Path, trainer: Any, task: Any, config: Any) -> str:
    """After divergence: write the weights of the last good step (the trainer keeps them) and say where, or why not."""
    step = trainer.step  # steps completed; the failed step changed no weights
    if step < 1:
        return "nothing was written (no step had completed)"
    written, problem = _save(out, trainer, task, config, {"step": step, "diverged": True, "out": str(out)})
    if written is None:
        return problem
    note = f"the weights from step {step} were written to {written}"
    return f"{note} ({problem})" if problem else note


def _finite(data: dict[str, Any]) -> dict[str, Any]:
    """The metrics with non-finite numbers as None (a checkpoint's extras stay plain, comparable data)."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in data.items()}


def _eval(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from core_model.checkpoint import CheckpointError, load_checkpoint
    from core_model.tasks import max_source_len
    from core_model.training import evaluate

    if ns.n < 1:
        parser.error(f"--n must be >= 1, got {ns.n}")
    device = _device(ns.device)
    try:
        ckpt = load_checkpoint(ns.path)
        model = ckpt.build(device)
        task = ckpt.task
    except CheckpointError as exc:
        raise CliError(str(exc)) from None
    if ns.task is not None:
        task = replace(task, task=ns.task)
    length = task.max_len if ns.length is None else ns.length
    if not 1 <= length <= max_source_len(model.config.max_len):
        parser.error(f"--length must be in [1, {max_source_len(model.config.max_len)}], got {length}")
    if task.vocab_size > model.config.vocab_size:
        raise CliError(f"the task needs vocab_size >= {task.vocab_size}, the model has {model.config.vocab_size}")
    start = time.perf_counter()
    result = evaluate(model, task, n=ns.n, length=length, seed=ns.seed, device=device)
    out = {"exact_match": result.exact_match, "token_accuracy": result.token_accuracy, "loss": result.loss,
           "n": result.n, "task": task.task, "length": length, "seed": ns.seed,
           "seconds": round(time.perf_counter() - start, 3), "device": str(device), "path": str(ns.path)}
    sys.stdout.write(json_line(out))
    return 0


class ProgressBar:
    """A carriage-return bar on a TTY, plain throttled lines otherwise (no dependencies)."""

    def __init__(self, total: int, stream: TextIO, width: int = 24) -> None:
        self.total, self.stream, self.width = total, stream, width
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.interval = TTY_INTERVAL_S if self.tty else LINE_INTERVAL_S
        self.start = time.perf_counter()
        self.last_draw = -math.inf
        self.drawn = False

    def update(self, step: int, loss: float, acc: float, tokens_per_s: float) -> None:
        now = time.perf_counter()
        if step < self.total and now - self.last_draw < self.interval:
            return
        self.last_draw = now
        elapsed = now - self.start
        eta = elapsed / max(step, 1) * (self.total - step)
        text = (f"step {step}/{self.total}  loss {loss:.4f}  acc {acc:.3f}  {tokens_per_s:,.0f} tok/s  "
                f"ETA {_clock(eta)}")
        if self.tty:
            filled = int(self.width * step / self.total)
            self.stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {text}\x1b[K")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        """End the bar's line so later messages start on a fresh one."""
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
