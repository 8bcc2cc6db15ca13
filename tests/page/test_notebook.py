"""The page inline in a notebook: the frame holds exactly the exported page, `.data` is `views --json`'s numbers,
two pages cannot clash, bad input is a ValueError that names it, and the example notebook runs end to end."""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from test_page import CKPT, KINDS, embedded, shipped, views_json  # noqa: F401 - `shipped` is the model fixture

from core_model.inputs import decoder_input, encoder_input
from core_model.notebook import AttentionPage, show_attention
from core_model.page import build_page
from core_model.tasks import expected_output

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "attention_in_a_notebook.ipynb"
NOTEBOOK_SOURCE = "3141"  # the input the example notebook shows
COPYING_HEAD = re.compile(r"copying head: L(\d+) H(\d+), mean weight on the aligned key ([0-9.]+)")


class Markup(HTMLParser):
    """The tags and attributes of one HTML string as a browser's tokenizer sees them (attribute values unescaped)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def frames(output: str) -> list[dict[str, str | None]]:
    """The attributes of each <iframe> in a notebook output, after checking that nothing else is outside them."""
    tags = Markup(output).tags
    assert [tag for tag, _ in tags] == ["iframe"] * len(tags), tags
    return [attrs for _, attrs in tags]


def test_the_inline_frame_holds_exactly_the_exported_page(shipped):
    model, task = shipped
    page = show_attention(model, task, "31415", "scores", pads=1)
    output = page._repr_html_()
    (frame,) = frames(output)
    assert frame["srcdoc"] == build_page(model, task, "31415", "scores", pads=1) == page.html
    assert frame["sandbox"] == "allow-scripts"
    assert "width: 100%" in frame["style"] and f"height: {page.height}px" in frame["style"]
    assert output.startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;') and "<script" not in output
    taller = AttentionPage.from_data(page.data, height=2400)._repr_html_()
    assert "height: 2400px" in frames(taller)[0]["style"]
    assert (
        repr(page) == f"AttentionPage(view='scores', source='31415', task='copy', bytes={len(page.html)}, height=860)"
    )


@pytest.mark.parametrize("view", ["weights", "scores", "norms", "rollout"])
def test_data_holds_exactly_the_numbers_views_prints(capsys, shipped, view):
    model, task = shipped
    page = show_attention(model, task, "2718", view, pads=3)
    expected = views_json(capsys, "2718", view, pads=3)
    from_file = AttentionPage.from_checkpoint(CKPT, "2718", view, pads=3)
    for kind in KINDS:
        assert page.data["kinds"][kind]["maps"] == expected["maps"][kind], kind  # the same floats, None where masked
        assert from_file.data["kinds"][kind]["maps"] == expected["maps"][kind], kind
    for field in ("source_tokens", "target_tokens", "output_tokens"):
        assert page.data[field] == expected[field]
    assert embedded(page.html)["kinds"]["cross"]["maps"] == expected["maps"]["cross"]  # what the frame draws


def test_two_pages_in_one_output_share_no_ids_outside_their_frames(shipped):
    model, task = shipped
    first, second = show_attention(model, task, "12"), show_attention(model, task, "98", "rollout")
    output = first._repr_html_() + second._repr_html_()
    found = frames(output)
    assert len(found) == 2 and [f.get("id") for f in found] == [None, None]
    ids = [re.findall(r'\bid="([^"]+)"', frame["srcdoc"]) for frame in found]
    assert "page-data" in ids[0] and set(ids[0]) & set(ids[1])  # inlined side by side, these ids would clash
    assert not re.search(r'\bid="', output)  # outside the frames: no ids, no <script>, no <style>
    assert "<style" not in output and "<script" not in output


@pytest.mark.parametrize(
    "source, view, pads, message",
    [
        ("01x3", "weights", 2, "source: unknown symbol 'x' at position 3; allowed: 0 1 2 3 4 5 6 7 8 9"),
        ("01", "gradients", 2, "view must be one of ['weights', 'scores', 'norms', 'rollout'], got 'gradients'"),
        ("1" * 300, "weights", 2, "the source plus pads must be 1 to 254 symbols, got 302"),
        ("01", "weights", 253, "the source plus pads must be 1 to 254 symbols, got 255"),
        ("01", "weights", -1, "pads must be a whole number, 0 or more, got -1"),
        ("01", "weights", 1.5, "pads must be a whole number, 0 or more, got 1.5"),
    ],
)
def test_bad_input_is_a_value_error_that_names_it(shipped, source, view, pads, message):
    model, task = shipped
    with pytest.raises(ValueError) as caught:
        show_attention(model, task, source, view, pads)
    assert str(caught.value) == message


def test_save_writes_the_page_bytes_through_a_temporary(shipped, tmp_path):
    model, task = shipped
    page = show_attention(model, task, "0123", "norms", pads=0)
    out = tmp_path / "page.html"
    out.write_text("old page", encoding="utf-8")
    assert page.save(out) == out
    assert out.read_bytes() == build_page(model, task, "0123", "norms", pads=0).encode("utf-8")
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]
    with pytest.raises(OSError, match="it is a folder"):
        page.save(tmp_path)
    with pytest.raises(OSError):
        page.save(tmp_path / "missing" / "page.html")
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"] and out.read_bytes() == page.html.encode("utf-8")


def trained_like_the_notebook():
    """The notebook's model, trained here again: the same configuration, seeds, steps and one torch thread (the
    suite's setting), so the same weights; then read with the model's own forward pass, not the page's data."""
    from core_model import ModelConfig, build_model
    from core_model.tasks import TaskSpec
    from core_model.training import TrainConfig, Trainer

    assert torch.get_num_threads() == 1
    with torch.random.fork_rng():  # the notebook seeds torch's generator (dropout); the suite's stays as it was
        torch.manual_seed(0)
        config = ModelConfig(d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=1)
        trainer = Trainer(build_model(config, seed=0), TaskSpec(), TrainConfig(steps=200, seed=0))
        for _ in trainer.train_steps():
            pass
    return trainer.model.eval(), trainer.task


def aligned_weights(model, task, source: str) -> dict[tuple[int, int], float]:
    """Per cross head (1-based layer, head): the mean weight output position i puts on the source symbol it copies,
    computed from the model's own forward pass, not from the page's data."""
    ids = task.vocabulary.encode(source)
    src = torch.tensor([encoder_input(ids, 2, anchored=task.anchored)])
    tgt = torch.tensor([decoder_input(expected_output(task, ids), 2)])
    with torch.inference_mode():
        cross = model(src, tgt, return_attention=True).attention.cross
    offset, n = int(task.anchored), len(ids)
    return {
        (layer + 1, head + 1): float(np.mean([maps[0, head, i, i + offset].item() for i in range(n)]))
        for layer, maps in enumerate(cross)
        for head in range(maps.shape[1])
    }


def run_notebook(path: Path) -> nbformat.NotebookNode:
    """Execute a notebook as Jupyter would, in a kernel of this interpreter importing this checkout.

    The kernel spec is ipykernel's own (this interpreter), never one installed elsewhere on the machine, so the
    test needs nothing but `pip install .[test]`.
    """
    nb = nbformat.read(path, as_version=4)
    km = KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    client = NotebookClient(nb, km=km, timeout=120, resources={"metadata": {"path": str(path.parent)}})
    client.execute(env={**os.environ, "PYTHONPATH": str(ROOT)})
    return nb


def test_the_example_notebook_trains_runs_and_its_number_is_the_models():
    nb = run_notebook(NOTEBOOK)
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    shown = [frames(out.data["text/html"])[0]["srcdoc"] for out in outputs if "text/html" in out.get("data", {})]
    assert [embedded(page)["view"] for page in shown] == ["weights", "scores"]
    assert all(embedded(page)["source"] == NOTEBOOK_SOURCE for page in shown)
    printed = "".join(out.get("text", "") for out in outputs if out.output_type == "stream")
    assert "step 200: loss " in printed  # it trained, and said so
    model, task = trained_like_the_notebook()
    expected = aligned_weights(model, task, NOTEBOOK_SOURCE)
    cross = embedded(shown[0])["kinds"]["cross"]["maps"]
    n, offset = len(NOTEBOOK_SOURCE), int(task.anchored)
    for (layer, head), value in expected.items():
        aligned = [cross[layer - 1][head - 1][i][i + offset] for i in range(n)]
        np.testing.assert_allclose(np.mean(aligned), value, atol=1e-6)
    (found,) = COPYING_HEAD.findall(printed)
    best = max(expected, key=expected.get)
    assert (int(found[0]), int(found[1])) == best
    assert float(found[2]) == pytest.approx(expected[best], abs=5e-5)  # printed to 4 decimals


def test_the_example_notebook_is_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(cell.outputs == [] and cell.execution_count is None for cell in code)
    assert nb.metadata.kernelspec.name == "python3"
