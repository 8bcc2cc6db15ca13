"""The toy translation against a reference written here from its docstring's grammar, another way on purpose: the
sentence is tagged one letter per unit and parsed by a regular expression; the lexicon is typed out again."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core_model import toy_language as lang

# ----- the reference, from the module docstring -----
DETERMINERS = {"the": "lo", "my": "mi", "your": "tu", "our": "nu"}
NUMBERS = {"two": "du", "three": "tri", "five": "kin", "eleven": "dek un", "twelve": "dek du"}
ADJECTIVES = {"big": "grana", "small": "pika", "red": "roza", "old": "veka", "happy": "fela"}
SINGULARS = {"cat": "miro", "dog": "kano", "bird": "pajo", "child": "nino", "apple": "pomo", "ball": "balo"}
PLURALS = {"cats": "miroj", "dogs": "kanoj", "birds": "pajoj", "children": "ninoj", "apples": "pomoj", "balls": "baloj"}
TRANSITIVE = {
    "saw": "vidu",
    "liked": "amu",
    "chased": "sasu",
    "ate": "manju",
    "picked up": "prenu",
    "looked at": "rigu",
}
INTRANSITIVE = {"slept": "dormu", "ran": "kuru", "sang": "kantu"}
CLASSES = {"D": DETERMINERS, "M": NUMBERS, "A": ADJECTIVES, "N": SINGULARS, "P": PLURALS}
CLASSES |= {"T": TRANSITIVE, "I": INTRANSITIVE}
LEXICON = {source: target.split() for table in CLASSES.values() for source, target in table.items()}
TAG = {source: tag for tag, table in CLASSES.items() for source in table}
NP = "(D)(?:(M)(A)?(P)|()(A)?([NP]))"  # after a number, a plural noun; the empty group keeps seven groups per NP
SENTENCE = re.compile(f"{NP}(?:(T){NP}|(I))")
SOURCE_VOCABULARY = {word for phrase in LEXICON for word in phrase.split()}


def units(words: tuple[str, ...]) -> list[tuple[int, ...]] | None:
    """The sentence's lexicon units (a phrasal verb's two words are one), or None for an unknown word."""
    out: list[tuple[int, ...]] = []
    j = 0
    while j < len(words):
        pair = " ".join(words[j : j + 2])
        size = 2 if pair in LEXICON and j + 1 < len(words) else 1
        if size == 1 and words[j] not in LEXICON:
            return None
        out.append(tuple(range(j, j + size)))
        j += size
    return out


def reference(words: tuple[str, ...]) -> list[tuple[str, tuple[int, ...]]] | None:
    """Target words with their source positions, or None when the sentence is not in the grammar."""
    found = units(words)
    if found is None:
        return None
    phrase = [" ".join(words[p] for p in unit) for unit in found]
    match = SENTENCE.fullmatch("".join(TAG[p] for p in phrase))
    if match is None:
        return None
    order: list[int] = []  # unit indices in target order
    for first in (1, 9):  # the two NPs' groups: D, M, A, P, (), A, N-or-P
        if match.group(first) is None:
            continue
        spans = [match.span(first + k) for k in range(7)]
        det, num, adj1, pl, _, adj2, noun = (s[0] if s[0] >= 0 and s[1] > s[0] else None for s in spans)
        adj, head = (adj1, pl) if num is not None else (adj2, noun)
        order += [i for i in (det, num, head, adj) if i is not None]
    verb = match.start(8) if match.group(8) else match.start(16)
    order.append(verb)
    return [(target, found[i]) for i in order for target in LEXICON[phrase[i]]]


@st.composite
def noun_phrases(draw: st.DrawFn) -> list[str]:
    number = draw(st.none() | st.sampled_from(sorted(NUMBERS)))
    adjective = draw(st.none() | st.sampled_from(sorted(ADJECTIVES)))
    nouns = PLURALS if number else SINGULARS | PLURALS
    words = [draw(st.sampled_from(sorted(DETERMINERS))), number, adjective, draw(st.sampled_from(sorted(nouns)))]
    return [w for w in words if w is not None]


@st.composite
def sentences(draw: st.DrawFn) -> tuple[str, ...]:
    subject = draw(noun_phrases())
    if draw(st.booleans()):
        return (*subject, draw(st.sampled_from(sorted(INTRANSITIVE))))
    verb = draw(st.sampled_from(sorted(TRANSITIVE))).split()
    return (*subject, *verb, *draw(noun_phrases()))


known_words = st.sampled_from(sorted(SOURCE_VOCABULARY))


@st.composite
def near_sentences(draw: st.DrawFn) -> tuple[str, ...]:
    """A grammatical sentence with one or two edits: a word replaced, dropped, added, appended or swapped, or a
    number put after a determiner (a singular noun then breaks agreement). Mostly not grammatical."""
    words = list(draw(sentences()))
    for _ in range(draw(st.integers(1, 2))):
        j = draw(st.integers(0, len(words)))
        edit = draw(st.sampled_from(("replace", "drop", "add", "append", "count", "swap")))
        determiners = [k for k, w in enumerate(words) if w in DETERMINERS]
        if edit in ("add", "append"):
            words.insert(len(words) if edit == "append" else j, draw(known_words))
        elif edit == "count" and determiners:
            words.insert(draw(st.sampled_from(determiners)) + 1, draw(st.sampled_from(sorted(NUMBERS))))
        elif j < len(words) and edit == "replace":
            words[j] = draw(known_words)
        elif j < len(words) and edit == "drop":
            del words[j]
        elif j + 1 < len(words):
            words[j], words[j + 1] = words[j + 1], words[j]
    return tuple(words)


known_word_lists = near_sentences() | st.lists(known_words, max_size=11).map(tuple)


# ----- agreement with the reference -----
@settings(max_examples=300, deadline=None)
@given(sentences())
def test_translation_and_alignment_match_the_reference(words):
    expected = reference(words)
    assert expected is not None
    assert lang.translate(words) == tuple(t for t, _ in expected)
    assert lang.alignment(words) == tuple(p for _, p in expected)
    assert lang.problem(words) is None


@settings(max_examples=400, deadline=None)
@given(known_word_lists)
def test_problem_accepts_exactly_the_grammar(words):
    # known words only, mostly ungrammatical: accepted exactly when the reference parses it
    assert (lang.problem(words) is None) == (reference(words) is not None), words
    if reference(words) is None:
        with pytest.raises(ValueError):
            lang.translate(words)


@settings(max_examples=100, deadline=None)
@given(sentences(), st.sampled_from(sorted(NUMBERS)))
def test_a_number_needs_a_plural_noun(words, number):
    counted = words if words[1] in NUMBERS else (words[0], number, *words[1:])  # the subject counted
    noun = next(w for w in counted if w in SINGULARS or w in PLURALS)
    assert (lang.problem(counted) is None) == (noun in PLURALS) == (reference(counted) is not None)


def test_vocabularies():
    assert set(lang.SOURCE_WORDS) == SOURCE_VOCABULARY
    assert set(lang.TARGET_WORDS) == {t for targets in LEXICON.values() for t in targets}
    for vocabulary in (lang.SOURCE_WORDS, lang.TARGET_WORDS):
        assert isinstance(vocabulary, tuple) and len(set(vocabulary)) == len(vocabulary)
        assert all(re.fullmatch("[a-z]+", word) for word in vocabulary)
        assert 24 <= len(vocabulary) <= 48  # a few dozen


# ----- what the alignment says -----
@settings(max_examples=200, deadline=None)
@given(sentences())
def test_every_target_word_comes_from_its_aligned_source_words(words):
    target, aligned = lang.translate(words), lang.alignment(words)
    assert len(target) == len(aligned)
    for word, positions in zip(target, aligned):
        assert positions and list(positions) == sorted(positions) and all(0 <= p < len(words) for p in positions)
        source = " ".join(words[p] for p in positions)  # a fused word: both of its source words together
        assert word in LEXICON[source], (word, source)
    assert {p for positions in aligned for p in positions} == set(range(len(words)))  # every source word is used


@settings(max_examples=200, deadline=None)
@given(sentences())
def test_the_verb_is_last(words):
    verb = tuple(p for p, w in enumerate(words) if TAG.get(w) in ("T", "I") or w in ("picked", "looked", "up", "at"))
    aligned = lang.alignment(words)
    assert aligned[-1] == verb
    assert verb not in aligned[:-1]


@settings(max_examples=200, deadline=None)
@given(sentences())
def test_adjectives_follow_their_nouns(words):
    aligned = lang.alignment(words)
    for position, word in enumerate(words):
        if word in ADJECTIVES:  # its noun stands right after it in the source
            assert aligned.index((position,)) == aligned.index((position + 1,)) + 1


def test_split_and_fuse():
    words = ("the", "twelve", "cats", "looked", "at", "your", "eleven", "old", "balls")
    assert lang.translate(words) == ("lo", "dek", "du", "miroj", "tu", "dek", "un", "baloj", "veka", "rigu")
    assert lang.alignment(words) == ((0,), (1,), (1,), (2,), (5,), (6,), (6,), (8,), (7,), (3, 4))
    words = ("my", "dog", "picked", "up", "the", "ball")
    assert lang.translate(words) == ("mi", "kano", "lo", "balo", "prenu")
    assert lang.alignment(words)[-1] == (2, 3)


def test_example_shows_every_case():
    words = lang.example()
    assert lang.problem(words) is None
    aligned = lang.alignment(words)
    assert any(len(p) == 2 for p in aligned)  # a fused verb
    assert any(aligned.count(p) == 2 for p in aligned)  # a split number
    assert any(w in ADJECTIVES for w in words)
    assert "verb" in lang.EXPLANATION and "adjective" in lang.EXPLANATION


# ----- problem() -----
@pytest.mark.parametrize(
    ("words", "named"),
    [
        ("the cta slept", ["'cta'", "position 1", "'cat'"]),
        ("the dgo saw my bird", ["'dgo'", "position 1", "'dog'"]),
        ("the cat slpet", ["position 2", "'slept'"]),
        ("the Cat slept", ["position 1", "'cat'"]),
    ],
)
def test_problem_names_an_unknown_word_and_a_close_one(words, named):
    message = lang.problem(words.split())
    assert message is not None and "\n" not in message
    assert all(part in message for part in named), message


@pytest.mark.parametrize(
    ("words", "named"),
    [
        ("cat the slept", ["position 0", "determiner"]),
        ("the cat the dog saw", ["position 2", "verb"]),  # the target's order is not the source's
        ("the big cat", ["position 3", "verb"]),
        ("the cat red saw the dog", ["position 2", "verb"]),
        ("the two cat slept", ["position 2", "'cats'"]),
        ("the cat picked the ball", ["position 3", "'up'"]),
        ("the cat slept the dog", ["position 3", "'slept'"]),
        ("the cat saw the dog big", ["position 5", "adjective"]),
        ("the cat saw", ["position 3", "determiner"]),
        ("", ["position 0", "empty"]),
    ],
)
def test_problem_names_where_the_grammar_breaks(words, named):
    message = lang.problem(words.split())
    assert message is not None and "\n" not in message
    assert all(part in message for part in named), message
    with pytest.raises(ValueError, match=re.escape(message)):
        lang.translate(words.split())


# ----- draw() -----
def test_draw_is_deterministic_and_grammatical():
    first = [lang.draw(random.Random(7)) for _ in range(3)]
    assert first[0] == first[1] == first[2]
    rng_a, rng_b = random.Random(11), random.Random(11)
    drawn = [lang.draw(rng_a) for _ in range(300)]
    assert drawn == [lang.draw(rng_b) for _ in range(300)]
    assert len(set(drawn)) > 250  # not one sentence over and over
    assert all(reference(words) is not None and lang.problem(words) is None for words in drawn)
    assert {len(w) for w in drawn} == set(range(3, 11))
    assert any("picked" in w or "looked" in w for w in drawn) and any("twelve" in w or "eleven" in w for w in drawn)


@pytest.mark.parametrize(("low", "high"), [(3, 3), (5, 5), (10, 10), (4, 7), (0, 20), (9, 100)])
def test_draw_respects_the_bounds(low, high):
    rng = random.Random(low * 100 + high)
    lengths = {len(lang.draw(rng, low, high)) for _ in range(200)}
    assert lengths == set(range(max(low, 3), min(high, 10) + 1))


@pytest.mark.parametrize(("low", "high"), [(0, 2), (11, 12), (6, 5)])
def test_draw_rejects_bounds_outside_the_grammar(low, high):
    with pytest.raises(ValueError, match="min_words and max_words"):
        lang.draw(random.Random(0), low, high)


def test_the_module_needs_no_torch():
    path = Path(lang.__file__)
    code = (
        "import importlib.util, sys; "
        f"spec = importlib.util.spec_from_file_location('toy_language', {str(path)!r}); "
        "module = importlib.util.module_from_spec(spec); sys.modules['toy_language'] = module; "
        "spec.loader.exec_module(module); print(module.problem(module.example()), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "False"]
