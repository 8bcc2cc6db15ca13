"""Lesson files are checked on load: every kind of mistake gives one message naming the file and the field, and a
broken file never stops the others from loading. No Qt needed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core_model.shipped import resource_path
from visualizer.lessons.reading import MAX_FILE_BYTES, MAX_STEPS, MAX_TEXT_CHARS, tomllib
from visualizer.lessons.schema import LessonError, load_lessons, parse_lesson
from visualizer.lessons.vocabulary import ACTIONS, EVENTS, HIGHLIGHTS

GOOD = """
title = "A lesson"
order = 3
[[steps]]
say = "Hover a cell."
setup = [{ action = "set_source", text = "12" }, { action = "show_grid", kind = "cross" }]
highlight = "playground.cross"
until = { event = "cell_hovered", kind = "cross", layer = "last", key_minus_query = 1 }
explain = "Query {query} puts {weight:.3f} on key {key} ({model}, {source})."
"""


def broken(old: str, new: str) -> str:
    assert old in GOOD  # the case really changes the good lesson
    return GOOD.replace(old, new)


CASES = [  # (lesson text, the message must start with, and it must also say)
    (
        broken('event = "cell_hovered"', 'event = "hovr"'),
        "lesson x.toml: steps[0].until.event: ",
        "unknown event 'hovr'",
    ),
    (
        broken('action = "set_source"', 'action = "typ"'),
        "lesson x.toml: steps[0].setup[0].action: ",
        "known: open_model",
    ),
    (broken('text = "12"', 'txt = "12"'), "lesson x.toml: steps[0].setup[0].txt: ", "set_source takes no 'txt'"),
    (broken(', text = "12"', ""), "lesson x.toml: steps[0].setup[0].text: ", "missing (set_source needs it)"),
    (broken('kind = "cross" }]', 'kind = "crss" }]'), "lesson x.toml: steps[0].setup[1].kind: ", "'crss'"),
    (broken('layer = "last"', "layer = 0"), "lesson x.toml: steps[0].until.layer: ", "from 1"),
    (broken("key_minus_query = 1", 'key_minus_query = "1"'), "lesson x.toml: steps[0].until.key_minus_query: ", ""),
    (
        broken("key_minus_query = 1", 'key_minus_query = 1, query_token = "digit"'),
        "lesson x.toml: steps[0].until.query_token: ",
        "unknown value 'digit'; known: symbol",
    ),
    (broken('"playground.cross"', '"playground.crss"'), "lesson x.toml: steps[0].highlight: ", "playground.cross"),
    (broken("{weight:.3f}", "{wieght:.3f}"), "lesson x.toml: steps[0].explain: ", "unknown placeholder {wieght}"),
    (broken("{key}", "{key_token:.2f}"), "lesson x.toml: steps[0].explain: ", "does not fit a str"),
    (broken("{query}", "{query"), "lesson x.toml: steps[0].explain: ", "broken placeholder"),
    (
        broken('until = { event = "cell_hovered", kind = "cross", layer = "last", key_minus_query = 1 }\n', ""),
        "lesson x.toml: steps[0].explain: ",
        "unknown placeholder {query}; this step provides: model, source",
    ),
    (broken('title = "A lesson"', ""), "lesson x.toml: title: ", "missing"),
    (broken("order = 3", 'order = "3"'), "lesson x.toml: order: ", "whole number"),
    (broken("order = 3", "order = 3\ntheme = 1"), "lesson x.toml: theme: ", "unknown field"),
    (broken('say = "Hover a cell."', 'sya = "Hover a cell."'), "lesson x.toml: steps[0].sya: ", "unknown field"),
    (broken('say = "Hover a cell."', 'say = ""'), "lesson x.toml: steps[0].say: ", "non-empty"),
    (
        broken('action = "set_source", text = "12"', 'action = "open_model", model = "x.pt"'),
        "lesson x.toml: steps[0].setup[0].model: ",
        "copy_rope.pt",
    ),
    ('title = "t"\norder = 1\n', "lesson x.toml: steps: ", "at least one"),
]


@pytest.mark.parametrize(("text", "where", "says"), CASES)
def test_each_mistake_names_the_file_and_the_field(text, where, says):
    with pytest.raises(LessonError) as caught:
        parse_lesson(tomllib.loads(text), "x.toml")
    message = str(caught.value)
    assert message.startswith(where) and says in message, message


def test_the_good_lesson_loads_with_every_field():
    lesson = parse_lesson(tomllib.loads(GOOD), "x.toml")
    step = lesson.steps[0]
    assert (lesson.title, lesson.order, len(lesson.steps)) == ("A lesson", 3, 1)
    assert [c.name for c in step.setup] == ["set_source", "show_grid"] and step.setup[0].params == {"text": "12"}
    assert step.until.name == "cell_hovered" and step.until.params["layer"] == "last"
    assert step.highlight == "playground.cross"


@given(st.text(min_size=1, max_size=12).filter(lambda name: name not in EVENTS))
def test_any_unknown_event_is_named(name):
    data = tomllib.loads(GOOD)
    data["steps"][0]["until"]["event"] = name
    with pytest.raises(LessonError, match=r"^lesson x\.toml: steps\[0\]\.until\.event: unknown event"):
        parse_lesson(data, "x.toml")


@given(st.sampled_from(sorted(EVENTS)), st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10))
def test_a_placeholder_is_accepted_exactly_when_the_event_provides_it(event, name):
    data = tomllib.loads(GOOD)
    given_values = {
        "kind": "cross",
        "layer": 1,
        "head": 1,
        "mask": "decoder_causal",
        "tab": "Heads",
        "method": "occlusion",
    }
    given_values["view"] = "cross L2"
    required = {name: given_values[name] for name, param in EVENTS[event].params.items() if param.required}
    data["steps"][0]["until"] = {"event": event, **required}
    data["steps"][0]["explain"] = f"{{{name}}}"
    if name in EVENTS[event].payload or name in ("model", "source"):
        parse_lesson(data, "x.toml")
    else:
        with pytest.raises(LessonError, match=rf"unknown placeholder \{{{name}\}}"):
            parse_lesson(data, "x.toml")


def test_a_broken_file_is_reported_and_the_others_still_load(tmp_path: Path):
    (tmp_path / "01-good.toml").write_text(GOOD)
    (tmp_path / "02-bad.toml").write_text(broken('event = "cell_hovered"', 'event = "hovr"'))
    (tmp_path / "03-not-toml.toml").write_text("title = ")
    lessons, problems = load_lessons(tmp_path)
    assert [lesson.title for lesson in lessons] == ["A lesson"]
    assert problems[0].startswith("lesson 02-bad.toml: steps[0].until.event: unknown event 'hovr'")
    assert problems[1].startswith("lesson 03-not-toml.toml: not valid TOML")


def test_the_shipped_lessons_load_in_order():
    lessons, problems = load_lessons(resource_path("lessons"))
    assert problems == []
    assert [lesson.order for lesson in lessons] == list(range(1, 9))
    assert [lesson.title for lesson in lessons][:2] == ["What one attention map is", "Copying is a diagonal"]


def test_the_runtime_implements_exactly_the_names_a_file_may_use():
    from visualizer.lessons.actions import ACTION_RUNNERS
    from visualizer.lessons.listeners import EVENT_LISTENERS
    from visualizer.lessons.targets import TARGETS

    assert set(ACTION_RUNNERS) == set(ACTIONS)
    assert set(EVENT_LISTENERS) == set(EVENTS)
    assert tuple(TARGETS) == HIGHLIGHTS


def test_the_readmes_example_lesson_loads(tmp_path):
    """What a teacher copies from the README is a lesson the app takes."""
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    start = readme.index("```toml", readme.index("### Writing a lesson")) + len("```toml\n")
    (tmp_path / "02-example.toml").write_text(readme[start : readme.index("```", start)], encoding="utf-8")
    lessons, problems = load_lessons(tmp_path)
    assert problems == [] and [lesson.title for lesson in lessons] == ["Copying is a diagonal"]


def test_the_attribution_methods_a_lesson_may_name_are_the_cores():
    from core_model.attribution_agreement import METHODS
    from visualizer.lessons.vocabulary import ATTRIBUTION_METHODS

    assert ATTRIBUTION_METHODS == METHODS


# ----- bounds: a crafted file is refused, named, before it costs time or memory -----

BOUND_CASES = [  # (lesson text, the message must start with, and it must also say)
    (broken("{weight:.3f}", "{weight:.1000f}"), "lesson x.toml: steps[0].explain: ", "at most 3 digits"),
    (broken("{weight:.3f}", "{weight:1000}"), "lesson x.toml: steps[0].explain: ", "at most 3 digits"),
    (broken("{weight:.3f}", "{weight:.999999999f}"), "lesson x.toml: steps[0].explain: ", "at most 3 digits"),
    (broken("{weight:.3f}", "{weight:999999999}"), "lesson x.toml: steps[0].explain: ", "at most 3 digits"),
    (broken("{weight:.3f}", "{weight!r:.3f}"), "lesson x.toml: steps[0].explain: ", "does not fit"),
    (broken("{weight:.3f}", "{weight!x}"), "lesson x.toml: steps[0].explain: ", "unknown conversion {weight!x}"),
    (broken('say = "Hover a cell."', f'say = "{"a" * 20_001}"'), "lesson x.toml: steps[0].say: ", "at most 20,000"),
    (broken('title = "A lesson"', f'title = "{"a" * 20_001}"'), "lesson x.toml: title: ", "20,001 characters"),
    (broken('text = "12"', f'text = "{"1" * 20_001}"'), "lesson x.toml: steps[0].setup[0].text: ", "at most"),
    (
        broken('say = "Hover a cell."', 'say = "Hover."\ndeep = ' + "[" * 9 + "]" * 9),
        "lesson x.toml: steps[0].deep",
        "nested deeper than 8 levels",
    ),
    (
        GOOD + '[[steps]]\nsay = "again"\n' * 200,
        "lesson x.toml: steps: ",
        "201 steps; a lesson may have at most 200",
    ),
    (
        broken(
            'setup = [{ action = "set_source", text = "12" }',
            "setup = [" + '{ action = "reset_masks" }, ' * 50 + '{ action = "reset_masks" }',
        ),
        "lesson x.toml: steps[0].setup: ",
        "at most 50",
    ),
]


@pytest.mark.parametrize(("text", "where", "says"), BOUND_CASES)
def test_each_bound_is_named_with_the_field(text, where, says):
    with pytest.raises(LessonError) as caught:
        parse_lesson(tomllib.loads(text), "x.toml")
    message = str(caught.value)
    assert message.startswith(where) and says in message, message[:300]


def test_a_lesson_of_200000_steps_is_refused_before_its_steps_are_checked():
    data = {"title": "t", "order": 1, "steps": [{"say": "s", "explain": "{model:.3f}"}] * 200_000}  # each one broken
    with pytest.raises(LessonError, match=r"^lesson x\.toml: steps: 200,000 steps; a lesson may have at most 200$"):
        parse_lesson(data, "x.toml")


@pytest.mark.parametrize(
    ("action", "value", "says"),
    [
        ("set_heads_sequences", "9000000000000", "n: must be a whole number from 1 to 1,000"),
        ("set_heads_sequences", "9e12", "n: must be a whole number from 1 to 1,000"),
        ("set_heads_sequences", "1001", "n: must be a whole number from 1 to 1,000"),
        ("set_training_steps", "9000000000000", "steps: must be a whole number from 1 to 100,000"),
    ],
)
def test_a_set_up_value_beyond_its_box_is_refused(action, value, says):
    field = "n" if action == "set_heads_sequences" else "steps"
    text = broken('{ action = "show_grid", kind = "cross" }', f'{{ action = "{action}", {field} = {value} }}')
    with pytest.raises(LessonError, match=rf"^lesson x\.toml: steps\[0\]\.setup\[1\]\.{says}$"):
        parse_lesson(tomllib.loads(text), "x.toml")


def test_crafted_files_are_named_and_the_good_one_still_loads(tmp_path: Path):
    (tmp_path / "01-good.toml").write_text(GOOD)
    (tmp_path / "02-deep.toml").write_text("a = " + "[" * 50_000 + "]" * 50_000)
    os.mkfifo(tmp_path / "03-fifo.toml")  # reading it would wait for a writer forever
    (tmp_path / "04-big.toml").write_bytes(b"# " + b"x" * MAX_FILE_BYTES)
    (tmp_path / "05-folder.toml").mkdir()
    (tmp_path / "06-latin1.toml").write_bytes('title = "caf\xe9"'.encode("latin-1"))
    lessons, problems = load_lessons(tmp_path)
    assert [lesson.title for lesson in lessons] == ["A lesson"]
    assert problems == [
        "lesson 02-deep.toml: nested deeper than 8 levels of tables and arrays",
        "lesson 03-fifo.toml: not a file (it is a named pipe (FIFO)); a lesson is a .toml text file",
        "lesson 04-big.toml: the file is larger than 1,024 KiB; a lesson is a short text",
        "lesson 05-folder.toml: not a file (it is a folder); a lesson is a .toml text file",
        problems[4],
    ]
    assert problems[4].startswith("lesson 06-latin1.toml: cannot read it ('utf-8' codec can't decode")


def test_the_shipped_lessons_stay_well_inside_the_bounds():
    """The bounds leave room: a teacher's lesson as long as the longest shipped one is far from each."""
    folder = resource_path("lessons")
    assert max(path.stat().st_size for path in folder.glob("*.toml")) * 10 < MAX_FILE_BYTES
    lessons, _ = load_lessons(folder)
    assert max(len(lesson.steps) for lesson in lessons) * 10 < MAX_STEPS
    texts = [text for lesson in lessons for step in lesson.steps for text in (step.say, step.explain)]
    assert max(len(text) for text in texts) * 10 < MAX_TEXT_CHARS
