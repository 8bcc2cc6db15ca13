"""The exported page in a real browser (Debian's headless Chromium): hovering a cell reads out the number
`views --json` prints, highlights its tokens and outlines, a click opens the large view, nothing overflows, no
script error. Screenshots of the page land in /tmp/page-shots/ for a person to look at."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from test_page import CKPT, KINDS

from visualizer.cli import main

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SHOTS = Path("/tmp/page-shots")
TITLES = {"encoder_self": "Encoder self", "decoder_self": "Decoder self", "cross": "Cross"}
SIDES = {"encoder_self": ("source", "source"), "decoder_self": ("target", "target"), "cross": ("target", "source")}
SOURCE = "31415"
HIGHLIGHT_RGBA = "rgba(255, 59, 48, 1)"  # page_style.HIGHLIGHT, as the browser computes it
SIZES = [(1280, 800), (1920, 1080)]


def cli_json(*args: str) -> dict:
    """Run a verb in this process and parse its one JSON line (a module fixture cannot use capsys)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(args)) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def driver():
    """One headless Chromium for the file; never downloads a browser or a driver (both paths are given)."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        reason = f"the page's browser tests need Debian's chromium and chromium-driver; missing: {', '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    yield browser
    browser.quit()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The CLI's pages for the shipped model (weights, scores, and a source at the model's longest) as file:// URLs,
    with the numbers `views --json` prints for the same inputs."""
    folder = tmp_path_factory.mktemp("pages")
    found: dict[str, tuple[str, dict]] = {}
    for name, view, source, pads in (
        ("weights", "weights", SOURCE, "2"),
        ("scores", "scores", SOURCE, "2"),
        ("longest", "weights", "0123456789012345", "238"),
        ("rollout", "rollout", SOURCE, "2"),
    ):
        out = folder / f"{name}.html"
        cli_json("page", CKPT, "--source", source, "--view", view, "--pads", pads, "--out", str(out))
        numbers = cli_json("views", CKPT, "--source", source, "--mode", view, "--pads", pads, "--json")
        found[name] = (out.as_uri(), numbers)
    masked = found["scores"][1]  # a masked score is null in every view's input
    return {
        name: (url, numbers, None if name in ("longest", "rollout") else masked)
        for name, (url, numbers) in found.items()
    }


def open_page(driver, url: str, width: int, height: int) -> None:
    """Load `url` with a width x height viewport (the window grown by the browser's own frame)."""
    driver.set_window_size(width, height)
    frame = driver.execute_script("return window.outerHeight - window.innerHeight")
    driver.set_window_size(width, height + frame)
    driver.get(url)
    assert driver.execute_script("return [window.innerWidth, window.innerHeight]") == [width, height]


def screenshot(driver, name: str) -> None:
    """What the window shows, for a person to look at (not compared: fonts differ between machines)."""
    SHOTS.mkdir(exist_ok=True)
    assert driver.save_screenshot(str(SHOTS / f"{name}.png"))


def script_errors(driver) -> list[str]:
    """The console's SEVERE entries since the last call (a script error, a failed load)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def map_canvas(driver, kind: str, layer: int, head: int, scope: str = "#kinds"):
    """The drawn canvas of one small map (head -1: the head-average column), scrolled to the middle of the view."""
    box = f"{scope} .map[data-kind='{kind}'][data-layer='{layer}'][data-head='{head}']"
    canvas = driver.find_element(By.CSS_SELECTOR, box + " canvas:not(.over)")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", canvas)
    return canvas


def hover_cell(driver, canvas, i: int, j: int, rows: int, cols: int) -> str:
    """Move the mouse to the centre of cell (query i, key j) of a map as drawn; return the read-out line."""
    box = driver.execute_script(
        "const c = arguments[0], r = c.getBoundingClientRect();"
        "return [r.width, r.height, c.clientLeft, c.clientTop, c.clientWidth, c.clientHeight];",
        canvas,
    )
    width, height, left, top, inner_w, inner_h = box
    x = left + (j + 0.5) * inner_w / cols - width / 2  # offsets count from the element's centre
    y = top + (i + 0.5) * inner_h / rows - height / 2
    ActionChains(driver).move_to_element_with_offset(canvas, round(x), round(y)).perform()
    return driver.execute_script("return document.getElementById('readout').textContent")


def expected_line(numbers: dict, masked: dict | None, kind: str, layer: int, head: int, i: int, j: int) -> str:
    """The read-out a cell should give, built from `views --json` (head -1: the mean of the heads); `masked` is the
    scores view's output (null where masked), None where the cell is known to be shown."""
    q_side, k_side = SIDES[kind]
    q_token, k_token = numbers[f"{q_side}_tokens"][i], numbers[f"{k_side}_tokens"][j]
    if masked and masked["maps"][kind][layer][0][i][j] is None:
        value = "masked"
    elif head < 0:
        value = f"{np.mean([h[i][j] for h in numbers['maps'][kind][layer]]):.3f}"
    else:
        value = f"{numbers['maps'][kind][layer][head][i][j]:.3f}"
    name = f"L{layer + 1} " + ("avg" if head < 0 else f"H{head + 1}")
    writes = (
        f" (writes '{numbers['output_tokens'][i]}')" if q_side == "target" else ""
    )  # what the query position writes
    return f"{TITLES[kind]} {name} query {i} '{q_token}'{writes} -> key {j} '{k_token}': {value}"


def shape(numbers: dict, kind: str) -> tuple[int, int]:
    rows = numbers["maps"][kind][0][0]
    return len(rows), len(rows[0])


@pytest.mark.parametrize(
    "kind, layer, head, i, j",
    [
        ("cross", 0, 1, 3, 4),
        ("encoder_self", 1, 0, 2, 5),
        ("decoder_self", 0, 3, 5, 2),
        ("cross", 1, -1, 2, 2),  # the head-average column
        ("encoder_self", 0, 2, 4, 7),  # a <pad> key: masked
        ("decoder_self", 1, 1, 1, 4),  # a later target position: masked by the causal mask
    ],
)
def test_hovering_a_cell_reads_out_the_number_views_prints(driver, pages, kind, layer, head, i, j):
    url, numbers, masked = pages["weights"]
    open_page(driver, url, 1280, 800)
    line = hover_cell(driver, map_canvas(driver, kind, layer, head), i, j, *shape(numbers, kind))
    assert line == expected_line(numbers, masked, kind, layer, head, i, j) and visible_readouts(driver) == [line]
    assert line.endswith("masked") == (masked["maps"][kind][layer][0][i][j] is None)
    assert script_errors(driver) == []


@pytest.mark.parametrize("kind", KINDS)
def test_the_scores_view_reads_out_negative_scores(driver, pages, kind):
    url, numbers, masked = pages["scores"]
    open_page(driver, url, 1280, 800)
    head_map = np.array([[np.inf if v is None else v for v in row] for row in numbers["maps"][kind][1][2]])
    i, j = np.unravel_index(np.argmin(head_map), head_map.shape)  # the most negative score of L2 H3
    assert head_map[i, j] < 0
    line = hover_cell(driver, map_canvas(driver, kind, 1, 2), int(i), int(j), *head_map.shape)
    assert line == expected_line(numbers, masked, kind, 1, 2, int(i), int(j)) and ": -" in line
    assert script_errors(driver) == []


def visible_readouts(driver) -> list[str]:
    """The texts of the read-out lines not covered by anything at their centres (what a person can read)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#readout, .readout')].filter((r) => {"
        "  const b = r.getBoundingClientRect();"
        "  return document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2) === r;"
        "}).map((r) => r.textContent);"
    )


def outlined(driver, kind: str, layer: int, head: int, rows: int, cols: int) -> tuple[set[int], set[int]]:
    """The rows and the columns a map's overlay outlines: cells bounded on both sides by lines painted across the
    whole map (a row outline's edges run the full width, a column outline's the full height)."""
    full_rows, full_cols, width, height = driver.execute_script(
        "const o = document.querySelector(arguments[0]), w = o.width, h = o.height;"
        "const px = o.getContext('2d').getImageData(0, 0, w, h).data, on = (x, y) => px[(y * w + x) * 4 + 3] > 0;"
        "const all = (n) => [...Array(n).keys()];"
        "return [all(h).filter((y) => all(w).every((x) => on(x, y))),"
        "  all(w).filter((x) => all(h).every((y) => on(x, y))), w, h];",
        f"#kinds .map[data-kind='{kind}'][data-layer='{layer}'][data-head='{head}'] canvas.over",
    )
    return cells(full_rows, height, rows), cells(full_cols, width, cols)


def cells(lines: list[int], pixels: int, count: int) -> set[int]:
    """The cells whose two edges (multiples of the cell size, give or take a line's width) are painted lines."""
    size = pixels / count

    def near(edge: float) -> bool:
        return any(abs(p - edge) <= 2 for p in lines)

    return {c for c in range(count) if near(c * size) and near((c + 1) * size - 1)}


def test_hovering_highlights_the_query_and_key_tokens_everywhere(driver, pages):
    url, numbers, _ = pages["weights"]
    open_page(driver, url, 1280, 800)
    hover_cell(driver, map_canvas(driver, "cross", 0, 1), 3, 4, *shape(numbers, "cross"))
    hit = {
        side: [int(t.get_attribute("data-index")) for t in driver.find_elements(By.CSS_SELECTOR, sel)]
        for side, sel in (("source", "#sequences .tok.hit[data-side='source']"),
                          ("target", "#sequences .tok.hit[data-side='target']"))
    }  # fmt: skip
    assert hit == {"source": [4], "target": [3]}
    chip = driver.find_element(By.CSS_SELECTOR, "#sequences .tok.hit[data-side='target']")
    assert chip.value_of_css_property("background-color") == HIGHLIGHT_RGBA
    assert chip.text == numbers["target_tokens"][3]
    # query target 3, key source 4: outlined as a source row and column, a target row and column, or both
    assert outlined(driver, "cross", 1, 2, *shape(numbers, "cross")) == ({3}, {4})
    assert outlined(driver, "encoder_self", 0, 0, *shape(numbers, "encoder_self")) == ({4}, {4})
    assert outlined(driver, "decoder_self", 1, -1, *shape(numbers, "decoder_self")) == ({3}, {3})
    hover_cell(driver, map_canvas(driver, "encoder_self", 0, 0), 1, 6, *shape(numbers, "encoder_self"))
    assert driver.find_elements(By.CSS_SELECTOR, "#sequences .tok.hit[data-side='target']") == []
    assert outlined(driver, "encoder_self", 1, 3, *shape(numbers, "encoder_self")) == ({1, 6}, {1, 6})
    assert outlined(driver, "cross", 0, 0, *shape(numbers, "cross")) == (set(), {1, 6})
    assert outlined(driver, "decoder_self", 0, 0, *shape(numbers, "decoder_self")) == (set(), set())
    assert script_errors(driver) == []


def test_a_click_opens_the_large_view_and_esc_or_a_click_outside_closes_it(driver, pages):
    url, numbers, masked = pages["weights"]
    open_page(driver, url, 1280, 800)
    large = driver.find_element(By.ID, "large")
    assert not large.is_displayed()
    map_canvas(driver, "cross", 0, 1).click()
    assert large.is_displayed()
    panel = large.find_element(By.CLASS_NAME, "panel")
    assert panel.find_element(By.TAG_NAME, "h3").text.startswith("Cross L1 H2")
    rows = panel.find_elements(By.CLASS_NAME, "tokens")
    assert [r.find_element(By.CLASS_NAME, "name").text for r in rows] == ["keys (source)", "queries (target)"]
    assert [t.text for t in rows[0].find_elements(By.CLASS_NAME, "tok")] == numbers["source_tokens"]
    assert [t.text for t in rows[1].find_elements(By.CLASS_NAME, "tok")] == numbers["target_tokens"]
    big = map_canvas(driver, "cross", 0, 1, scope="#large")
    assert big.size["width"] > 2 * map_canvas(driver, "cross", 0, 1).size["width"]
    line = expected_line(numbers, masked, "cross", 0, 1, 6, 1)
    assert hover_cell(driver, big, 6, 1, *shape(numbers, "cross")) == line
    assert visible_readouts(driver) == [line]  # the large view's own line: the page's is under the dimming
    assert [int(t.get_attribute("data-index")) for t in rows[0].find_elements(By.CSS_SELECTOR, ".tok.hit")] == [1]
    screenshot(driver, "large-1280x800")
    ActionChains(driver).send_keys(Keys.ESCAPE).perform()
    assert not large.is_displayed()
    map_canvas(driver, "decoder_self", 1, -1).click()
    assert large.is_displayed() and large.find_element(By.TAG_NAME, "h3").text.startswith("Decoder self L2 avg")
    ActionChains(driver).move_to_element_with_offset(large, -600, -380).click().perform()  # the dimmed margin
    assert not large.is_displayed()
    assert script_errors(driver) == []


@pytest.mark.parametrize("name", ["weights", "scores", "longest"])
@pytest.mark.parametrize("width, height", SIZES)
def test_the_page_fits_the_window_without_script_errors(driver, pages, name, width, height):
    url, numbers, masked = pages[name]
    open_page(driver, url, width, height)
    screenshot(driver, f"{name}-{width}x{height}")
    assert driver.execute_script("return document.documentElement.scrollWidth") <= width
    assert len(driver.find_elements(By.CSS_SELECTOR, "#kinds .map")) == 2 * (4 + 1) * 3
    assert script_errors(driver) == []


def test_a_map_shrunk_to_fit_still_reads_out_the_cell_under_the_pointer(driver, pages):
    url, numbers, masked = pages["longest"]
    open_page(driver, url, 1280, 800)
    rows, cols = shape(numbers, "cross")
    canvas = map_canvas(driver, "cross", 1, 3)
    assert canvas.size["width"] < 200  # a thumbnail, as at any length: the large view shows the detail
    line = hover_cell(driver, canvas, 8, 9, rows, cols)  # inside the source: no masked key near
    named = line.split(" query ")[1].split(" ")[0], line.split(" -> key ")[1].split(" ")[0]
    i, j = (int(n) for n in named)
    assert abs(i - 8) <= 1 and abs(j - 9) <= 1  # the cell the pointer is on, within a screen pixel
    assert line == expected_line(numbers, masked, "cross", 1, 3, i, j)
    canvas.click()  # the large view of the longest input fits the window too
    panel = driver.execute_script("const r = document.querySelector('#large .panel').getBoundingClientRect();"
                                  "return [r.left, r.top, r.right, r.bottom];")  # fmt: skip
    assert 0 <= panel[0] and 0 <= panel[1] and panel[2] <= 1280 and panel[3] <= 800
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 1280
    screenshot(driver, "longest-large-1280x800")
    assert script_errors(driver) == []


def test_the_output_after_its_first_eos_is_greyed_and_never_judged(driver, pages):
    """As in the app's Prediction line: what the model writes at the pad positions after <eos> means nothing."""
    url, _, _ = pages["weights"]
    open_page(driver, url, *SIZES[0])
    row = driver.find_elements(By.CSS_SELECTOR, "#sequences .tokens")[2]
    chips = row.find_elements(By.CSS_SELECTOR, ".tok")
    texts, classes = [c.text for c in chips], [set(c.get_attribute("class").split()) for c in chips]
    end = texts.index("<eos>")
    assert texts[: end + 1] == [*SOURCE, "<eos>"] and end + 1 < len(texts)  # a copy, then the pad positions
    assert all("past" not in c and "differs" not in c for c in classes[: end + 1])
    assert all("past" in c and "differs" not in c for c in classes[end + 1 :])
    assert chips[-1].value_of_css_property("color") == "rgba(170, 170, 170, 1)"


def test_the_grey_swatch_is_in_the_legends_only_where_cells_are_grey(driver, pages):
    """Rollout blanks nothing, so its legends have no "grey = masked" swatch; the weights view's three have one."""
    found = {}
    for name in ("weights", "rollout"):
        open_page(driver, pages[name][0], *SIZES[0])
        found[name] = [legend.text for legend in driver.find_elements(By.CSS_SELECTOR, "#kinds .legend")]
    assert len(found["weights"]) == len(found["rollout"]) == 3
    assert all("grey = masked" in text for text in found["weights"])
    assert not any("grey" in text for text in found["rollout"])


def test_the_large_view_letters_each_key_over_its_column_and_each_query_beside_its_row(driver, pages):
    url, numbers, _ = pages["weights"]
    open_page(driver, url, 1280, 800)
    map_canvas(driver, "cross", 1, 1).click()
    big = map_canvas(driver, "cross", 1, 1, scope="#large")
    rows, cols = shape(numbers, "cross")
    keys = driver.find_elements(By.CSS_SELECTOR, "#large .axis.cols .lab")
    queries = driver.find_elements(By.CSS_SELECTOR, "#large .axis.rows .lab")
    assert [k.text for k in keys] == numbers["source_tokens"] and [q.text for q in queries] == numbers["target_tokens"]
    box = big.rect
    cell_w, cell_h = box["width"] / cols, box["height"] / rows
    for j, label in enumerate(keys):  # centred over its column, within a fifth of a cell
        centre = label.rect["x"] + label.rect["width"] / 2
        assert abs(centre - (box["x"] + (j + 0.5) * cell_w)) < cell_w / 5, (j, label.text)
    for i, label in enumerate(queries):  # beside its row
        middle = label.rect["y"] + label.rect["height"] / 2
        assert abs(middle - (box["y"] + (i + 0.5) * cell_h)) < cell_h / 5, (i, label.text)
        assert label.rect["x"] + label.rect["width"] <= box["x"] + 1
    hover_cell(driver, big, 3, 4, rows, cols)
    lit = [(e.get_attribute("data-side"), e.text) for e in driver.find_elements(By.CSS_SELECTOR, "#large .lab.hit")]
    assert sorted(lit) == [("source", numbers["source_tokens"][4]), ("target", numbers["target_tokens"][3])]
    assert script_errors(driver) == []
