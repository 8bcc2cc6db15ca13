"""The top-level usage and the answer to a mistyped verb, both generated from the registry of verbs."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from visualizer.cli.common import PROG, Verb

WINDOW_LINES = (("[Qt options]", "open the window"), ("--version", "print the version and exit"))
SHARED_OPTIONS = "--json, --device, --seed and --threads"


def usage_for(verbs: Mapping[str, Verb]) -> str:
    """`attention-playground --help`: the window's two lines, one usage line and one summary per registered verb."""
    first, indent = f"usage: {PROG} ", " " * len("usage: ")
    width = max(len(text) for text, _ in WINDOW_LINES) + 2
    lines = [
        f"{first if i == 0 else indent + PROG + ' '}{text:<{width}}{what}"
        for i, (text, what) in enumerate(WINDOW_LINES)
    ]
    lines += [f"{indent}{PROG} {verb.name} {verb.synopsis}" for verb in verbs.values()]
    name_width = max((len(name) for name in verbs), default=0) + 2
    lines += ["", "Headless commands (no window, no display needed):"]
    lines += [f"  {verb.name:<{name_width}}{verb.summary}" for verb in verbs.values()]
    example = next(iter(verbs), "VERB")
    lines += [
        f"Run `{PROG} VERB --help` (e.g. `{example} --help`) for a verb's options and the range of each number.",
        f"Every verb prints one JSON object{_tables(verbs)} and takes {SHARED_OPTIONS}.",
        "Options starting with '-' (e.g. -platform offscreen, -style fusion) go to Qt when the window opens.",
    ]
    return "\n".join(lines) + "\n"


def _tables(verbs: Mapping[str, Verb]) -> str:
    """ " (tasks: a table unless --json)": the verbs that print for people unless asked for JSON, or ""."""
    names = [name for name, verb in verbs.items() if verb.json_help is not None]
    return f" ({', '.join(names)}: a table unless --json)" if names else ""


def unknown_verb(word: str, verbs: Mapping[str, Verb]) -> str:
    """One line naming the closest registered verb when there is one, else all of them, and where the usage is."""
    names = list(verbs)
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else f"choose from {', '.join(map(repr, names))}"
    return f"{PROG}: error: unknown command {word[:60]!r}: {hint} (see '{PROG} --help')"
