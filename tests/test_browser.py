"""The built site in a real browser: Playwright driving Debian's chromium (installed by the project's script).

Opens the home page and an item page from file://, searches a Chinese and an English query and finds the
expected item, fails on any console error or dialog (a live injected script would raise one), and keeps
screenshots in the test's temporary directory.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.pipeline.demo import sample_files
from infra_radar.pipeline.home import open_store
from infra_radar.pipeline.imports import import_jsonl
from infra_radar.publish import charts
from infra_radar.publish.build import build_site
from infra_radar.store.save import save_items

from .test_site import hostile_item

CHROMIUM = Path("/usr/bin/chromium")
INSTALL = Path(__file__).resolve().parents[1] / "scripts" / "install_browser.sh"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def ensure_chromium() -> None:
    if CHROMIUM.exists():
        return
    result = subprocess.run(["bash", str(INSTALL)], capture_output=True, text=True, timeout=900)
    if not CHROMIUM.exists():
        message = f"chromium could not be installed: {result.stderr.strip()[-300:]}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def site(settings, tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(charts, "available", lambda: False)
    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files())
    save_items(engine, [hostile_item()])
    out = tmp_path / "site"
    build_site(settings, engine, out)
    engine.dispose()
    return out


def test_site_in_chromium(site, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    ensure_chromium()
    problems: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            page = browser.new_page()
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))

            page.goto((site / "index.html").as_uri())
            assert page.locator("h1").first.inner_text().strip()
            page.screenshot(path=str(tmp_path / "home.png"), full_page=True)

            page.goto((site / "items" / "acme+infer" / "1853.html").as_uri())
            assert "acme/infer#1853" in page.locator("h1").inner_text()
            # every statement `radar show --evidence` lists is on the page, its evidence collapsed behind it
            records = json.loads(CliRunner().invoke(main, ["show", "acme/infer#1853", "--evidence", "--json"],
                                                    catch_exceptions=False).output)
            assert records
            shown = page.locator("details.evidence")
            summaries = [" ".join(x.split()) for x in shown.locator("summary").all_inner_texts()]
            assert summaries == [" ".join(r["statement"].replace("`", "").split()) for r in records]
            first = shown.first
            assert not first.evaluate("d => d.open") and not first.locator("blockquote").is_visible()
            first.locator("summary").click()
            assert first.evaluate("d => d.open") and first.locator("blockquote").is_visible()
            assert " ".join(first.locator("blockquote").inner_text().split()) == " ".join(records[0]["text"].replace("`", "").split())
            assert records[0]["rule"] in first.locator("p.facts").inner_text()
            page.screenshot(path=str(tmp_path / "item.png"), full_page=True)

            page.goto((site / "items" / "acme+infer" / "1849.html").as_uri())
            assert "<script>alert(1)</script>" in page.locator("h1").inner_text()  # shown, not run
            assert page.locator("main img, main svg, main script").count() == 0
            page.screenshot(path=str(tmp_path / "hostile.png"), full_page=True)

            page.goto((site / "search.html").as_uri())
            page.fill("#q", "量化")
            page.wait_for_selector("#results li")
            zh = page.locator("#results li a").all_inner_texts()
            assert any(text.startswith("acme/infer#1853 ") for text in zh), zh
            page.screenshot(path=str(tmp_path / "search-zh.png"), full_page=True)

            page.fill("#q", "pluggable kv cache")
            page.wait_for_function("document.querySelector('#results li a') &&"
                                   " !document.querySelector('#results').innerText.includes('#1853 ')")
            en = page.locator("#results li a").all_inner_texts()
            assert any(text.startswith("acme/infer#1843 ") for text in en), en
            page.screenshot(path=str(tmp_path / "search-en.png"), full_page=True)

            page.goto((site / "index.html").as_uri())
            page.fill("header input[name=q]", "调度")
            page.press("header input[name=q]", "Enter")
            page.wait_for_selector("#results li")
            assert page.locator("#results li").count() >= 1
        finally:
            browser.close()
    assert not problems, problems
    assert len(list(tmp_path.glob("*.png"))) == 5
