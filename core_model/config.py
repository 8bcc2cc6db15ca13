"""Frozen, validated configuration for the model (the one place options are checked)."""

from __future__ import annotations

import reprlib
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, get_args

from .vocab import N_SPECIALS

PositionalKind = Literal["sinusoidal", "rope"]
NormPosition = Literal["pre", "post"]
NormKind = Literal["layernorm", "rmsnorm"]
ActivationKind = Literal["relu", "gelu"]
PE_BASE = 10000.0  # the 10000 of paper §3.5's sinusoids; RoFormer (Su et al. 2021) keeps it as RoPE's theta
PE_BASE_RANGE = (2.0, 1e9)  # the pe_base values ModelConfig accepts, both ends included
# Upper limits: a checkpoint file names these numbers, so without limits a 1 MB file could ask for gigabytes.
# Each admits every model the app, its tests and benchmarks build (largest: d_model 512, 6+6 layers, d_ff 2048;
# vocabularies of at most 39 symbols + 3 specials) with ample headroom, and refuses sizes no toy task needs.
MAX_VOCAB_SIZE = 1024  # 25x the largest task vocabulary
MAX_D_MODEL = 2048  # 4x the widest benchmark model
MAX_D_FF = 8192  # 4 * MAX_D_MODEL, the paper's ratio
MAX_HEADS = 64
MAX_LAYERS = 24  # per stack; 4x the deepest benchmark model
MAX_LEN = 4096  # positions; attention maps grow with its square, so a few thousand is already slow to show
TRAINING_ONLY_FIELDS = ("dropout", "drop_path")  # no weights of their own, no effect in eval mode
MAX_MODEL_BYTES = 512 * 2**20  # weights + position tables; ~3x the d_model 512 6+6 benchmark model (~180 MB)


def check_choice(field: str, value: object, allowed: tuple[object, ...]) -> None:
    """Raise a ValueError that names the field and its allowed values."""
    if value not in allowed:
        raise ValueError(f"{field} must be one of {list(allowed)}, got {_short(value)}")


def check_int(field: str, value: object, minimum: int, maximum: int | None = None) -> None:
    """Raise a ValueError unless value is an int >= minimum (and <= maximum when given; bools are refused)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{field} must be an integer >= {minimum}, got {_short(value)}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{field} must be an integer in [{minimum}, {maximum}], got {_short(value)}")


_REPR = reprlib.Repr()  # keyword arguments need Python 3.12
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 2, 4, 4, 4
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 40


def _short(value: object) -> str:
    """A repr short enough for a message: a hostile file may hold a 10**5-digit number or lists nested 10**5 deep
    (a plain repr of those runs out of stack), so nesting, lengths and digits are cut before the text is made."""
    text = _REPR.repr(value) if not isinstance(value, int) or value.bit_length() < 200 else "a huge number"
    return text if len(text) <= 60 else text[:57] + "..."


def check_float(field: str, value: object, low: float, high: float, *, high_open: bool = False) -> None:
    """Raise a ValueError unless low <= value <= high (or < high when high_open)."""
    ok = False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        v = float(value) if isinstance(value, float) or abs(value) < 2**1000 else float("inf")  # no OverflowError
        ok = v == v and low <= v and (v < high if high_open else v <= high)
    if not ok:
        bracket = ")" if high_open else "]"
        raise ValueError(f"{field} must be a number in [{low}, {high}{bracket}, got {_short(value)}")


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of the encoder-decoder; defaults are the app's small copy-task model."""

    vocab_size: int = 13  # <pad>, <bos>, <eos> + 10 digit symbols: Vocabulary.size_for(10)
    d_model: int = 64  # width of every residual stream
    n_heads: int = 4  # attention heads per attention sublayer
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    d_ff: int = 256  # hidden width of the position-wise feed-forward
    dropout: float = 0.0  # paper uses 0.1; a toy copy model learns faster without it
    drop_path: float = 0.0  # stochastic depth (Huang et al. 2016): a residual branch skipped per sample in training
    max_len: int = 256  # longest sequence the positional encoding is built for
    positional: PositionalKind = "rope"  # "sinusoidal" is the paper; RoPE learns the copy task ~3x faster
    pe_base: float = PE_BASE  # the 10000 of paper §3.5 (also RoPE's theta)
    norm_position: NormPosition = "pre"  # "post" is the paper; "pre" trains faster and more stably
    norm: NormKind = "layernorm"
    activation: ActivationKind = "relu"
    tie_embeddings: bool = True  # paper §3.4: source, target embeddings and generator share weights
    residual_scale: bool = False  # a learnable scalar (init 1) on each sublayer's branch: x + s * f(x)

    def __post_init__(self) -> None:
        check_int("vocab_size", self.vocab_size, N_SPECIALS + 1, MAX_VOCAB_SIZE)  # >= 1 symbol
        check_int("d_model", self.d_model, 1, MAX_D_MODEL)
        check_int("n_heads", self.n_heads, 1, MAX_HEADS)
        check_int("d_ff", self.d_ff, 1, MAX_D_FF)
        check_int("max_len", self.max_len, 1, MAX_LEN)
        check_int("n_encoder_layers", self.n_encoder_layers, 1, MAX_LAYERS)
        check_int("n_decoder_layers", self.n_decoder_layers, 1, MAX_LAYERS)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.positional == "rope" and (self.d_model // self.n_heads) % 2:
            raise ValueError("positional 'rope' needs an even head size (d_model / n_heads)")
        check_float("dropout", self.dropout, 0.0, 1.0, high_open=True)
        check_float("drop_path", self.drop_path, 0.0, 1.0, high_open=True)
        check_float("pe_base", self.pe_base, *PE_BASE_RANGE)
        check_choice("positional", self.positional, get_args(PositionalKind))
        check_choice("norm_position", self.norm_position, get_args(NormPosition))
        check_choice("norm", self.norm, get_args(NormKind))
        check_choice("activation", self.activation, get_args(ActivationKind))
        for flag in ("tie_embeddings", "residual_scale"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"{flag} must be one of [True, False], got {_short(getattr(self, flag))}")
        if self.estimated_bytes > MAX_MODEL_BYTES:
            raise ValueError(
                f"this configuration needs about {self.estimated_bytes / 2**20:,.0f} MiB of weights, "
                f"more than the limit of {MAX_MODEL_BYTES // 2**20} MiB"
            )

    @property
    def estimated_bytes(self) -> int:
        """Memory the built model takes, from arithmetic alone (an upper bound: tied weights counted twice).

        Checked before anything is allocated, so an oversized configuration fails in microseconds.
        """
        d, ff, v = self.d_model, self.d_ff, self.vocab_size
        attention = 4 * (d * d + d)  # q, k, v, o projections with biases
        feed_forward = 2 * d * ff + ff + d
        norm = 2 * d + (1 if self.residual_scale else 0)  # each sublayer's norm, and its residual scale when on
        encoder = self.n_encoder_layers * (attention + feed_forward + 2 * norm)
        decoder = self.n_decoder_layers * (2 * attention + feed_forward + 3 * norm)
        parameters = encoder + decoder + 2 * 2 * d + 3 * v * d + v  # + embeddings (src, tgt) and generator
        tables = self.max_len * d * 8 if self.positional == "sinusoidal" else self.max_len * self.head_dim * 8
        return 4 * parameters + tables  # float32 weights; float64 position tables

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Build from a dict, refusing unknown keys loudly."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown ModelConfig fields: {unknown}")
        return cls(**data)

    def architecture_differs(self, other: ModelConfig) -> bool:
        """True when weights of one cannot be loaded into the other (training-only rates do not count).

        Dropout and drop_path change nothing outside training and own no weights; residual_scale adds weights.
        """
        a, b = self.to_dict(), other.to_dict()
        for key in TRAINING_ONLY_FIELDS:
            a.pop(key), b.pop(key)
        return a != b
