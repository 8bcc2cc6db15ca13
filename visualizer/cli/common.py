"""What every headless verb shares: error kinds, the one-line parser, the Verb record, --device, the progress bar.

No Qt, and no torch at import: a verb imports torch inside `run`, once its arguments have parsed.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from visualizer.headless.interrupts import QuitSignal, quit_signal_numbers, said_for_number
from visualizer.state.failures import printable

if TYPE_CHECKING:
    from core_model.model import Seq2SeqTransformer
    from core_model.tasks import TaskSpec

PROG = "attention-playground"
TTY_INTERVAL_S, LINE_INTERVAL_S = 0.1, 2.0  # a TTY bar redraws often; a log file gets a line every few seconds


class CliError(Exception):
    """A failure that ends the command with exit status 1 and a one-line message."""


class Interrupted(CliError):
    """A quit signal (Ctrl+C, SIGTERM, SIGHUP) ended the command; the line says what was kept. Exit status 130.

    `said` names the signal when the line should ("SIGTERM"); None where the message says enough (a stopped train).
    """

    def __init__(self, message: str, said: str | None = None) -> None:
        super().__init__(message)
        self.said = said


class ArgumentError(Exception):
    """A bad argument worth one line (not argparse's usage block): exit status 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line, the problem and where to read more, not the usage block (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {printable(message)} (see '{self.prog} --help')\n")


@dataclass(frozen=True)
class Verb:
    """One headless command as the registry lists it: the top-level usage and help are generated from these fields.

    `synopsis` is what follows the verb on its usage line; `summary` is the one line that says what it does;
    `add_options` adds the verb's own options (the registry adds the ones every verb shares); `run` does the work.
    `json_help` is None for a verb whose only output is one JSON object, else what --json changes (a verb that
    prints a table for people, and the JSON object with --json).
    """

    name: str
    synopsis: str
    summary: str
    add_options: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, argparse.ArgumentParser], int]
    json_help: str | None = None


def given(ns: argparse.Namespace, mapping: dict[str, str]) -> dict[str, Any]:
    """Keyword arguments for the options the user set (None means: keep the dataclass default)."""
    return {field: getattr(ns, attr) for attr, field in mapping.items() if getattr(ns, attr) is not None}


def device_arg(name: str | None):
    """The device named by --device; an unknown or unavailable one is a one-line error listing the available ones."""
    from core_model.device import pick_device

    try:
        return pick_device(name)
    except ValueError as exc:
        raise ArgumentError(f"--device: {exc}") from None


class ProgressBar:
    """A carriage-return bar on a TTY, plain throttled lines otherwise (no dependencies)."""

    def __init__(
        self, total: int, stream: TextIO, width: int = 24, quiet_start: bool = False, may_end_early: bool = False
    ) -> None:
        """quiet_start: draw nothing until one interval has passed, so a quick run prints no progress at all;
        may_end_early: `total` is a cap the loop may stop short of, so the ETA is an upper bound ("ETA at most")."""
        self.total, self.stream, self.width, self.quiet_start = total, stream, width, quiet_start
        self.may_end_early = may_end_early
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.interval = TTY_INTERVAL_S if self.tty else LINE_INTERVAL_S
        self.start = time.perf_counter()
        self.last_draw = -math.inf
        self.drawn = False

    def update(self, step: int, loss: float, acc: float, tokens_per_s: float) -> None:
        """A training step: its loss, accuracy and speed."""
        self._draw(step, f"step {step}/{self.total}  loss {loss:.4f}  acc {acc:.3f}  {tokens_per_s:,.0f} tok/s")

    def count(self, done: int, what: str) -> None:
        """`done` of the total `what` (e.g. "sources"), for a long loop with nothing else to report."""
        self._draw(done, f"{what} {done:,}/{self.total:,}")

    def _draw(self, step: int, text: str) -> None:
        now = time.perf_counter()
        if step < self.total and now - self.last_draw < self.interval:
            return
        if self.quiet_start and not self.drawn and now - self.start < self.interval:
            return
        self.last_draw = now
        elapsed = now - self.start
        bound = "at most " if self.may_end_early else ""
        text += f"  ETA {bound}{_clock(elapsed / max(step, 1) * (self.total - step))}"
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


def load_trained(
    path: Any, device: Any, task_name: str | None = None
) -> tuple[Seq2SeqTransformer, TaskSpec, tuple[int, int] | None]:
    """(model in eval mode on `device`, its task, the source lengths the file says the weights were trained on or
    None) from a checkpoint; `task_name` (--task) asks for another task (`task_for`).

    A missing, corrupt or hostile file is a CliError: one line, exit 1; a task the model cannot take is an
    ArgumentError naming --task (exit 2).
    """
    from core_model.checkpoint import CheckpointError, load_checkpoint
    from core_model.recipe import stored_trained_lengths

    try:
        ckpt = load_checkpoint(path)
        model = ckpt.build(device).eval()
    except CheckpointError as exc:
        raise CliError(str(exc)) from None
    task = task_for(ckpt.task, task_name, model.config)
    return model, task, stored_trained_lengths(ckpt.extra, ckpt.history)


def task_for(stored: TaskSpec, task_name: str | None, config: Any) -> TaskSpec:
    """The task a verb runs on: the checkpoint's own, or for another --task that task's own size and training
    lengths (capped to the model's positions), read as the checkpoint reads its sources (anchored or not, its share
    of hard cases). ArgumentError (exit 2) when the model's vocabulary or positions cannot take it."""
    from core_model.tasks import default_spec, max_source_len

    if task_name is None or task_name == stored.task:
        return stored
    limit = max_source_len(config.max_len)
    try:
        spec = default_spec(task_name, anchored=stored.anchored, runs=stored.runs)
        if spec.max_len > limit:
            spec = default_spec(
                task_name, anchored=stored.anchored, runs=stored.runs, min_len=min(spec.min_len, limit), max_len=limit
            )
        spec.check_vocab(config.vocab_size)
    except ValueError as exc:
        raise ArgumentError(f"--task {task_name}: {exc}") from None
    return spec


def checked_source(task: TaskSpec, ids: list[int], option: str) -> list[int]:
    """`ids` when they are a source the task takes (its alphabet, lengths and grammar); else ArgumentError (exit 2,
    one line) naming the option and the rule broken: "--source: an addition needs one '+' between ..."."""
    problem = task.source_problem(ids)
    if problem:
        raise ArgumentError(f"{option}: {problem}")
    return ids


def trained_fields(trained: tuple[int, int] | None, *lengths: int) -> dict[str, Any]:
    """The JSON fields saying where sources of these lengths stand: "trained_lengths" [low, high] (null: the file does
    not say) and "beyond_trained_lengths", true when any lies outside them (null when they are not known)."""
    from core_model.recipe import outside_trained

    if trained is None:
        return {"trained_lengths": None, "beyond_trained_lengths": None}
    beyond = any(outside_trained(trained, n) for n in lengths)
    return {"trained_lengths": list(trained), "beyond_trained_lengths": beyond}


class StopRequests:
    """While a long loop runs: the first quit signal (Ctrl+C, SIGTERM, SIGHUP) asks it to stop between two steps, so
    what it made so far is whole and can be kept; a second one interrupts at once. The previous handlers come back
    on exit."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequests:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():  # Python sets handlers on the main thread only
            for number in quit_signal_numbers():
                self._previous[number] = signal.signal(number, self._on_signal)
        return self

    def _on_signal(self, number: int, _frame: Any) -> None:
        if self.requested:
            raise QuitSignal(said_for_number(number))
        self.requested = True
        sys.stderr.write(f"\n{PROG}: stopping after this step (press Ctrl+C again to quit at once)\n")

    def __exit__(self, *_exc: object) -> None:
        import signal

        for number, handler in self._previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
