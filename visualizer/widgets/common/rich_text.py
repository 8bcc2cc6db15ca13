"""Text inside rich text: `<bos>`, `<eos>` and `<pad>` are tags to Qt's HTML and vanish unless escaped, and a file's
`<a href>` or `<img>` would be followed or loaded."""

from __future__ import annotations

import html


def escape(text: str) -> str:
    """Text made safe for a rich-text QLabel, tooltip, title or dialog (`<pad>` -> `&lt;pad&gt;`)."""
    return html.escape(str(text), quote=False)


def plain_tooltip(text: str) -> str:
    """A tooltip that shows `text` as written: Qt renders a tooltip as HTML whenever it looks like HTML, so text
    from a file (a lesson's summary) goes into a paragraph of our own, escaped."""
    return f"<p>{escape(text).replace(chr(10), '<br>')}</p>" if text else ""
