"""Run one headless verb as `attention-playground` does, and send this process a quit signal at one moment of it.

test_cli_signals.py runs this in a subprocess (a signal sent to pytest itself would end the test run). The signal is
a real one (os.kill to this process), handled by whatever handlers the command has then; the functions named below
are wrapped only to know when the moment has come, and still run as they are. No sleep: the moment is an event.

Usage: python cli_signal_driver.py SIGNAL_NAME MOMENT VERB ARGS...
MOMENT: start (before the CLI's modules load), torch (as torch is imported), load (the checkpoint is read; for
`train`, the model is built), work (the verb's analysis starts; for `train`, the training loop), output (the verb
writes its result on stdout), or call=module:attribute (that function is called).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from typing import Any

WORK = {  # the function each verb's analysis starts with, as "module:attribute" (a class's method as Class.method)
    "train": "core_model.training:Trainer.train_steps",
    "eval": "core_model.length_eval:evaluate_lengths",
    "views": "core_model.attention_views:view_maps",
    "decode": "core_model.inputs:encoder_input",
    "heads": "core_model.head_importance:analyse_heads",
    "cell": "core_model.cell_decomposition:decompose_cell",
    "patch": "core_model.patching:patch_effects",
    "lens": "core_model.source_lens:source_lens",
    "attribute": "core_model.attribution:attribute",
    "circuits": "core_model.circuits:token_circuits",
    "page": "core_model.page_data:page_data",
}
LOAD = {"train": "core_model:build_model"}  # every other verb reads a checkpoint
LOAD_CHECKPOINT = "core_model.checkpoint:load_checkpoint"


def send(signum: int) -> None:
    """The signal, once: the handlers run as soon as this returns to Python code."""
    os.kill(os.getpid(), signum)


def signal_on_call(target: str, signum: int) -> None:
    """Wrap `module:attr` (or `module:Class.method`) so its first call sends the signal, then runs it as it is."""
    module_name, _, path = target.partition(":")
    owner: Any = importlib.import_module(module_name)
    *parents, name = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    real = getattr(owner, name)
    sent = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not sent:
            sent.append(True)
            send(signum)
        return real(*args, **kwargs)

    setattr(owner, name, wrapped)


class SignalOnImport:
    """A meta path finder that sends the signal when `name` is first imported, and lets the import go on."""

    def __init__(self, name: str, signum: int) -> None:
        self.name, self.signum = name, signum

    def find_spec(self, fullname: str, _path: Any, _target: Any = None) -> None:
        if fullname == self.name:
            sys.meta_path.remove(self)
            send(self.signum)


class SignalOnWrite:
    """stdout as the verb sees it: the first write sends the signal, then goes to the real stdout."""

    def __init__(self, real: Any, signum: int) -> None:
        self.real, self.signum, self.sent = real, signum, False

    def write(self, text: str) -> int:
        if not self.sent:
            self.sent = True
            send(self.signum)
        return self.real.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def main() -> int:
    signum, moment, verb = int(getattr(signal, sys.argv[1])), sys.argv[2], sys.argv[3]
    import visualizer.__main__ as entry

    if moment == "start":
        real_cli = entry._cli
        entry._cli = lambda: (send(signum), real_cli())[1]
    elif moment == "torch":
        sys.meta_path.insert(0, SignalOnImport("torch", signum))
    elif moment == "load":
        signal_on_call(LOAD.get(verb, LOAD_CHECKPOINT), signum)
    elif moment == "work":
        signal_on_call(WORK[verb], signum)
    elif moment.startswith("call="):
        signal_on_call(moment.removeprefix("call="), signum)
    elif moment == "output":
        sys.stdout = SignalOnWrite(sys.stdout, signum)
    else:
        raise SystemExit(f"unknown moment {moment!r}")
    sys.argv = ["attention-playground", *sys.argv[3:]]
    return entry.main()


if __name__ == "__main__":
    sys.exit(main())
