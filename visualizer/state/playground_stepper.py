"""The decoder stepper of the playground: a DecodeSession that is replayed when masks, gates or the model change.

The stepper is touched only by the jobs that run on the inference thread (or at once, with the inline runner):
each command arrives with the inputs it needs (`StepperInputs`, by value), and the GUI sees the result only as the
immutable `DecodeSnapshot` the job returns. Nothing on the GUI thread reads the live DecodeSession.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core_model import EOS, MaskSpec, Vocabulary
from core_model.decoding import DecodeSession, choosable
from core_model.model import HeadGates, Seq2SeqTransformer

from .snapshots import DecodeSnapshot

COMMANDS = ("restart", "replay", "step", "force", "back", "run")


@dataclass(frozen=True)
class StepperInputs:
    """What a new DecodeSession is built from; sent with every command, used when a session (re)starts."""

    model: Seq2SeqTransformer
    src: torch.Tensor  # (1, S)
    masks: MaskSpec
    gates: HeadGates | None
    max_new_tokens: int
    prefix: tuple[int, ...]  # target prefix tokens, forced first
    n_tokens: int | None = None  # the task vocabulary's size: Step never chooses a larger id (nor <pad>, <bos>)


@dataclass(frozen=True)
class StepCommand:
    """One user action on the stepper; commands run in the order they were given, never coalesced."""

    name: str  # one of COMMANDS
    arg: int = 0  # the token to force, or how many (prefix) steps Back keeps

    def __post_init__(self) -> None:
        if self.name not in COMMANDS:
            raise ValueError(f"stepper command must be one of {COMMANDS}, got {self.name!r}")

    def stepping_after(self, stepping: bool) -> bool:
        """Whether the stepper is stepping once this command has run (the GUI knows it without asking the worker)."""
        return stepping if self.name == "replay" else True


class Stepper:
    """Stepping mode while a session exists; teacher forcing (the decoder sees the expected output) otherwise."""

    def __init__(self) -> None:
        self._session: DecodeSession | None = None
        self.epoch = 0  # of the request that last ran: see PassRequest.epoch

    @property
    def stepping(self) -> bool:
        return self._session is not None

    @property
    def tokens(self) -> list[int]:
        """Decoder input so far: <bos>, the prefix and every stepped token."""
        return list(self._session.tokens) if self._session is not None else []

    def stop(self) -> None:
        """Back to teacher forcing."""
        self._session = None

    def apply(self, command: StepCommand, given: StepperInputs) -> None:
        """Run one command; `given` is used only when a session (re)starts."""
        if command.name == "restart":
            self.restart(given)
        elif command.name == "replay":
            self.replay(given)
        elif command.name == "back":
            self.back(given, keep=command.arg)
        elif command.name == "run":
            self.session(given).run()
        else:
            sess = self.session(given)
            if not sess.finished:
                sess.step(command.arg if command.name == "force" else None)

    def session(self, given: StepperInputs) -> DecodeSession:
        """The running session, started (at <bos> + prefix) when there is none."""
        if self._session is None:
            self._session = DecodeSession(
                given.model,
                given.src,
                given.masks,
                given.gates,
                max_new_tokens=given.max_new_tokens,
                n_tokens=given.n_tokens,
            )
            for token in given.prefix:
                if not self._session.finished:
                    self._session.force(token)
        return self._session

    def restart(self, given: StepperInputs) -> None:
        """Back to <bos> plus the prefix, in stepping mode."""
        self._session = None
        self.session(given)

    def replay(self, given: StepperInputs) -> None:
        """Options changed: run the same tokens again under the new options (forced ones stay forced)."""
        if self._session is None:
            return
        old = [(s.token, s.forced) for s in self._session.steps]
        self.restart(given)
        sess = self.session(given)
        for token, forced in old[len(sess.steps) :]:
            if sess.finished:
                break
            sess.step(token if forced else None)

    def back(self, given: StepperInputs, keep: int) -> None:
        """Undo the newest step, never going behind the first `keep` (prefix) tokens."""
        sess = self.session(given)
        if len(sess.steps) > keep:
            sess.back()

    def snapshot(
        self, vocab: Vocabulary, expected: list[int], top_k: int, first_log_probs: torch.Tensor | None
    ) -> DecodeSnapshot:
        """Plain description for the decoder panel; `first_log_probs` is what Step would see first (teacher forcing)."""
        wanted = expected + [EOS]
        if self._session is None:
            top: tuple[tuple[int, str, float], ...] = ()
            if first_log_probs is not None:  # the candidates Step chooses among, as below
                choices = choosable(first_log_probs, len(vocab))
                probs, ids = choices.exp().topk(min(top_k, int(choices.isfinite().sum())))
                top = tuple((int(i), vocab.token(int(i)), float(p)) for i, p in zip(ids, probs))
            return DecodeSnapshot(False, (), (), (), (), tuple(vocab.tokens(wanted)), top, False, 0)
        sess = self._session
        out = sess.output
        correct = tuple((wanted[i] == tok) if i < len(wanted) else False for i, tok in enumerate(out))
        top = () if sess.finished else tuple((i, vocab.token(i), p) for i, p in sess.peek().top_k(top_k, len(vocab)))
        return DecodeSnapshot(
            True,
            tuple(out),
            tuple(vocab.tokens(out)),
            tuple(s.forced for s in sess.steps),
            correct,
            tuple(vocab.tokens(wanted)),
            top,
            sess.finished,
            len(sess.tokens) - 1,
        )
