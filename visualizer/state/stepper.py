"""The decoder stepper of the playground: a DecodeSession that is replayed when masks, gates or the model change."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from core_model import EOS, MaskSpec, Vocabulary
from core_model.decoding import DecodeSession
from core_model.model import HeadGates, Seq2SeqTransformer

from .snapshots import DecodeSnapshot


@dataclass(frozen=True)
class StepperInputs:
    """What a new DecodeSession is built from; read afresh on every (re)start."""

    model: Seq2SeqTransformer
    src: torch.Tensor  # (1, S)
    masks: MaskSpec
    gates: HeadGates | None
    max_new_tokens: int
    prefix: tuple[int, ...]  # target prefix tokens, forced first


class Stepper:
    """Stepping mode while a session exists; teacher forcing (the decoder sees the expected output) otherwise."""

    def __init__(self, inputs: Callable[[], StepperInputs]) -> None:
        self._inputs = inputs
        self._session: DecodeSession | None = None

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

    def session(self) -> DecodeSession:
        """The running session, started (at <bos> + prefix) when there is none."""
        if self._session is None:
            given = self._inputs()
            self._session = DecodeSession(given.model, given.src, given.masks, given.gates,
                                          max_new_tokens=given.max_new_tokens)
            for token in given.prefix:
                if not self._session.finished:
                    self._session.force(token)
        return self._session

    def restart(self) -> None:
        """Back to <bos> plus the prefix, in stepping mode."""
        self._session = None
        self.session()

    def replay(self) -> None:
        """Options changed: run the same tokens again under the new options (forced ones stay forced)."""
        if self._session is None:
            return
        old = [(s.token, s.forced) for s in self._session.steps]
        self.restart()
        sess = self._session
        for token, forced in old[len(sess.steps):]:
            if sess.finished:
                break
            sess.step(token if forced else None)

    def step(self) -> None:
        sess = self.session()
        if not sess.finished:
            sess.step()

    def force(self, token: int) -> None:
        sess = self.session()
        if not sess.finished:
            sess.force(token)

    def back(self, keep: int) -> None:
        """Undo the newest step, never going behind the first `keep` (prefix) tokens."""
        sess = self.session()
        if len(sess.steps) > keep:
            sess.back()

    def run(self) -> None:
        self.session().run()

    def snapshot(self, vocab: Vocabulary, expected: list[int], top_k: int,
                 first_log_probs: torch.Tensor | None) -> DecodeSnapshot:
        """Plain description for the decoder panel; `first_log_probs` is what Step would see first (teacher forcing)."""
        wanted = expected + [EOS]
        if self._session is None:
            top: tuple[tuple[int, str, float], ...] = ()
            if first_log_probs is not None:
                probs, ids = first_log_probs.exp().topk(min(top_k, first_log_probs.numel()))
                top = tuple((int(i), vocab.token(int(i)), float(p)) for i, p in zip(ids, probs))
            return DecodeSnapshot(False, (), (), (), (), tuple(vocab.tokens(wanted)), top, False, 0)
        sess = self._session
        out = sess.output
        correct = tuple((wanted[i] == tok) if i < len(wanted) else False for i, tok in enumerate(out))
        top = () if sess.finished else tuple((i, vocab.token(i), p) for i, p in sess.peek().top_k(top_k))
        return DecodeSnapshot(True, tuple(out), tuple(vocab.tokens(out)), tuple(s.forced for s in sess.steps),
                              correct, tuple(vocab.tokens(wanted)), top, sess.finished, len(sess.tokens) - 1)
