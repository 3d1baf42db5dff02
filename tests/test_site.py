"""The static site: every page, relative links that resolve, nothing from GitHub live, incremental rebuilds."""

from __future__ import annotations

import json
import re
import tempfile
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.config import load_settings
from infra_radar.models import FileChange, Item
from infra_radar.pipeline.demo import sample_files
from infra_radar.pipeline.home import open_store
from infra_radar.pipeline.imports import import_jsonl
from infra_radar.publish import charts
from infra_radar.publish.build import build_site
from infra_radar.publish.markup import markdown_html, safe_url, script_json
from infra_radar.publish.search import tokens
from infra_radar.store import queries
from infra_radar.store.save import save_items

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(2)>'
SVG = "<svg onload=alert(3)>"
JS_LINK = "javascript:alert(4)"
ALLOWED_SCRIPTS = {"search-index.js", "static/search.js"}


def hostile_item() -> Item:
    """A PR whose every GitHub-authored field tries to inject markup."""
    when = datetime(2026, 8, 2, 9, 30, tzinfo=UTC)
    return Item(
        repo="acme/infer", kind="pr", key="1849", number=1849,
        title=f"[Perf] Faster {SCRIPT} decode {IMG} {SVG} [x]({JS_LINK})",
        body=f"## Purpose\n\n{SCRIPT}\n\n{IMG}\n\n{SVG}\n\n[click me]({JS_LINK}) and <a href=\"{JS_LINK}\">raw</a>\n\n"
             "TTFT 1.20s -> 0.90s on Model-X.\n",
        author=IMG, state="merged", created_at=when, updated_at=when, merged_at=when,
        labels=[SVG], files=[FileChange(f"infer/{IMG}.py", 10, 2)], source="jsonl")


def follow_up_item(day: int = 4) -> Item:
    """A PR on a new day that references an older one."""
    when = datetime(2026, 8, day, 3, 0, tzinfo=UTC)
    return Item(repo="acme/infer", kind="pr", key="1860", number=1860,
                title="[Bugfix] Guard the pluggable KV cache manager against empty batches",
                body="Follow-up to #1843: the NPU manager crashed on an empty batch.\n",
                author="dave-sched", state="merged", created_at=when, updated_at=when, merged_at=when,
                files=[FileChange("infer/core/kv_cache.py", 12, 3)], source="jsonl")


@pytest.fixture(autouse=True)
def no_charts(monkeypatch):
    """Charts cost ~1 s of matplotlib per build; one test below turns them back on."""
    monkeypatch.setattr(charts, "available", lambda: False)


@pytest.fixture
def store(settings):
    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files())
    save_items(engine, [hostile_item()])
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def shared():
    """One site built from the sample and the hostile item, shared by the read-only tests below."""
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setattr(charts, "available", lambda: False)
        mp.setenv("RADAR_HOME", str(Path(tmp) / "home"))
        settings = load_settings()
        engine = open_store(settings)
        import_jsonl(settings, engine, sample_files())
        save_items(engine, [hostile_item()])
        build_site(settings, engine, Path(tmp) / "site")
        yield Path(tmp) / "site", engine
        engine.dispose()


@pytest.fixture
def built(shared) -> Path:
    return shared[0]


class Tags(HTMLParser):
    """Every start tag with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def tags_of(path: Path) -> list[tuple[str, dict[str, str]]]:
    parser = Tags()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.tags


def test_site_has_a_page_for_every_item_day_and_week(built, shared):
    store = shared[1]
    numbered = [ai for ai in queries.analysed_in_window(store, _everything()) if ai.item.number is not None]
    assert len(numbered) >= 20
    for ai in numbered:
        page = built / "items" / ai.item.repo.replace("/", "+") / f"{ai.item.number}.html"
        assert page.is_file(), page
    days = {ai.item.when.date() for ai in queries.analysed_in_window(store, _everything())}
    assert {p.stem for p in (built / "daily").glob("2*.html")} == {d.isoformat() for d in days}
    assert (built / "weekly" / "acme+infer" / "2026-W31.html").is_file()
    for name in ("index.html", "search.html", "search-index.js", "atom.xml", "rss.xml", "static/site.css",
                 "repos/acme+infer.html"):
        assert (built / name).is_file(), name
    card = (built / "items" / "acme+infer" / "1853.html").read_text(encoding="utf-8")
    assert "W4A8" in card and "<table class=\"files\">" in card


def _everything():
    from infra_radar.publish.data import EVERYTHING

    return EVERYTHING


def test_every_relative_link_resolves(built):
    pages = list(built.rglob("*.html"))
    assert len(pages) > 30
    for page in pages:
        for tag, attrs in tags_of(page):
            ref = attrs.get("href") or attrs.get("src") or ""
            if not ref or re.match(r"^(https?:|mailto:|#)", ref):
                continue
            assert not ref.startswith("/"), f"{page}: absolute path {ref} breaks file://"
            target = (page.parent / ref.split("?")[0].split("#")[0]).resolve()
            assert target.exists(), f"{page.relative_to(built)}: {tag} -> {ref}"


def test_nothing_from_github_is_live_anywhere(built):
    hostile = built / "items" / "acme+infer" / "1849.html"
    text = hostile.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text  # shown as text, not dropped
    for page in built.rglob("*.html"):
        rel = page.relative_to(built)
        for tag, attrs in tags_of(page):
            assert tag not in ("svg", "iframe", "object", "embed"), f"{rel}: <{tag}>"
            assert not [k for k in attrs if k.startswith("on")], f"{rel}: event handler on <{tag}>"
            for key in ("href", "src", "action"):
                assert not re.sub(r"\s", "", attrs.get(key, "")).lower().startswith(("javascript:", "data:")), rel
            if tag == "script":
                root = "../" * len(rel.parts[:-1])
                assert attrs.get("src", "").removeprefix(root) in ALLOWED_SCRIPTS, f"{rel}: script {attrs}"
            if tag == "img":
                assert attrs["src"].endswith(".svg") and "://" not in attrs["src"], f"{rel}: img {attrs}"
        body = page.read_text(encoding="utf-8")
        assert "<script>alert" not in body and "<img src=x" not in body and "<svg onload" not in body


def test_search_index_is_inert_json_that_keeps_the_text(built):
    script = (built / "search-index.js").read_text(encoding="utf-8")
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in script
    data = json.loads(script.removeprefix("window.RADAR_INDEX = ").rstrip().rstrip(";"))
    rows = {r[1]: dict(zip(data["fields"], r, strict=True)) for r in data["items"]}
    assert rows["acme/infer#1849"]["title"] == hostile_item().title
    assert rows["acme/infer#1849"]["author"] == IMG


def test_search_keys_hold_both_languages_and_bigrams(built):
    script = (built / "search-index.js").read_text(encoding="utf-8")
    data = json.loads(script.removeprefix("window.RADAR_INDEX = ").rstrip().rstrip(";"))
    keys = {r[1]: " " + r[-1] + " " for r in data["items"]}
    w4a8 = keys["acme/infer#1853"]
    assert " quantization " in w4a8 and " 量化 " in w4a8 and " w4a8 " in w4a8
    assert tokens("投机解码") == ["投机", "机解", "解码"] and tokens("KV-cache #1843") == ["kv", "cache", "1843"]


def test_rebuild_after_one_new_day_rewrites_only_what_changed(settings, store, tmp_path):
    out = tmp_path / "site"
    first = build_site(settings, store, out)
    again = build_site(settings, store, out)
    assert again.written == 0 and again.unchanged == first.pages
    old_page = out / "items" / "acme+infer" / "1853.html"
    before = old_page.stat().st_mtime_ns
    save_items(store, [follow_up_item()])
    third = build_site(settings, store, out)
    assert third.pages == first.pages + 2  # the new item and the new day
    assert third.unchanged >= first.pages - 15, third
    assert old_page.stat().st_mtime_ns == before
    assert (out / "daily" / "2026-08-04.html").is_file()
    referenced = (out / "items" / "acme+infer" / "1843.html").read_text(encoding="utf-8")
    assert 'href="../../items/acme+infer/1860.html"' in referenced  # the older PR now lists its follow-up


def test_markup_helpers_refuse_unsafe_urls_and_raw_html():
    assert safe_url("https://github.com/a/b/pull/1") == "https://github.com/a/b/pull/1"
    for bad in ("javascript:alert(1)", " JaVaScRiPt:alert(1)", "java\tscript:x", "data:text/html,x", "/etc",
                "vbscript:x", ""):
        assert safe_url(bad) == "", bad
    assert script_json({"t": "</script><b>&\u2028"}) == '{"t":"\\u003c/script\\u003e\\u003cb\\u003e\\u0026\\u2028"}'
    html = markdown_html(f"[a]({JS_LINK}) {SCRIPT} ![i](https://x.test/p.png) [ok](https://x.test)")
    assert "javascript:" not in html.replace("[a](javascript:", "") and "<script>" not in html
    assert "<img" not in html and '<a href="https://x.test" rel="noopener noreferrer">ok</a>' in html


def test_repo_page_charts_are_svg_images_with_matplotlib(settings, store, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(charts, "available", lambda: True)
    out = tmp_path / "charts"
    result = build_site(settings, store, out)
    page = (out / "repos" / "acme+infer.html").read_text(encoding="utf-8")
    assert result.charts and page.count('<img src="acme+infer-') == 3
    svg = (out / "repos" / "acme+infer-merged.svg").read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<script" not in svg
    again = build_site(settings, store, out)
    assert again.written == 0  # the SVG is deterministic, so it is not rewritten


def test_without_matplotlib_repo_pages_show_tables(settings, store, tmp_path):
    out = tmp_path / "plain"
    result = build_site(settings, store, out)
    page = (out / "repos" / "acme+infer.html").read_text(encoding="utf-8")
    assert not result.charts and "<img" not in page and '<table class="series">' in page
    assert not list((out / "repos").glob("*.svg"))


def test_cli_site_build_and_serve(store, tmp_path):
    import threading
    import urllib.request

    from infra_radar.publish.serve import make_server

    out = tmp_path / "cli-site"
    result = CliRunner().invoke(main, ["site", "build", str(out)])
    assert result.exit_code == 0, result.output
    assert re.search(r"\d+ files \(\d+ items", result.output)
    server = make_server(out, 0)
    assert server.server_address[0] == "127.0.0.1"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/index.html", timeout=5) as r:
            assert r.status == 200 and b"search.html" in r.read()
    finally:
        server.shutdown()
        server.server_close()
    missing = CliRunner().invoke(main, ["serve", str(tmp_path / "nothing")])
    assert missing.exit_code == 1 and "holds no site" in missing.output


def test_report_pages_carry_the_same_markdown_as_the_cli(settings, store):
    from datetime import date

    from infra_radar.pipeline.analysis import analyze
    from infra_radar.publish.data import load_site_data
    from infra_radar.publish.site import Site
    from infra_radar.render.markdown import render_daily, render_weekly

    analyze(settings, store)
    site = Site(settings, load_site_data(store), engine=store)
    day = date(2026, 8, 2)
    weights = settings.focus_weights
    assert site.daily(day)[2] == render_daily(site.daily_input(day), settings.lang, focus_weights=weights)
    weekly = site.weekly("acme/infer", "2026-W31")[2]
    assert weekly == render_weekly(site.weekly_input("acme/infer", "2026-W31"), settings.lang, focus_weights=weights)
    assert "[#1811](https://github.com/acme/infer/pull/1811)" in weekly  # the week's first key PR, linked


def control_item() -> Item:
    """A PR whose author, title, body and path carry ESC, BEL, NUL and other characters XML cannot hold."""
    when = datetime(2026, 8, 2, 10, 0, tzinfo=UTC)
    return Item(repo="acme/infer", kind="pr", key="1851", number=1851,
                title="[Perf] Faster\x1b[31m decode\x07 \x0b\x0c", body="## Purpose\n\nbell\x07 esc\x1b nul\x00 del\x7f\n",
                author="evil\x1b[0mname\x07", state="merged", created_at=when, updated_at=when, merged_at=when,
                labels=["perf\x1b"], files=[FileChange("infer/\x1bodd\x07.py", 3, 1)], source="jsonl")


def test_control_characters_build_a_whole_site_and_valid_feeds(settings, tmp_path):
    from xml.etree import ElementTree

    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files()[:1])
    save_items(engine, [control_item()])
    out = tmp_path / "site"
    build_site(settings, engine, out)
    engine.dispose()
    assert (out / "items" / "acme+infer" / "1851.html").is_file()
    for name in ("atom.xml", "rss.xml"):
        ElementTree.parse(out / name)  # well-formed XML
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not re.search(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", data), path


def test_a_killed_build_leaves_no_temporary_file_behind(store, settings, tmp_path):
    out = tmp_path / "site"
    (out / "items").mkdir(parents=True)
    left = [out / ".index.html.k3j_9xQa.tmp", out / "items" / ".1843.html.abcd1234.tmp"]
    for path in left:
        path.write_text("half a page")
    mine = out / "notes.tmp"
    mine.write_text("not ours")
    build_site(settings, store, out)
    assert not any(p.exists() for p in left)
    assert mine.exists()
    assert not list(out.rglob(".*.tmp"))
