"""Author text is text in every output: hostile titles, bodies, tags, authors, branches, labels and paths,
imported through every source kind (JSON Lines, a git clone, a pasted page, the GitHub API), never become a
link, an image, raw HTML, a heading or emphasis in any report, page, feed or chat message, and still read as
written. The export is data: it keeps them raw.

The Markdown reports are read the way a viewer that allows HTML would (markdown-it with raw HTML on); the
only links allowed are the ones the radar builds (GitHub pages of stored items, the site's own pages).
"""

from __future__ import annotations

import copy
import gzip
import html
import json
import os
import random
import re
import subprocess
import tempfile
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt

from infra_radar.cli import main
from infra_radar.config import load_settings
from infra_radar.pipeline.analysis import analyze
from infra_radar.pipeline.fetch import fetch
from infra_radar.pipeline.home import open_store
from infra_radar.pipeline.imports import import_git, import_jsonl, import_page
from infra_radar.publish import charts
from infra_radar.sources.github import Endpoints, GitHubClient

from .conftest import TEST_DB_URL, _fresh_schema
from .github_stub import GitHubStub, load_repos

LINK = "[SECURITY: rotate your tokens here](https://evil.example/rotate)"
IMAGE = "![x](https://evil.example/p.png)"
HTML = "v2<img src=x onerror=alert(1)><!--"  # a tag, an author, a branch, a label
GIT_TAG = "v2<img/src=x/onerror=alert(1)><!--"  # what git allows in a tag name
HEADING = "# heading"
BOLD = "**bold**"
TICKS = "vllm_ascend/attention/kv`cache``.py"  # backtick runs of 1 and 2 in a path
BRANCH = "rel<img src=x onerror=alert(1)><!--"
WHEN = "2026-07-29T10:00:00+00:00"
BODY = (f"## Motivation\n{HEADING} and {BOLD} and <https://evil.example/auto> and &lt;img src=x onerror=alert(2)&gt;\n\n"
        f"## Modifications\nThis PR adds `kv_cache_reuse` to the paged KV cache of the Ascend NPU attention path "
        f"{LINK} {IMAGE}, so TTFT drops from 1.20 s to 0.90 s on Qwen3-8B.\n\n[ref]: https://evil.example/def\n")
REPOS = ["acme/from-jsonl", "acme/from-git", "acme/from-page", "acme/infer"]
PLATFORMS = ("feishu", "slack", "wecom", "dingtalk")
RADAR_URL = re.compile(r"^https://github\.com/acme/[\w.-]+/(?:pull|issues)/\d+$"
                       r"|^https://github\.com/acme/[\w.-]+/releases/tag/[^\s<>\"'()]+$")


# --- the hostile store, imported through every source kind ----------------------------------------

def _jsonl(folder: Path) -> Path:
    def commit(sha: str, subject: str, files: list[dict]) -> dict:
        return {"kind": "commit", "sha": sha, "parents": ["0" * 40], "author_name": HTML,
                "author_email": "x@evil.example", "authored_at": WHEN, "committer_name": "GitHub",
                "committer_email": "noreply@github.com", "committed_at": WHEN, "subject": subject, "body": BODY,
                "files": files}

    records = [
        {"kind": "repo", "full_name": "acme/from-jsonl", "ref": BRANCH, "range": "main", "head": "1" * 40},
        commit("1" * 40, f"{LINK} {IMAGE} KV cache reuse for NPU attention (#101)",
               [{"path": TICKS, "additions": 120, "deletions": 3},
                {"path": "vllm_ascend/ops/<img src=x onerror=alert(1)>.py", "additions": 5, "deletions": 1}]),
        commit("2" * 40, f"{HEADING} {BOLD} paged attention scheduling fix (#102)",
               [{"path": "vllm_ascend/worker/model_runner.py", "additions": 10, "deletions": 1}]),
        {"kind": "tag", "name": HTML, "target": "1" * 40, "annotated": True, "created_at": WHEN, "tagger": HTML,
         "message": f"{LINK}\n{IMAGE}"},
    ]
    path = folder / "acme+from-jsonl.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    return path


def _clone(folder: Path) -> Path:
    clone = folder / "clone"
    clone.mkdir()
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null",
           "GIT_AUTHOR_NAME": HTML, "GIT_AUTHOR_EMAIL": "x@evil.example", "GIT_AUTHOR_DATE": WHEN,
           "GIT_COMMITTER_NAME": "GitHub", "GIT_COMMITTER_EMAIL": "noreply@github.com", "GIT_COMMITTER_DATE": WHEN}

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(clone), *args], check=True, capture_output=True, env=env)

    git("init", "-q", "-b", "main")
    (clone / TICKS).parent.mkdir(parents=True)
    (clone / TICKS).write_text("x = 1\n" * 40)
    (clone / "vllm_ascend" / "attention" / "a<b>.py").write_text("y = 2\n")
    git("add", "-A")
    git("commit", "-q", "-m", f"{LINK} {IMAGE} KV cache reuse for NPU decode (#201)\n\n{BODY}")
    git("tag", "-a", GIT_TAG, "-m", LINK)
    return clone


def _page(folder: Path) -> Path:
    page = folder / "page.txt"
    page.write_text(f"acme\n/\nfrom-page\n{LINK} {IMAGE} {BOLD} KV cache NPU fix #7\nMerged\n"
                    f"alice merged 1 commit into acme:main from alice:{BRANCH}\n+40 −3\nConversation\n"
                    f"@alice\nalice commented on Jul 29, 2026\nContributor\n{BODY}\n", encoding="utf-8")
    return page


def _github_repos() -> dict:
    repos = load_repos("acme/infer")
    fixture = repos["acme/infer"]
    pr = copy.deepcopy(fixture.pulls[0])
    pr.update(title=f"{LINK} {IMAGE} {BOLD} fuse RMSNorm", body=BODY, baseRefName=BRANCH,
              author={"__typename": "User", "login": HTML},
              labels={"totalCount": 2, "nodes": [{"name": HTML}, {"name": BOLD}]},
              files={"totalCount": 1, "nodes": [{"path": TICKS, "additions": 3, "deletions": 1,
                                                 "changeType": "MODIFIED"}]})
    fixture.pulls[0] = pr
    release = copy.deepcopy(fixture.releases[0])
    release.update(tag_name=HTML, name=LINK, body=f"{LINK}\n{IMAGE}")
    fixture.releases[0] = release
    return repos


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.stdout


@pytest.fixture(scope="module")
def outputs() -> dict:
    """Every output of the hostile store: {"md": {name: Markdown}, "site": folder, "push": {name: payloads},
    "export": [items]}."""
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        mp.setattr(charts, "available", lambda: False)
        mp.setenv("RADAR_HOME", str(folder / "home"))
        if TEST_DB_URL:
            mp.setenv("RADAR_DB_URL", _fresh_schema("author-text-module"))
        settings = load_settings()
        engine = open_store(settings)
        import_jsonl(settings, engine, [_jsonl(folder)])
        import_git(settings, engine, _clone(folder), "acme/from-git", ["main"])
        import_page(settings, engine, _page(folder), "acme/from-page", 7)
        with GitHubStub(_github_repos(), token="t") as stub, \
                GitHubClient(Endpoints(stub.url, stub.url + "/graphql", "t"), wait=lambda *_: None) as client:
            fetch(settings, engine, client, ["acme/infer"], datetime(2026, 7, 1, tzinfo=UTC))
        analyze(settings, engine)
        engine.dispose()
        window = ["--since", "2026-07-01", "--until", "2026-08-05"]
        md = {"daily.zh": _cli("daily", *window), "daily.en": _cli("daily", "--lang", "en", *window)}
        for repo in REPOS:
            md[f"weekly {repo}"] = _cli("weekly", "--repo", repo, *window)
        for ref in ("acme/from-jsonl#101", "acme/from-jsonl#102", "acme/from-git#201", "acme/from-page#7",
                    "acme/infer#1201"):
            md[f"card {ref}"] = _cli("show", ref)
        _cli("site", "build", str(folder / "site"))
        push = {}
        for platform in PLATFORMS:
            push[f"daily {platform}"] = _cli("push", "daily", "--dry-run", "--to", platform, "--date", "2026-07-29")
            push[f"weekly {platform}"] = _cli("push", "weekly", "--dry-run", "--to", platform,
                                              "--repo", "acme/from-jsonl", "--week", "2026-W31")
        exported = json.loads(_cli("export"))
        site = {str(p.relative_to(folder / "site")): p.read_text(encoding="utf-8")
                for p in (folder / "site").rglob("*") if p.suffix in (".html", ".xml")}
        yield {"md": md, "site": site, "push": push, "export": exported}


# --- reading outputs the way a reader's tool does ---------------------------------------------------

class Page(HTMLParser):
    """Start tags with their attributes, comments, and the text (entities decoded)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.comments: list[str] = []
        self.words: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_comment(self, data):
        self.comments.append(data)

    def handle_data(self, data):
        self.words.append(data)

    @property
    def text(self) -> str:
        return " ".join("".join(self.words).split())


_VIEWER = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")


def viewed(markdown: str) -> Page:
    """A Markdown report as a viewer that allows raw HTML shows it."""
    return Page(_VIEWER.render(markdown))


def foreign(page: Page, local_ok: bool = False, ours: tuple[str, ...] = ()) -> list:
    """Elements and links on `page` that the radar did not build (`ours`: elements the page template has)."""
    bad = []
    for tag, attrs in page.tags:
        if tag in ("img", "script", "svg", "iframe", "object", "embed", "style", "form", "input") and tag not in ours:
            bad.append((tag, attrs))
        href = attrs.get("href")
        if tag == "a":
            local = local_ok and not re.match(r"^[a-z][a-z0-9+.-]*:|^//", href or "", re.I)
            if not (local or RADAR_URL.match(href or "")):
                bad.append((tag, attrs))
    return bad + [("comment", c) for c in page.comments]


def test_a_link_in_a_title_is_text_in_every_markdown_report(outputs):
    for name, markdown in outputs["md"].items():
        page = viewed(markdown)
        assert not foreign(page), (name, foreign(page)[:3])
        assert not [a for t, a in page.tags if t == "a" and "evil" in a.get("href", "")], name


def test_an_image_in_a_title_or_body_is_no_image_in_any_report(outputs):
    for name, markdown in outputs["md"].items():
        assert not [t for t, _ in viewed(markdown).tags if t == "img"], name


def test_html_in_tags_authors_branches_labels_and_paths_is_text_in_the_markdown_reports(outputs):
    md = outputs["md"]
    for name, markdown in md.items():
        page = viewed(markdown)
        assert not page.comments and not [t for t, _ in page.tags if t in ("img", "script")], name
    # the release tag, the author, the branch and the label are there to read, whole
    daily = viewed(md["daily.zh"]).text
    assert HTML in daily and GIT_TAG in daily
    card = viewed(md["card acme/infer#1201"]).text
    assert HTML in card and BRANCH in card  # the label and author, the branch
    assert HTML in viewed(md["card acme/from-jsonl#101"]).text  # the author of a history export


def test_a_backtick_in_a_path_cannot_close_the_code_span(outputs):
    whole = {TICKS, TICKS.rsplit("/", 1)[1]}  # the path, or its file name where a sentence names the file
    pieces = {"vllm_ascend/attention/kv", "kv", "cache", ".py", "`.py", "``.py", "cache``.py"}
    seen = set()
    for name, markdown in outputs["md"].items():
        spans = [html.unescape(c) for c in re.findall(r"<code>(.*?)</code>", _VIEWER.render(markdown), re.S)]
        assert not [c for c in spans if c in pieces or ("`" in c and c not in whole)], name
        seen |= set(spans) & whole
    assert TICKS in seen  # the card's file table, the weekly's hot files
    for name in ("card acme/from-jsonl#101", "card acme/from-git#201", "card acme/infer#1201"):
        assert f"<code>{TICKS}</code>" in _VIEWER.render(outputs["md"][name]), name


def test_a_heading_title_is_no_heading_and_bold_is_no_emphasis(outputs):
    for name, markdown in outputs["md"].items():
        html = _VIEWER.render(markdown)
        assert not re.search(r"<h[1-6]>heading", html), name
        assert "<strong>bold</strong>" not in html and "<em>bold" not in html, name
    assert f"{HEADING} {BOLD} paged attention scheduling fix" in viewed(outputs["md"]["daily.zh"]).text


def test_a_reference_definition_in_a_body_defines_nothing(outputs):
    for name, markdown in outputs["md"].items():  # a later [ref] or [x] would link to the definition's URL
        page = viewed(markdown + "\n\n[ref] [x] [SECURITY: rotate your tokens here]\n")
        assert not [a for t, a in page.tags if t == "a" and not RADAR_URL.match(a.get("href", ""))], name


def test_the_title_still_reads_as_written_in_every_report(outputs):
    from infra_radar.render.titles import title_head

    md = outputs["md"]
    words = "SECURITY: rotate your tokens here"
    # a card shows the whole title: as its author typed it, not its rendering
    for name in ("card acme/from-jsonl#101", "card acme/from-git#201", "card acme/from-page#7", "card acme/infer#1201"):
        text = viewed(md[name]).text
        assert f"{LINK} {IMAGE}" in text, name
        assert words in text
    assert f"{BOLD} fuse RMSNorm" in viewed(md["card acme/infer#1201"]).text
    # the daily's tables and deep dives show the title's head (its leading bracket tag dropped), as typed
    head = title_head(f"{LINK} {IMAGE} KV cache reuse for NPU attention")
    assert IMAGE in head
    for name in ("daily.zh", "daily.en"):
        assert head in viewed(md[name]).text, name
    # the weekly names a PR by a whole phrase of its title, as typed (in zh its verb is said in Chinese: "修复 …")
    assert f"{HEADING} {BOLD} paged attention scheduling" in viewed(md["weekly acme/from-jsonl"]).text


def test_site_pages_carry_no_author_link_element_or_comment(outputs):
    for rel, page_html in outputs["site"].items():
        if not rel.endswith(".html"):
            continue
        page = Page(page_html)
        bad = [(t, a) for t, a in foreign(page, local_ok=True, ours=("form", "input"))
               if not (t == "script" and a.get("src", "").endswith(("search.js", "search-index.js")))]
        assert not bad, (rel, bad[:3])
    item = Page(outputs["site"]["items/acme+infer/1201.html"]).text
    assert LINK in item and HTML in item


def test_feeds_carry_no_author_link_in_titles_or_summaries(outputs):
    for name in ("atom.xml", "rss.xml"):
        xml = outputs["site"][name]
        assert "<img" not in xml and "evil.example/rotate\"" not in xml
        for content in re.findall(r"<(?:content|description)[^>]*>(.*?)</(?:content|description)>", xml, re.S):
            page = Page(Page(content).text if "&lt;" in content else content)
            assert not foreign(page, local_ok=True), (name, foreign(page)[:3])
        for title in re.findall(r"<title>(.*?)</title>", xml, re.S):
            assert "\\" not in title  # a title is plain text: no Markdown escapes


def _payload_texts(dry_run: str) -> list[str]:
    texts = []
    for block in re.split(r"^# \S+ \d+/\d+ -> .*$", dry_run, flags=re.M):
        if not block.strip():
            continue
        payload = json.loads(block)

        def walk(value):
            if isinstance(value, dict):
                for v in value.values():
                    yield from walk(v)
            elif isinstance(value, list):
                for v in value:
                    yield from walk(v)
            elif isinstance(value, str):
                yield value
        texts.extend(walk(payload))
    return texts


def test_push_payloads_carry_no_author_link_or_markup_on_every_platform(outputs):
    for name, dry_run in outputs["push"].items():
        platform = name.split()[1]
        texts = _payload_texts(dry_run)
        assert texts, name
        for text in texts:
            if platform == "slack":
                links = re.findall(r"<([^>|]*)", text)
                assert all(RADAR_URL.match(u) for u in links), (name, links)
            else:
                page = viewed(text)
                assert not foreign(page), (name, foreign(page)[:3])
                assert "<at " not in text and "<font" not in text
            assert "https://evil" not in text and "www.evil" not in text  # no bare address to auto-link
    slack = " ".join(_payload_texts(outputs["push"]["daily slack"]))
    assert "SECURITY: rotate your tokens here" in slack


def test_export_keeps_author_text_raw(outputs):
    by_ref = {(i["repo"], i["number"] or i["title"]): i for i in outputs["export"]}
    one = by_ref[("acme/from-jsonl", 101)]
    assert one["title"] == f"{LINK} {IMAGE} KV cache reuse for NPU attention" and one["author"] == HTML
    assert one["branches"] == [BRANCH] and TICKS in [f["path"] for f in one["files"]]
    infer = by_ref[("acme/infer", 1201)]
    assert infer["labels"] == [HTML, BOLD] and infer["author"] == HTML
    assert any(i["kind"] == "release" and i["title"] and HTML in json.dumps(i) for i in outputs["export"])


# --- model prose -------------------------------------------------------------------------------------

# (hosts without a dot: a dotted name the item does not have would get the sentence dropped by grounding)
PROSE_MARKUP = ("[SECURITY: rotate your tokens here](https://evil/rotate) ![x](https://evil/p) "
                "<img src=x onerror=alert(this)> <https://evil/auto>")


def _with_markup(reply):
    """The stub's grounded reply with links, an image, raw HTML and an autolink inside each first sentence."""
    if isinstance(reply, dict):
        return {k: v if k in ("ref", "records") else _with_markup(v) for k, v in reply.items()}
    if isinstance(reply, list):
        return [_with_markup(v) for v in reply]
    if not isinstance(reply, str):
        return reply
    return re.sub(r"(?=[。.](?:\s|$))", f" {PROSE_MARKUP}", reply, count=1)


def test_model_prose_links_images_and_html_are_text_in_the_reports(monkeypatch, radar_home):
    from infra_radar.pipeline.card import show_card
    from infra_radar.pipeline.demo import sample_files
    from infra_radar.pipeline.reports import daily, weekly
    from infra_radar.windows import iso_week

    from . import llm_stub

    original = llm_stub.default_reply
    monkeypatch.setattr(llm_stub, "default_reply", lambda *a, **kw: _with_markup(original(*a, **kw)))
    settings = load_settings(lang="en")
    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files())
    with llm_stub.LlmStub() as server:
        monkeypatch.setenv("RADAR_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("RADAR_LLM_MODEL", "stub-model")
        monkeypatch.setenv("RADAR_LLM_API_KEY", "k")
        reports = {
            "daily": daily(settings, engine, datetime(2026, 7, 28, tzinfo=UTC), datetime(2026, 8, 4, tzinfo=UTC)).text,
            "weekly": weekly(settings, engine, "acme/infer", iso_week("2026-W31")).text,
            "card": show_card(settings, lambda: engine, "acme/infer#1843", False, None),
        }
    engine.dispose()
    for name, markdown in reports.items():
        page = viewed(markdown)
        assert not foreign(page), (name, foreign(page)[:3])
        if name != "card":  # report prose (headline, weekly) kept the sentence, as text; an item's cited
            #                 sentence with a link its records do not hold is dropped (ungrounded)
            assert "rotate your tokens here" in page.text, name


# --- the same classes with other strings ------------------------------------------------------------

PIECES = ["[a](https://evil.example/x)", "![i](https://evil.example/i.png)", "<img src=x onerror=alert(1)>", "<!--",
          "<https://evil.example/a>", "[r]: https://evil.example/d", "[r]", "# h", "> q", "- l", "1. n", "**b**",
          "__u__", "~~s~~", "`", "``", "\\", "&lt;b&gt;", "&#91;x&#93;(https://evil.example/e)", "|", "]", "[", "(",
          ")", "!", "www.evil.example", "a@evil.example", "<at id=all>", "word", "KV cache", "NPU", "\n", "*", "_",
          "=", "---", "```", "~~~", "<script>x</script>", "[x][r]", "javascript:alert(1)", "#1", "v2"]


def test_random_markup_in_every_field_never_becomes_markup_anywhere(radar_home, tmp_path, monkeypatch):
    monkeypatch.setattr(charts, "available", lambda: False)
    rng = random.Random(28)

    def junk(n: int) -> str:
        return "".join(rng.choice(PIECES) + rng.choice(["", " "]) for _ in range(n)).strip() or "x"

    when = "2026-07-12T10:00:00+00:00"
    records = [{"kind": "repo", "full_name": "acme/fuzz", "ref": junk(2).replace("\n", ""), "range": "main",
                "head": "0" * 40}]
    for i in range(16):
        records.append({"kind": "commit", "sha": f"{i:040d}", "parents": ["f" * 40], "author_name": junk(3),
                        "author_email": "a@b.c", "authored_at": when, "committer_name": "GitHub",
                        "committer_email": "noreply@github.com", "committed_at": when,
                        "subject": f"{junk(4)} KV cache NPU fix (#{100 + i})",
                        "body": f"## Motivation\n{junk(8)}\n\n## Modifications\nThis PR adds {junk(5)} to the NPU KV "
                                f"cache path; TTFT 1.2 s -> 0.9 s.\n\n- {junk(4)}\n",
                        "files": [{"path": "vllm_ascend/" + junk(2).replace("\n", "").replace("/", "") + ".py",
                                   "additions": 10, "deletions": 1}]})
    records.append({"kind": "tag", "name": "v1" + junk(2).replace(" ", "").replace("\n", "")[:40], "target": "0" * 40,
                    "annotated": True, "created_at": when, "tagger": "t", "message": junk(4)})
    path = tmp_path / "acme+fuzz.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    _cli("import-jsonl", str(path))
    window = ["--since", "2026-07-01", "--until", "2026-07-20"]
    reports = [_cli("daily", *window), _cli("weekly", "--repo", "acme/fuzz", *window),
               *(_cli("show", f"acme/fuzz#{n}") for n in (100, 105, 110, 115))]
    for markdown in reports:
        page = viewed(markdown)
        assert not foreign(page), foreign(page)[:3]
        assert not re.findall(r"<(em|del|s|pre|hr)\b", _VIEWER.render(markdown))
    _cli("site", "build", str(tmp_path / "site"))
    for page_path in (tmp_path / "site").rglob("*.html"):
        bad = [(t, a) for t, a in foreign(Page(page_path.read_text(encoding="utf-8")), local_ok=True, ours=("form", "input"))
               if not (t == "script" and a.get("src", "").endswith(("search.js", "search-index.js")))]
        assert not bad, (page_path.name, bad[:3])
    for platform in PLATFORMS:
        for text in _payload_texts(_cli("push", "daily", "--dry-run", "--to", platform, "--date", "2026-07-12")):
            if platform == "slack":
                assert all(RADAR_URL.match(u) for u in re.findall(r"<([^>|]*)", text))
            else:
                assert not foreign(viewed(text)) and "<at " not in text
