"""A lesson file checked field by field on load: one clear message naming the file and the field, or a Lesson.

A lesson is TOML (one file per lesson):

    title = "What one attention map is"
    order = 1
    [[steps]]
    say = "What to look at, and what to do."
    setup = [{ action = "set_source", text = "3141" }]
    highlight = "playground.cross"
    until = { event = "cell_hovered", kind = "cross" }
    explain = "Query {query} puts {weight:.3f} on key {key}."

The names a file may use are declared in vocabulary.py.
"""

from __future__ import annotations

import logging
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from visualizer.lessons.reading import (
    MAX_FORMAT_DIGITS,
    MAX_SETUP_ACTIONS,
    MAX_STEPS,
    LessonError,
    check_bounds,
    parse_toml,
    read_lesson_text,
)
from visualizer.lessons.vocabulary import (
    ACTIONS,
    EVENTS,
    HIGHLIGHTS,
    LIVE_VALUES,
    SAMPLES,
    ActionSpec,
    EventSpec,
    Param,
)

log = logging.getLogger(__name__)
LESSON_FIELDS = ("title", "order", "summary", "steps")
STEP_FIELDS = ("say", "setup", "highlight", "until", "explain")
CONVERSIONS: dict[str, Callable[[object], str]] = {
    "r": repr,
    "s": str,
    "a": ascii,
}  # {name!r}: what str.format applies before the format spec
DIGIT_RUN = re.compile(r"\d+")


@dataclass(frozen=True)
class Call:
    """A set-up action or a completing event, with its parameters as the file gives them."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    say: str
    setup: tuple[Call, ...] = ()
    highlight: str | None = None
    until: Call | None = None  # None: the learner reads and presses Next
    explain: str = ""  # shown once the step is done, placeholders filled from the event and live values


@dataclass(frozen=True)
class Lesson:
    title: str
    order: int
    steps: tuple[Step, ...]
    summary: str = ""
    path: Path | None = None


def _fail(where: str, message: str) -> LessonError:
    return LessonError(f"{where}: {message}")


def _at(where: str, key: str) -> str:
    """ "lesson a.toml: title" at the top of a file, "lesson a.toml: steps[0].say" inside it."""
    return f"{where}{key}" if where.endswith(": ") else f"{where}.{key}"


def _unknown_keys(table: dict, known: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in known:
            raise _fail(_at(where, key), f"unknown field; known: {', '.join(known)}")


def _text(table: dict, key: str, where: str, required: bool) -> str:
    value = table.get(key, None if required else "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise _fail(_at(where, key), "missing" if value is None else "must be a non-empty string")
    return value


def _call(table: object, kind: str, registry: Mapping[str, ActionSpec | EventSpec], where: str) -> Call:
    """An action (kind "action") or event (kind "event") table: a known name and valid parameters."""
    if not isinstance(table, dict):
        raise _fail(where, f'must be a table like {{ {kind} = "..." }}')
    name = table.get(kind)
    if not isinstance(name, str) or name not in registry:  # a list or table is no name (nor hashable)
        known = ", ".join(registry)
        raise _fail(
            f"{where}.{kind}", f"unknown {kind} {name!r}; known: {known}" if name else f"missing; known: {known}"
        )
    params: dict[str, Param] = registry[name].params
    for key, value in table.items():
        if key == kind:
            continue
        if key not in params:
            raise _fail(f"{where}.{key}", f"{name} takes no {key!r}; it takes: {', '.join(params) or 'nothing'}")
        if problem := params[key].check(value):
            raise _fail(f"{where}.{key}", problem)
    for key, param in params.items():
        if param.required and key not in table:
            raise _fail(f"{where}.{key}", f"missing ({name} needs it)")
    return Call(name, {k: v for k, v in table.items() if k != kind})


def _check_placeholders(text: str, provided: dict[str, type], where: str) -> None:
    """Every {name} is something the step's event or the app provides, and its format spec fits the value."""
    try:
        fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(text) if name is not None]
    except ValueError as exc:
        raise _fail(where, f"broken placeholder: {exc} (write {{{{ and }}}} for literal braces)") from None
    for name, spec, conversion in fields:
        if name not in provided:
            known = ", ".join(provided)
            raise _fail(where, f"unknown placeholder {{{name}}}; this step provides: {known}")
        if conversion is not None and conversion not in CONVERSIONS:
            raise _fail(where, f"unknown conversion {{{name}!{conversion}}}; known: !r, !s, !a")
        if any(len(digits) > MAX_FORMAT_DIGITS for digits in DIGIT_RUN.findall(spec or "")):
            # checked before format() is tried: {weight:.999999999f} would take minutes and gigabytes
            raise _fail(where, f"format {{{name}:{spec}}}: a width or precision has at most {MAX_FORMAT_DIGITS} digits")
        sample = SAMPLES[provided[name]]
        try:
            format(CONVERSIONS[conversion](sample) if conversion else sample, spec or "")
        except ValueError:
            raise _fail(where, f"format {{{name}:{spec}}} does not fit a {provided[name].__name__}") from None


def _step(table: object, where: str) -> Step:
    if not isinstance(table, dict):
        raise _fail(where, "must be a table ([[steps]])")
    _unknown_keys(table, STEP_FIELDS, where)
    setup = table.get("setup", [])
    if not isinstance(setup, list):
        raise _fail(f"{where}.setup", 'must be a list of actions, e.g. [{ action = "show_tab", tab = "Heads" }]')
    if len(setup) > MAX_SETUP_ACTIONS:
        raise _fail(f"{where}.setup", f"{len(setup):,} actions; a step may run at most {MAX_SETUP_ACTIONS}")
    calls = tuple(_call(t, "action", ACTIONS, f"{where}.setup[{i}]") for i, t in enumerate(setup))
    highlight = table.get("highlight")
    if highlight is not None and highlight not in HIGHLIGHTS:
        raise _fail(f"{where}.highlight", f"unknown target {highlight!r}; known: {', '.join(HIGHLIGHTS)}")
    until = _call(table["until"], "event", EVENTS, f"{where}.until") if "until" in table else None
    explain = _text(table, "explain", where, required=False)
    provided = {**LIVE_VALUES, **(EVENTS[until.name].payload if until else {})}
    _check_placeholders(explain, provided, f"{where}.explain")
    return Step(_text(table, "say", where, required=True), calls, highlight, until, explain)


def parse_lesson(data: dict, name: str, path: Path | None = None) -> Lesson:
    """A Lesson from a parsed TOML table; LessonError names `name` and the field when anything is wrong."""
    where = f"lesson {name}: "
    check_bounds(data, where)
    _unknown_keys(data, LESSON_FIELDS, where)
    title = _text(data, "title", where, required=True)
    order = data.get("order")
    if not isinstance(order, int) or isinstance(order, bool):
        raise _fail(_at(where, "order"), "missing" if order is None else "must be a whole number")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise _fail(_at(where, "steps"), "needs at least one [[steps]] table")
    if len(steps) > MAX_STEPS:
        raise _fail(_at(where, "steps"), f"{len(steps):,} steps; a lesson may have at most {MAX_STEPS}")
    parsed = tuple(_step(s, f"{where}steps[{i}]") for i, s in enumerate(steps))
    return Lesson(title, order, parsed, _text(data, "summary", where, required=False), path)


def load_lesson(path: Path) -> Lesson:
    """One file, read and checked within the bounds of reading.py; LessonError says what is wrong."""
    return parse_lesson(parse_toml(read_lesson_text(path), path.name), path.name, path)


def load_lessons(folder: Path) -> tuple[list[Lesson], list[str]]:
    """Every lesson of a folder in order, and one message per file that could not be used (the rest still load).

    Slow for a slow disk or a large folder: the app calls it on a pool thread."""
    lessons, problems = [], []
    for path in sorted(folder.glob("*.toml")):
        try:
            lessons.append(load_lesson(path))
        except LessonError as exc:
            log.warning("%s", exc)
            problems.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - a file a check missed is named too; the other lessons still load
            log.warning("lesson %s could not be loaded", path.name, exc_info=True)
            problems.append(f"lesson {path.name}: could not be loaded ({type(exc).__name__}: {exc})")
    return sorted(lessons, key=lambda lesson: (lesson.order, lesson.title)), problems
