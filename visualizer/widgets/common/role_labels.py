"""The head roles as the window names them (core_model's short labels: a cross head's `alignment` reads "reads",
the weight it puts where the task's answer comes from, the task's ground-truth `reads`), and what "reads" means."""

from __future__ import annotations

from types import MappingProxyType

from core_model.head_roles import ROLE_LABELS as CORE_LABELS

ROLE_LABELS = MappingProxyType(dict(CORE_LABELS))
READS_MEANING = (
    "reads = weight a cross-attention query puts on the source positions its answer comes from (the task's ground "
    "truth: for copy, every position holding the symbol it outputs; for addition, the place it adds and the one "
    "below, its carry)"
)
