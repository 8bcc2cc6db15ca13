"""How a headless command meets a quit signal: SIGINT, SIGTERM and SIGHUP all raise `QuitSignal` where it is.

Python turns only SIGINT into an exception (KeyboardInterrupt); SIGTERM (`kill`) and SIGHUP (the terminal closed,
a logout) would end the process at once, silently, with status 143 or 129. While `QuitOnSignals` is installed each
of the three raises `QuitSignal`, a KeyboardInterrupt, at the line the command is on, so the dispatcher's one line
on stderr and status 130 cover every signal at every moment: while the modules load, the model loads, the analysis
runs or the result is written. Standard library only: it is installed before the CLI's own modules are imported.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

PROG = "attention-playground"
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command ended by Ctrl+C; every quit signal ends with it
QUIT_SIGNAL_NAMES = ("SIGINT", "SIGTERM", "SIGHUP")  # SIGHUP: the terminal closed or the session logged out
SAID_AS = {"SIGINT": "Ctrl+C"}  # how the one line names a signal; the others by their own names


class QuitSignal(KeyboardInterrupt):
    """A quit signal, raised where the command was; `said` names it for the one line ("Ctrl+C", "SIGTERM")."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


def said_for(exc: KeyboardInterrupt) -> str:
    """The signal's name for the one line: a plain KeyboardInterrupt is Python's own Ctrl+C."""
    return exc.said if isinstance(exc, QuitSignal) else SAID_AS["SIGINT"]


def said_for_number(number: int) -> str:
    """How the one line names signal `number`: "Ctrl+C" for SIGINT, else its name ("SIGTERM")."""
    name = signal.Signals(number).name
    return SAID_AS.get(name, name)


def quit_signal_numbers() -> dict[int, str]:
    """{number: name} of the quit signals this platform has (Windows has no SIGHUP)."""
    return {int(getattr(signal, name)): name for name in QUIT_SIGNAL_NAMES if hasattr(signal, name)}


class QuitOnSignals:
    """For the rest of a headless command's process: the first quit signal raises QuitSignal where the command is.

    A later signal finds the command already ending (its one line being written, or the exception swallowed by
    code that catches everything): it writes the line itself and ends the process with status 130, so no signal is
    ever lost. Once `finished` is set (the verb has returned and its status stands) signals change nothing: the
    process is only exiting.
    """

    def __init__(self) -> None:
        self.raised = False
        self.finished = False
        self._previous: dict[int, Any] = {}

    def install(self) -> QuitOnSignals:
        """Take the quit signals (main thread only: Python sets handlers there)."""
        if threading.current_thread() is threading.main_thread():
            for number in quit_signal_numbers():
                self._previous[number] = signal.signal(number, self._on_signal)
        return self

    def restore(self) -> None:
        """Give the signals back to the handlers before, for a caller that goes on after the command (a test)."""
        for number, handler in self._previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
        self._previous.clear()

    def _on_signal(self, number: int, _frame: FrameType | None) -> None:
        if self.finished:
            return
        said = said_for_number(number)
        if not self.raised:
            self.raised = True
            raise QuitSignal(said)
        say_interrupted(said)
        os._exit(INTERRUPTED)


def say_interrupted(said: str, what_was_kept: str = "nothing was written") -> int:
    """The one line a quit signal ends a verb with (on stderr, which may be gone after a SIGHUP); status 130."""
    try:
        sys.stderr.write(f"{PROG}: interrupted ({said}): {what_was_kept}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # the terminal closed (SIGHUP) or stderr was closed: the status still says what happened
    return INTERRUPTED
