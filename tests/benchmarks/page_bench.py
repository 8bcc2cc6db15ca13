"""How long the exported interactive page takes to open in a browser, for the shipped model at 16 tokens.

Debian's headless Chromium loads the page from disk; the time is the navigation's load event (HTML parsed, the
embedded numbers read, every map drawn by the page's script). The baseline is a page of the same size that draws
nothing (the same bytes inside an HTML comment), loaded the same way: the ratio is what the page's own work costs.
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from core_model.checkpoint import load_checkpoint
from core_model.page import build_page
from core_model.shipped import resource_path

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SOURCE = "3141592653589793"  # 16 symbols


@dataclass(frozen=True)
class PageTimes:
    open_s: float  # median load time of the page
    blank_s: float  # median load time of a page of the same size that runs nothing
    size_bytes: int


def available() -> bool:
    """Whether the browser and its driver are installed (the bench skips the row otherwise)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return CHROMIUM.exists() and CHROMEDRIVER.exists()


def _load_seconds(driver, url: str) -> float:
    driver.get(url)
    end = driver.execute_script("return performance.getEntriesByType('navigation')[0].loadEventEnd")
    return float(end) / 1000.0


def measure(repeats: int) -> PageTimes:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    ckpt = load_checkpoint(resource_path("copy_rope.pt"))
    page = build_page(ckpt.build("cpu").eval(), ckpt.task, SOURCE)
    with tempfile.TemporaryDirectory() as folder:
        real, blank = Path(folder) / "page.html", Path(folder) / "blank.html"
        real.write_text(page, encoding="utf-8")
        blank.write_text("<!DOCTYPE html><html><body><!--" + page.replace("--", "- -") + "--></body></html>")
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800"):
            options.add_argument(arg)
        driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
        try:
            _load_seconds(driver, blank.as_uri())  # the browser's own first-start costs, counted in neither
            opens = [_load_seconds(driver, real.as_uri()) for _ in range(repeats)]
            blanks = [_load_seconds(driver, blank.as_uri()) for _ in range(repeats)]
        finally:
            driver.quit()
    return PageTimes(statistics.median(opens), statistics.median(blanks), len(page.encode("utf-8")))
