"""A toy translation between two small synthetic languages, with every target word's source words known.

Why: a real translation pair hides its word alignment; this one is generated from a grammar, so the cross-attention
of a model trained on it can be held against the truth. The source is English-like (subject, verb, object); the
target is an invented language that puts the verb last and the adjective after its noun, and that splits one word
and fuses two, so the alignment leaves the diagonal in places a student can predict.

Source grammar (lowercase words; a sentence is a sequence of words, positions are 0-based word positions)::

    S    -> NP IV | NP TV NP                  3 to 10 words
    NP   -> DET [NUM] [ADJ] NOUN              after a NUM the NOUN is plural
    DET  -> the | my | your | our
    NUM  -> two | three | five | eleven | twelve
    ADJ  -> big | small | red | old | happy
    NOUN -> cat | cats | dog | dogs | bird | birds | child | children | apple | apples | ball | balls
    TV   -> saw | liked | chased | ate | picked up | looked at
    IV   -> slept | ran | sang

"picked up" and "looked at" are two words each (a verb and its particle); a particle stands only after its verb.
A plural noun may also stand without a number ("the cats slept").

Translation, rule by rule (X' is X translated word by word with the lexicon below)::

    NP   = DET [NUM] [ADJ] NOUN  ->  DET' [NUM'] NOUN' [ADJ']   the adjective follows its noun
    S    = NP1 TV NP2            ->  NP1' NP2' TV'              the verb goes last (SVO -> SOV)
    S    = NP IV                 ->  NP' IV'

Lexicon (source -> target)::

    the lo, my mi, your tu, our nu
    two du, three tri, five kin, eleven -> dek un, twelve -> dek du           (split: one word -> two)
    big grana, small pika, red roza, old veka, happy fela
    cat miro, cats miroj, dog kano, dogs kanoj, bird pajo, birds pajoj,
    child nino, children ninoj, apple pomo, apples pomoj, ball balo, balls baloj
    saw vidu, liked amu, chased sasu, ate manju, picked up -> prenu, looked at -> rigu  (fused: two words -> one)
    slept dormu, ran kuru, sang kantu

Alignment: each target word comes from the source word it translates; both words of a split ("dek", "du" of
"twelve") align to that one source word, and a fused verb ("prenu") aligns to both of its source words.
"""

from __future__ import annotations

import difflib
import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

log = logging.getLogger(__name__)

Kind = Literal["determiner", "number", "adjective", "noun", "plural noun", "verb", "intransitive verb"]
Positions = tuple[int, ...]  # source word positions, ascending
MIN_WORDS, MAX_WORDS = 3, 10  # the shortest sentence ("the cat slept") and the longest (two full NPs, "picked up")


@dataclass(frozen=True)
class Entry:
    """One lexicon entry: its source words (two for a phrasal verb), its class and its target words."""

    source: tuple[str, ...]
    kind: Kind
    target: tuple[str, ...]

    def __post_init__(self) -> None:
        for field, words in (("source", self.source), ("target", self.target)):
            if not 1 <= len(words) <= 2 or not all(w.isascii() and w.isalpha() and w.islower() for w in words):
                raise ValueError(f"Entry.{field} must be one or two lowercase ASCII words, got {words!r}")


def _entries(kind: Kind, pairs: str) -> tuple[Entry, ...]:
    """Entries of one class from "source target, ..." ("picked up = prenu" for several words on a side)."""
    out = []
    for pair in pairs.split(","):
        source, target = pair.split("=") if "=" in pair else pair.split()
        out.append(Entry(tuple(source.split()), kind, tuple(target.split())))
    return tuple(out)


LEXICON: tuple[Entry, ...] = (
    *_entries("determiner", "the lo, my mi, your tu, our nu"),
    *_entries("number", "two du, three tri, five kin, eleven = dek un, twelve = dek du"),
    *_entries("adjective", "big grana, small pika, red roza, old veka, happy fela"),
    *_entries("noun", "cat miro, dog kano, bird pajo, child nino, apple pomo, ball balo"),
    *_entries("plural noun", "cats miroj, dogs kanoj, birds pajoj, children ninoj, apples pomoj, balls baloj"),
    *_entries("verb", "saw vidu, liked amu, chased sasu, ate manju, picked up = prenu, looked at = rigu"),
    *_entries("intransitive verb", "slept dormu, ran kuru, sang kantu"),
)
SOURCE_WORDS: tuple[str, ...] = tuple(word for entry in LEXICON for word in entry.source)
TARGET_WORDS: tuple[str, ...] = tuple(dict.fromkeys(word for entry in LEXICON for word in entry.target))
if len(set(SOURCE_WORDS)) != len(SOURCE_WORDS):
    raise ValueError("every source word must be distinct: one word, one class, one place in the grammar")


def words_of(kind: str) -> tuple[str, ...]:
    """The source words of one class (a phrasal verb as "picked up"), in lexicon order: what a message lists."""
    return tuple(" ".join(entry.source) for entry in LEXICON if entry.kind == kind)


_BY_SOURCE: Mapping[tuple[str, ...], Entry] = MappingProxyType({entry.source: entry for entry in LEXICON})
_PARTICLE: Mapping[str, str] = MappingProxyType({e.source[0]: e.source[1] for e in LEXICON if len(e.source) == 2})
_KIND: Mapping[str, str] = MappingProxyType(
    {word: entry.kind if j == 0 else "particle" for entry in LEXICON for j, word in enumerate(entry.source)}
)
_PLURAL: Mapping[str, str] = MappingProxyType(dict(zip(words_of("noun"), words_of("plural noun"))))
_DESCRIBED: Mapping[str, str] = MappingProxyType(
    {
        "determiner": "a determiner",
        "number": "a number",
        "adjective": "an adjective",
        "noun": "a noun",
        "plural noun": "a plural noun",
        "verb": "a verb",
        "intransitive verb": "a verb that takes no object",
        "particle": "a verb's particle",
    }
)

EXPLANATION = (
    "The target language says the same sentence in its own order. Two things move: an adjective follows its noun "
    "('the red ball' -> 'lo balo roza'), and the verb goes to the end, after the object (subject-object-verb). Read "
    "the cross-attention with target words as rows and source words as columns: it follows the diagonal and crosses "
    "where words move: the noun's row looks one column ahead to the noun and the adjective's row one column back to "
    "the adjective, and the last row looks back to the verb in the middle of the source. Two cases break one-to-one: "
    "'eleven' and 'twelve' become two words ('dek un', 'dek du': ten-one, ten-two), so two rows look at one column; "
    "'picked up' and 'looked at' fuse into one word ('prenu', 'rigu'), so one row looks at two columns."
)


@dataclass(frozen=True)
class NounPhrase:
    """Where a noun phrase's words stand in the source (None: the optional word is absent)."""

    determiner: int
    number: int | None
    adjective: int | None
    noun: int

    def units(self) -> tuple[Positions, ...]:
        """Its source words in target order: the adjective after the noun."""
        order = (self.determiner, self.number, self.noun, self.adjective)
        return tuple((p,) for p in order if p is not None)


@dataclass(frozen=True)
class Parse:
    """A grammatical sentence's parts by source position; the verb holds two positions when it is phrasal."""

    subject: NounPhrase
    verb: Positions
    object: NounPhrase | None  # None for an intransitive verb

    def units(self) -> tuple[Positions, ...]:
        """Its translation units (one lexicon entry each) in target order: subject, object, verb last."""
        objects = self.object.units() if self.object else ()
        return (*self.subject.units(), *objects, self.verb)


# ----- parsing -----
def _unknown(word: str, position: int) -> str:
    """The message for a word outside the source language, with the closest known words."""
    if word.lower() in _KIND:
        return f"word {word!r} at position {position} must be lowercase: {word.lower()!r}"
    close = difflib.get_close_matches(word, SOURCE_WORDS, n=3)
    head = f"word {word!r} at position {position} is not in the source language"
    if close:
        return f"{head}; did you mean {' or '.join(repr(w) for w in close)}?"
    return f"{head}; its words are: {', '.join(SOURCE_WORDS)}"


def _either(options: Sequence[str]) -> str:
    """ "a, b or c": the alternatives a message names."""
    return options[0] if len(options) == 1 else f"{', '.join(options[:-1])} or {options[-1]}"


def _expect(words: Sequence[str], at: int, kinds: set[str], wanted: str) -> int:
    """`at` when the word there is of one of `kinds`; else a ValueError saying what position `at` needs."""
    if at >= len(words):
        stop = "the sentence is empty" if not words else f"the sentence stops after {len(words)} words"
        raise ValueError(f"{stop}; position {at} needs {wanted}")
    if _KIND[words[at]] not in kinds:
        raise ValueError(f"position {at} needs {wanted}, got {words[at]!r} ({_DESCRIBED[_KIND[words[at]]]})")
    return at


def _noun_phrase(words: Sequence[str], at: int, role: str) -> tuple[NounPhrase, int]:
    """The noun phrase starting at `at` and the position after it (ValueError: the rule it breaks)."""
    listed = ", ".join(words_of("determiner"))
    det = _expect(words, at, {"determiner"}, f"a determiner ({listed}) to start {role}")
    at = det + 1
    num = at if at < len(words) and _KIND[words[at]] == "number" else None
    at += 0 if num is None else 1
    adj = at if at < len(words) and _KIND[words[at]] == "adjective" else None
    at += 0 if adj is None else 1
    options = (["a number"] if num is None and adj is None else []) + (["an adjective"] if adj is None else [])
    noun_kind = "a plural noun" if num is not None else "a noun"
    noun = _expect(words, at, {"noun", "plural noun"}, f"{_either([*options, noun_kind])} in {role}")
    if num is not None and _KIND[words[noun]] == "noun":
        raise ValueError(
            f"position {noun} needs a plural noun after the number {words[num]!r} at position {num}: "
            f"{_PLURAL[words[noun]]!r}, not {words[noun]!r}"
        )
    return NounPhrase(det, num, adj, noun), noun + 1


def _verb(words: Sequence[str], at: int) -> Positions:
    """The verb's positions at `at`: one, or two for a phrasal verb and its particle."""
    listed = ", ".join(words_of("verb") + words_of("intransitive verb"))
    at = _expect(words, at, {"verb", "intransitive verb"}, f"a verb ({listed}) after the subject")
    particle = _PARTICLE.get(words[at])
    if particle is None:
        return (at,)
    phrase = f"the verb is '{words[at]} {particle}'"
    if at + 1 >= len(words):
        raise ValueError(f"the sentence stops after {len(words)} words; position {at + 1} needs {particle!r}: {phrase}")
    if words[at + 1] != particle:
        raise ValueError(f"position {at + 1} needs {particle!r} after {words[at]!r} ({phrase}), got {words[at + 1]!r}")
    return (at, at + 1)


def _parse(words: Sequence[str]) -> Parse:
    """The sentence's parse, or a ValueError whose message is the first rule it breaks (a one-line hint)."""
    for position, word in enumerate(words):
        if word not in _KIND:
            raise ValueError(_unknown(word, position))
    subject, at = _noun_phrase(words, 0, "the subject")
    verb = _verb(words, at)
    at = verb[-1] + 1
    transitive = _KIND[words[verb[0]]] == "verb"
    obj = None
    if transitive:
        obj, at = _noun_phrase(words, at, f"the object of {' '.join(words[p] for p in verb)!r}")
    if at < len(words):
        ends = "after its object's noun" if transitive else f"at {words[verb[0]]!r}, which takes no object"
        hint = " (an adjective stands before its noun in the source)" if _KIND[words[at]] == "adjective" else ""
        raise ValueError(f"position {at} holds {words[at]!r}, but the sentence is complete: it ends {ends}{hint}")
    return Parse(subject, verb, obj)


def problem(words: Sequence[str]) -> str | None:
    """The first rule `words` breaks (an unknown word, or a word the grammar does not allow there), or None."""
    try:
        _parse(words)
    except ValueError as error:
        return str(error)
    return None


# ----- translation -----
def _aligned(words: Sequence[str]) -> tuple[tuple[str, Positions], ...]:
    """Each target word with the source positions it comes from, in target order."""
    return tuple(
        (target, unit) for unit in _parse(words).units() for target in _BY_SOURCE[tuple(words[p] for p in unit)].target
    )


def translate(words: Sequence[str]) -> tuple[str, ...]:
    """The target sentence of a grammatical source (ValueError naming the rule otherwise).

    Args:
        words: the source sentence, one word per entry.
    Returns:
        the target words, in target order.
    """
    return tuple(target for target, _ in _aligned(words))


def alignment(words: Sequence[str]) -> tuple[Positions, ...]:
    """Per target word, the source positions it comes from: the ground truth cross-attention is held against.

    Args:
        words: a grammatical source sentence (ValueError naming the rule otherwise).
    Returns:
        one tuple of 0-based source positions per target word of `translate(words)`: one position for a word or
        either half of a split, the verb's two positions for a fused phrasal verb.
    """
    return tuple(unit for _, unit in _aligned(words))


# ----- drawing -----
_NOUN_PHRASES = (
    ("determiner", "noun"),
    ("determiner", "number", "plural noun"),
    ("determiner", "adjective", "noun"),
    ("determiner", "number", "adjective", "plural noun"),
)
_SHAPES: tuple[tuple[str, ...], ...] = (
    *((*np, "intransitive verb") for np in _NOUN_PHRASES),
    *((*a, "verb", *b) for a in _NOUN_PHRASES for b in _NOUN_PHRASES),
    *((*a, "phrasal verb", "particle", *b) for a in _NOUN_PHRASES for b in _NOUN_PHRASES),
)
_CHOICES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "determiner": words_of("determiner"),
        "number": words_of("number"),
        "adjective": words_of("adjective"),
        "noun": words_of("noun") + words_of("plural noun"),  # without a number, either
        "plural noun": words_of("plural noun"),
        "verb": tuple(w for w in words_of("verb") if " " not in w),
        "phrasal verb": tuple(_PARTICLE),
        "intransitive verb": words_of("intransitive verb"),
    }
)


def draw(rng: random.Random, min_words: int = MIN_WORDS, max_words: int = MAX_WORDS) -> tuple[str, ...]:
    """One random grammatical sentence of `min_words` to `max_words` words, deterministic given `rng`.

    Its length is uniform over the lengths the grammar has in the bounds, then its shape (which optional words,
    which kind of verb) uniform over that length's shapes, then each word uniform over its class.

    Args:
        rng: the only source of randomness.
        min_words, max_words: the bounds, both included; they must overlap MIN_WORDS to MAX_WORDS.
    Returns:
        the source words.
    """
    shapes = [shape for shape in _SHAPES if min_words <= len(shape) <= max_words]
    if not shapes:
        raise ValueError(
            f"min_words and max_words must overlap the sentence lengths {MIN_WORDS} to {MAX_WORDS}, "
            f"got {min_words} and {max_words}"
        )
    if min_words < MIN_WORDS or max_words > MAX_WORDS:
        log.debug("draw: bounds %d to %d clipped to the grammar's %d to %d", min_words, max_words, MIN_WORDS, MAX_WORDS)
    length = rng.choice(sorted({len(shape) for shape in shapes}))
    shape = rng.choice([s for s in shapes if len(s) == length])
    words: list[str] = []
    for slot in shape:
        words.append(_PARTICLE[words[-1]] if slot == "particle" else rng.choice(_CHOICES[slot]))
    return tuple(words)


def example() -> tuple[str, ...]:
    """A fixed sentence that shows every case: a split number, an adjective after its noun, a fused verb last."""
    return ("my", "twelve", "happy", "dogs", "picked", "up", "the", "red", "ball")
