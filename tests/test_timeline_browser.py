"""report.html in a real browser: loomcheck runs on a seeded mutant whose recovery records an
answer (ADR 0104), and headless Chromium (Debian's `chromium`, which .ci/run installs; never a
downloaded one) shows the page at 1400x900. What is on screen is asserted: the verdict above the
fold, the page using the window's width, the lane, the cited events with their roles, and the
arrow from the recovery's answer entry to the gate that passed with it. The screenshot is left in
the test's temporary directory for a person to look at."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
MUTANT, INVARIANT = "recovery_resumes", "answer.addressed-while-parked"
WIDTH, HEIGHT = 1400, 900


def _browser_or_skip() -> Any:
    """Playwright's sync API, when it and Debian's chromium are installed. In CI their absence
    fails the test: the page must have been looked at."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "playwright is not installed (pip install -e '.[test]')"
    else:
        if CHROMIUM.exists():
            return sync_playwright
        missing = f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(missing)
    pytest.skip(missing)


def _box(page: Any, selector: str) -> dict[str, float]:
    element = page.locator(selector)
    assert element.is_visible(), f"{selector} is not visible"
    box = element.bounding_box()
    assert box is not None
    return box


def test_the_report_page_shows_the_counterexample_in_chromium(tmp_path: Path) -> None:
    sync_playwright = _browser_or_skip()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    done = subprocess.run([sys.executable, "-m", "loomcheck", "run", "--impl", f"python:mutants.{MUTANT}:make",
                           "--only", INVARIANT, "--report", str(tmp_path / "report")],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto((tmp_path / "report" / "report.html").as_uri())
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
            _assert_on_screen(page)
        finally:
            browser.close()
    print(f"screenshot: {tmp_path / 'report.png'}")


def _assert_on_screen(page: Any) -> None:
    verdict = _box(page, "#verdict")
    assert verdict["y"] + verdict["height"] < HEIGHT / 2, "the verdict leads, above the fold"
    assert page.locator("#verdict .big").inner_text().lower().startswith("failed")
    cause = _box(page, "section.cause")
    assert cause["y"] < HEIGHT and cause["width"] > 1000, "the root cause uses the window's width"
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH, "no horizontal scrolling"

    lane = _box(page, ".tl .h.lane")
    assert lane["width"] > 300 and "x1" in page.locator(".tl .h.lane").inner_text()
    cited = page.locator(".ev.cited")
    assert cited.count() == 2
    roles = [cited.nth(n).locator(".role").inner_text() for n in range(2)]
    assert all(cited.nth(n).locator(".role").is_visible() for n in range(2))
    assert roles[0].startswith("1") and "answer entry 0" in roles[0] and "passed with that entry" in roles[1]
    answer, observed = _box(page, ".ev.cited >> nth=0"), _box(page, ".ev.cited >> nth=1")
    assert "EXECUTION_RESUMED" in cited.nth(0).inner_text() and "loomcheck.observed" in cited.nth(1).inner_text()

    # The arrow leaves the recovery's answer entry and ends, head first, on the gate that passed with it.
    start, end = _box(page, ".pc.from-down.wrong"), _box(page, ".pc.to-from-above.wrong")
    assert answer["y"] < start["y"] < answer["y"] + answer["height"]
    assert observed["y"] < end["y"] + end["height"] < observed["y"] + observed["height"]
    assert abs(end["x"] + end["width"] - observed["x"]) < 12, "the head touches the event it points at"
    assert page.locator(".pc.through.wrong").count() > 0 and page.locator(".pc.through.wrong").first.is_visible()
