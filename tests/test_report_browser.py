"""The HTML report of a smoke bench, rendered in a real headless Chromium (selenium + Debian's
chromedriver): headings, images, tables, console errors, layout, nav links, a screenshot.

`make test` installs Debian's ``chromium`` and ``chromium-driver`` (``make browser``) and
selenium (requirements-test.lock); the test is skipped only where /usr/bin/chromium or
/usr/bin/chromedriver is absent.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from quorum.cli.main import app

pytestmark = pytest.mark.realdata

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WIDTH, HEIGHT = 1400, 1000
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    f"--window-size={WIDTH},{HEIGHT}",
]
SECTIONS = [
    "How this was produced",
    "Where QUORUM stands",
    "Main results: auditor style",
    "Main results: dollars",
    "Figures",
]
FIGURES = ["pareto_auditor", "budget_auditor", "pareto_dollars", "budget_dollars", "dashboard"]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium for the module, driven through the Debian chromedriver (a fixed
    executable_path, so selenium-manager never looks for a driver on the network)."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.is_file()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: run `make browser` (apt chromium)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:  # pragma: no cover - make test installs it
        pytest.fail("selenium is not installed: `make test` installs requirements-test.lock")
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="profile-", dir=tmp_path_factory.mktemp("chromium"))
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def report(smoke_dir, tmp_path_factory) -> Path:
    """`quorum report` of the smoke bench, written outside the shared bench folder."""
    target = tmp_path_factory.mktemp("report") / "report.html"
    res = CliRunner().invoke(app, ["report", str(smoke_dir), "--output", str(target)])
    assert res.exit_code == 0, res.output
    return target


@pytest.fixture(scope="module")
def page(browser, report):
    """The report loaded once; ``page.logs`` collects the browser console as tests drain it."""
    browser.set_window_size(WIDTH, HEIGHT)
    browser.get(report.as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    browser.logs = list(browser.get_log("browser"))
    return browser


def js(driver, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)


def test_console_log_catches_errors(browser) -> None:
    """Control for the console check below: a page that throws must show up as SEVERE."""
    browser.get("data:text/html,<title>x</title><script>throw new Error('boom-42')</script>")
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert any("boom-42" in e["message"] for e in severe), severe


def test_title_headings_and_nav(page) -> None:
    assert page.title == "QUORUM benchmark report"
    assert js(page, "return document.querySelector('header h1').innerText") == page.title
    h2 = js(page, "return [...document.querySelectorAll('section h2')].map(e => e.innerText)")
    for name in SECTIONS:
        assert name in h2, (name, h2)
    # every nav link points at a section that exists and is displayed
    broken = js(
        page,
        """return [...document.querySelectorAll('nav a')].filter(a => {
             const t = document.querySelector(a.getAttribute('href'));
             return !t || t.getBoundingClientRect().height === 0;
           }).map(a => a.getAttribute('href'));""",
    )
    assert broken == []
    assert js(page, "return document.querySelectorAll('nav a').length") == len(h2)


def test_every_image_loaded(page) -> None:
    imgs = js(
        page,
        """return [...document.images].map(i => ({alt: i.alt, complete: i.complete,
             w: i.naturalWidth, h: i.naturalHeight, shown: i.getBoundingClientRect().width}));""",
    )
    assert [i["alt"] for i in imgs] == FIGURES
    for i in imgs:
        assert i["complete"] and i["w"] > 100 and i["h"] > 100, i
        assert 100 < i["shown"] <= WIDTH, i  # drawn, and scaled down to the page if wider


def test_tables_rendered_with_rows(page) -> None:
    tables = js(
        page,
        """return [...document.querySelectorAll('table')].map(t => ({
             section: t.closest('section').id,
             head: t.querySelectorAll('thead th').length,
             rows: t.querySelectorAll('tbody tr').length,
             height: t.getBoundingClientRect().height}));""",
    )
    assert len(tables) >= 8, tables
    for t in tables:
        assert t["head"] >= 2 and t["rows"] >= 1 and t["height"] > 30, t
    main = js(page, "return document.querySelector('#main_auditor table').innerText")
    assert "QUORUM" in main and "Random" in main and "±" in main
    # best/second marks are real <b>/<u> elements, not Markdown text
    assert js(page, "return document.querySelectorAll('#main_auditor td b, #main_auditor td u')")


def test_captions_markdown_is_rendered(page) -> None:
    text = js(page, "return document.body.innerText")
    assert "**" not in text and "<u>" not in text and "`" not in text
    bold = js(page, "return [...document.querySelectorAll('.caption b')].map(e => e.innerText)")
    assert "Bold" in bold


def test_layout(page) -> None:
    doc = js(
        page,
        """const e = document.documentElement;
           return {sh: e.scrollHeight, ch: e.clientHeight, sw: e.scrollWidth, cw: e.clientWidth,
                   header: document.querySelector('header').getBoundingClientRect().height};""",
    )
    assert doc["sh"] > 2 * doc["ch"] > 0, doc  # a long page, not an empty or collapsed one
    assert doc["sw"] <= doc["cw"], doc  # nothing wider than the window (tables scroll inside)
    assert doc["header"] > 40, doc
    # readable text: the header title and the config name in <code> on the dark header band
    for sel in ("header h1", "header code", "section h2"):
        fg, bg = js(
            page,
            """let e = document.querySelector(arguments[0]); const fg = getComputedStyle(e).color;
               while (e && getComputedStyle(e).backgroundColor === 'rgba(0, 0, 0, 0)')
                 e = e.parentElement;
               return [fg, e ? getComputedStyle(e).backgroundColor : 'rgb(255, 255, 255)'];""",
            sel,
        )
        assert _contrast(fg, bg) >= 4.5, (sel, fg, bg)


def test_nav_click_shows_the_section_heading(page) -> None:
    from selenium.webdriver.common.by import By

    for target in ("main_dollars", "figures"):
        page.find_element(By.CSS_SELECTOR, f"nav a[href='#{target}']").click()
        got = js(
            page,
            """const h = document.querySelector(location.hash + ' h2');
               const r = h.getBoundingClientRect();
               const nav = document.querySelector('nav').getBoundingClientRect();
               const hit = document.elementFromPoint(r.left + 5, r.top + r.height / 2);
               return {hash: location.hash, y: scrollY, top: r.top, navBottom: nav.bottom,
                       visible: h.contains(hit)};""",
        )
        assert got["hash"] == f"#{target}" and got["y"] > 0, got
        # the heading is on screen and not hidden under the sticky nav bar
        assert got["visible"] and got["navBottom"] <= got["top"] < HEIGHT, got
    js(page, "window.scrollTo(0, 0)")


def test_screenshot_is_not_blank(page, tmp_path_factory) -> None:
    from PIL import Image, ImageStat

    height = js(page, "return document.documentElement.scrollHeight")
    page.set_window_size(WIDTH, min(height + 100, 12000))
    shot = tmp_path_factory.mktemp("screenshot") / "report.png"
    try:
        assert page.save_screenshot(str(shot))
    finally:
        page.set_window_size(WIDTH, HEIGHT)
    print(f"screenshot: {shot}")
    with Image.open(shot) as im:
        rgb = im.convert("RGB")
    assert rgb.height > 2 * HEIGHT, rgb.size
    grey = rgb.convert("L")
    assert ImageStat.Stat(grey).stddev[0] > 15
    assert len(rgb.getcolors(maxcolors=1 << 20) or []) > 500  # text, tables and plots
    # the dark header band is drawn above the light page
    top = ImageStat.Stat(grey.crop((0, 0, rgb.width, 60))).mean[0]
    mid = ImageStat.Stat(grey.crop((0, rgb.height // 2, rgb.width, rgb.height // 2 + 60))).mean[0]
    assert top < 110 < mid, (top, mid)


def test_no_console_errors(page) -> None:
    """Runs last: the console of everything above (load, nav clicks, resizes)."""
    logs = page.logs + page.get_log("browser")
    severe = [e for e in logs if e["level"] == "SEVERE"]
    assert severe == [], severe


def _contrast(fg: str, bg: str) -> float:
    """WCAG contrast ratio of two CSS ``rgb(...)`` colours."""

    def lum(css: str) -> float:
        r, g, b = (int(v) / 255 for v in css[css.index("(") + 1 : -1].split(",")[:3])
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
