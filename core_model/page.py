"""One self-contained interactive HTML page of what the model does on one source: share it, open it anywhere.

Inline CSS and script, the numbers embedded as JSON in <script type="application/json">, nothing fetched: the
file works offline and from an e-mail attachment. The numbers are core_model.page_data's, the same as
`attention-playground views --json` prints for the same inputs.
"""

from __future__ import annotations

import html
import json
import os
from typing import Any

from .atomic_files import atomic_path
from .model import Seq2SeqTransformer
from .page_data import page_data
from .page_script import SCRIPT
from .page_style import DIVERGING, HIGHLIGHT, MASK_GREY, VIRIDIS, page_css
from .tasks import TaskSpec

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<header><h1>{title}</h1><div>{subtitle}</div></header>
<main>
<section><h2>View</h2><div id="formula" class="formula"></div></section>
<section><h2>Sequences</h2><div id="sequences"></div></section>
<div id="readout"></div>
<div id="kinds" class="kinds"></div>
<section><h2>Model</h2><div id="summary"></div></section>
</main>
<div id="large"><div class="panel"></div></div>
<script id="page-data" type="application/json">{data}</script>
<script>{script}</script>
</body>
</html>
"""


def embedded_json(data: dict[str, Any]) -> str:
    """Strict JSON safe inside a <script> element: every "<" escaped, so no "</script>" can end it early."""
    return json.dumps(data, allow_nan=False, separators=(",", ":")).replace("<", "\\u003c")


def render_page(data: dict[str, Any]) -> str:
    """The HTML page for page_data's `data` (the colour stops are added here)."""
    styled = {
        **data,
        "style": {"sequential": VIRIDIS, "diverging": DIVERGING, "mask": MASK_GREY, "highlight": HIGHLIGHT},
    }
    title = f"Attention: {data['info']['label']} on '{data['source']}'"
    model = data["model"]
    subtitle = (
        f"task {model['task']['task']}, {model['config']['n_encoder_layers']}+{model['config']['n_decoder_layers']} "
        f"layers, {model['config']['n_heads']} heads, {model['config']['positional']} positions, "
        f"{model['parameters']:,} parameters"
    )
    return TEMPLATE.format(
        title=html.escape(title),
        subtitle=html.escape(subtitle),
        css=page_css(),
        data=embedded_json(styled),
        script=SCRIPT,
    )


def build_page(model: Seq2SeqTransformer, task: TaskSpec, source: str, view: str = "weights", pads: int = 2) -> str:
    """One HTML string: the three kinds of attention of `model` on `source` in `view`, interactive, self-contained.

    Raises VocabularyError for an unknown symbol, ValueError for a bad view or a source the model cannot take.
    """
    return render_page(page_data(model, task, source, view, pads))


def save_page(page: str, path: str | os.PathLike) -> int:
    """Write a page through a temporary renamed over `path` (never a partial file); returns its size in bytes.

    Raises RefusedTarget (an OSError) for a folder or a read-only file, OSError when the write fails.
    """
    body = page.encode("utf-8")
    with atomic_path(path) as tmp:
        tmp.write_bytes(body)
    return len(body)
