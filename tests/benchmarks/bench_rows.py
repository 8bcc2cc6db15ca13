"""The benchmark report's rows: a measured number, the bar it is held to, and its JSON keys; the table they print as."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field


# ----- rows of the report --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Bar:
    """A target: value (or value / baseline when on_ratio) must be <= or >= limit."""

    op: str  # "<=" or ">="
    limit: float
    on_ratio: bool = False

    def passed(self, x: float) -> bool:
        return x <= self.limit if self.op == "<=" else x >= self.limit

    def text(self) -> str:
        return f"{'ratio ' if self.on_ratio else ''}{self.op} {self.limit:g}"


@dataclass(frozen=True)
class Row:
    """One line of the table and the JSON keys it stands for (value None: not measured, see note)."""

    name: str
    value: float | None
    unit: str = ""
    key: str | None = None
    bar: Bar | None = None
    baseline: float | None = None
    baseline_key: str | None = None
    ratio_key: str | None = None
    note: str = ""
    extra: dict[str, float] = field(default_factory=dict)  # more JSON keys measured with this row

    @property
    def ratio(self) -> float | None:
        if self.value is None or not self.baseline:
            return None
        return self.value / self.baseline

    def status(self) -> str:
        if self.bar is None:
            return ""
        x = self.ratio if self.bar.on_ratio else self.value
        if x is None:
            return "skip" if self.note.startswith("skipped") else "FAIL"
        return "pass" if self.bar.passed(x) else "FAIL"

    def json_items(self) -> dict[str, float]:
        items = {self.key: self.value, self.baseline_key: self.baseline, self.ratio_key: self.ratio, **self.extra}
        return {k: float(v) for k, v in items.items() if k and v is not None and math.isfinite(v)}


def skipped(name: str, why: str = "skipped in --quick") -> Row:
    return Row(name, None, note=why)


def _num(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"


def format_table(rows: Sequence[Row]) -> str:
    """name, value, bar, pass/fail, baseline, ratio, note: one line per row."""
    head = f"{'measurement':<46}{'value':>10} {'unit':<6}{'bar':>14} {'':<5}{'baseline':>10}{'ratio':>8}  note"
    lines = [head, "-" * len(head)]
    for r in rows:
        value = _num(r.value) if r.value is not None else "—"
        lines.append(
            f"{r.name:<46}{value:>10} {r.unit:<6}{r.bar.text() if r.bar else '':>14} {r.status():<5}"
            f"{_num(r.baseline) if r.baseline is not None else '':>10}"
            f"{_num(r.ratio) if r.ratio is not None else '':>8}  {r.note}".rstrip()
        )
    return "\n".join(lines)


def metrics_json(rows: Sequence[Row]) -> dict[str, float]:
    """Every measured number under its key (rows not measured leave their keys out)."""
    out: dict[str, float] = {}
    for row in rows:
        out.update(row.json_items())
    return out
