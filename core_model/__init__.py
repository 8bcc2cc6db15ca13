"""Attention Playground's model: a faithful, switchable encoder-decoder Transformer in pure PyTorch (no Qt)."""

from __future__ import annotations

from .attention import AttentionResult, MultiHeadAttention, ScaledAttention, attention, attention_scores, fast_attention
from .config import ModelConfig
from .masks import MaskSpec, causal_mask, combine, padding_mask, window_mask
from .model import (
    ATTENTION_KINDS,
    AttentionMaps,
    HeadGates,
    Seq2SeqOutput,
    Seq2SeqTransformer,
    build_model,
)
from .positional import apply_rope, rope_angles, rope_frequencies, sinusoidal_table
from .vocab import BOS, EOS, PAD, Vocabulary, VocabularyError

__all__ = [
    "ATTENTION_KINDS",
    "AttentionMaps",
    "AttentionResult",
    "BOS",
    "EOS",
    "HeadGates",
    "MaskSpec",
    "ModelConfig",
    "MultiHeadAttention",
    "PAD",
    "ScaledAttention",
    "Seq2SeqOutput",
    "Seq2SeqTransformer",
    "Vocabulary",
    "VocabularyError",
    "apply_rope",
    "attention",
    "attention_scores",
    "build_model",
    "causal_mask",
    "combine",
    "fast_attention",
    "padding_mask",
    "rope_angles",
    "rope_frequencies",
    "sinusoidal_table",
    "window_mask",
]
