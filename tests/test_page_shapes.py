"""Pages in the shapes people save: thread renderings, `gh pr view` plain text and --json, browser copies.

The table below was written by reading the 24 pages of ../shared/data/pages/threads-2026-07-02/ (titles are
kept as SHA-1 prefixes so no page text is copied into the repository); the pages are read at test time.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra_radar.config import load_settings
from infra_radar.pipeline.home import open_store
from infra_radar.pipeline.imports import import_page
from infra_radar.sources.page import PageReport, load_page_rules, parse_page, read_page

THREADS = "threads-2026-07-02"
D = "2026-{}".format  # noqa: UP030

# file stem -> (kind, title sha1[:10], state, draft, first date (the description's, else the first turn's),
#               author of the description ("" when the page has none), labels)
TABLE = {
    "ByteDance-Seed+VeOmni+860": ("pr", "61f2713b78", "open", D("06-24"), "Luosuu", []),
    "ByteDance-Seed+VeOmni+871": ("pr", "7272f22677", "open", D("07-01"), "Zhang1Sheng", []),
    "ByteDance-Seed+VeOmni+872": ("pr", "3084c3af47", "open", D("07-01"), "Zhang1Sheng", []),
    "THUDM+slime+2147": ("issue", "cd094559c8", "open", D("06-29"), "CalvinXKY", []),
    "verl-project+verl+6881": ("pr", "f6de4b826b", "merged", D("06-29"), "fh188", []),
    "verl-project+verl+6894": ("issue", "3b906009b6", "open", D("06-29"), "TengTu0311", []),
    "verl-project+verl+6907": ("pr", "1e1baf07cd", "closed", D("07-01"), "Kirrito-k423", []),
    "verl-project+verl+6908": ("pr", "693f1a3df0", "closed", D("07-01"), "Kirrito-k423", []),
    "verl-project+verl+6911": ("pr", "dcc8b7ff3d", "merged", D("07-01"), "Mind-s", []),
    "verl-project+verl+6912": ("pr", "b5ec37ebcd", "closed", None, "", []),  # opens with a later comment
    "verl-project+verl+6913": ("pr", "d4691179cc", "merged", D("07-01"), "kolehma8", []),
    "verl-project+verl-omni+208": ("pr", "c284d5bd07", "merged", D("06-24"), "qinganrice", []),
    "vllm-project+vllm+46838": ("pr", "6d172b0ee9", "merged", D("06-26"), "Aneureka", []),
    "vllm-project+vllm+47334": ("issue", "a1d5c5b616", "open", D("07-01"), "LucasWilkinson", ["RFC"]),
    "vllm-project+vllm+47352": ("pr", "2002594bf4", "merged", D("07-01"), "TheEpicDolphin", []),
    "vllm-project+vllm+47355": ("pr", "6d6f91cb63", "open", D("07-01"), "LucasWilkinson", []),
    "vllm-project+vllm+47359": ("issue", "dfe075090b", "open", D("07-01"), "Arraddhyyad", ["feature request"]),
    "vllm-project+vllm+47363": ("pr", "b05311b693", "open", D("07-02"), "zhuohan123", []),
    "vllm-project+vllm+47368": ("pr", "de393769c7", "open", D("07-02"), "hclsys", []),
    "vllm-project+vllm-omni+4344": ("pr", "6d8d6e34b4", "merged", D("06-11"), "Celeste-jq", []),
    "vllm-project+vllm-omni+4796": ("issue", "2719118b60", "open", D("06-30"), "Nughm3", ["core", "omni", "RFC"]),
    "vllm-project+vllm-omni+4802": ("issue", "884c951140", "closed", D("06-30"), "Ronnie-Rui",
                                    ["core", "critical", "RFC"]),
    "vllm-project+vllm-omni+4814": ("issue", "0a5bb97d10", "closed", None, "", ["bug", "medium priority"]),
    "vllm-project+vllm-omni+4826": ("issue", "eb19ccf511", "closed", None, "yenuo26",
                                    ["bug", "ci-failure", "low priority"]),
}


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:10]


@pytest.fixture
def threads(shared_data: Path) -> Path:
    folder = shared_data / "pages" / THREADS
    if not folder.is_dir():
        pytest.skip(f"{folder} is not available")
    return folder


@pytest.mark.parametrize("stem", sorted(TABLE))
def test_thread_page_metadata(threads, stem):
    kind, title_sha, state, first, author, labels = TABLE[stem]
    owner, name, number = stem.split("+")
    rules = load_page_rules(load_settings())
    text = read_page(threads / f"{stem}.txt")
    for file_stem in (stem, ""):  # the file name is not what the metadata comes from
        item = parse_page(text, rules, file_stem=file_stem, report=PageReport(stem))
        assert (item.repo, item.number, item.kind, item.key) == (f"{owner}/{name}", int(number), kind, number)
        assert _sha(item.title) == title_sha, item.title
        assert (item.state, item.draft) == (state, False)
        # the opening only when the page gives it (its description's time), never a later comment's
        assert item.created_at == (datetime.fromisoformat(first).replace(tzinfo=UTC) if first else None)
        assert item.when is not None and item.when >= (item.created_at or item.when)
        assert item.author == author and item.labels == labels
        assert not item.files, "a page names paths; it has no diffstat"
        assert not any(c.is_bot or c.author.endswith("[bot]") for c in item.comments)
        for marker in ("· description ·", "· comment ·", "pull request #", "issue #", "url: http"):
            assert marker not in item.body, marker


def test_thread_pages_keep_descriptions_comments_and_named_paths(threads):
    rules = load_page_rules(load_settings())

    def read(stem):
        return parse_page(read_page(threads / f"{stem}.txt"), rules, file_stem=stem)

    issue = read("vllm-project+vllm-omni+4826")  # description continued from turn 0, then two comments
    assert [c.author for c in issue.comments] == ["IneshReddy249", "amy-why-3459"]
    assert issue.body and issue.updated_at == datetime(2026, 7, 3, tzinfo=UTC)
    assert "[turn 0" not in issue.body
    pr = read("ByteDance-Seed+VeOmni+860")  # a bot's review thread: dropped, the file it is on kept as named
    assert pr.comments == [] and any(p.endswith("_gpu_patch_gen_config.py") for p in pr.named_paths)
    assert "tests/ops/test_deepseek_sparse_attention.py" in pr.named_paths
    closed = read("verl-project+verl+6912")  # no description on the page: the comment stays a comment
    assert closed.body == "" and len(closed.comments) == 1 and closed.comments[0].author == "kenkenpa2126"
    long_title = read("ByteDance-Seed+VeOmni+871")  # GitHub's "…end of a long title" is not the description
    assert not long_title.body.startswith("…")


def test_browser_copy_names_review_paths(shared_data):
    path = shared_data / "pages" / "vllm-project+vllm-ascend+7756.txt"
    if not path.exists():
        pytest.skip("no #7756 page")
    item = parse_page(read_page(path), load_page_rules(load_settings()), file_stem=path.stem)
    assert item.number == 7756 and item.kind == "pr" and not item.files
    assert any(p.endswith("gdn_chunk_meta.py") for p in item.named_paths)


# -- gh shapes (written here, in the form gh prints) -------------------------------------------------

GH_PLAIN = """title:\tFix scheduler crash when the KV cache is full
state:\tMERGED
author:\talice
labels:\tbug, scheduler
assignees:\t
reviewers:\tbob (Approved)
projects:\t
milestone:\t
number:\t4242
url:\thttps://github.com/acme/engine/pull/4242
additions:\t12
deletions:\t3
auto-merge:\tdisabled
--
## Purpose
The scheduler in `engine/core/sched.py` crashed when the cache was full.
--
author:\tbob
association:\tmember
edited:\tfalse
status:\tapproved
--
Looks good, thanks.
--
"""

GH_ISSUE = """title:\tSupport FP8 on the new backend
state:\tOPEN
author:\tcarol
labels:\tfeature request
comments:\t1
assignees:\t
projects:\t
milestone:\t
number:\t77
--
Please add FP8 to csrc/attention/backend.cu.
"""


def parse_text(text: str, stem: str = ""):
    report = PageReport("x")
    return parse_page(text, load_page_rules(load_settings()), file_stem=stem, report=report), report


def test_gh_pr_view_plain_text():
    item, report = parse_text(GH_PLAIN)
    assert report.shape == "gh-plain"
    assert (item.repo, item.number, item.kind, item.state, item.author) == ("acme/engine", 4242, "pr", "merged",
                                                                            "alice")
    assert item.title.startswith("Fix scheduler crash") and item.labels == ["bug", "scheduler"]
    assert item.body.startswith("## Purpose") and "Looks good" not in item.body
    assert [(c.author, c.body, c.kind) for c in item.comments] == [("bob", "Looks good, thanks.", "review")]
    assert item.named_paths == ["engine/core/sched.py"] and not item.files


def test_gh_issue_view_plain_text_needs_the_repo_from_elsewhere():
    item, _ = parse_text(GH_ISSUE, stem="acme+engine+77")
    assert (item.repo, item.number, item.kind, item.state) == ("acme/engine", 77, "issue", "open")
    assert item.named_paths == ["csrc/attention/backend.cu"]


def test_gh_pr_view_json():
    data = {
        "number": 31, "title": "[Draft] Add NPU fused MoE", "state": "OPEN", "isDraft": True,
        "author": {"login": "dave"}, "labels": [{"name": "npu"}], "body": "Adds a kernel.",
        "createdAt": "2026-07-01T10:00:00Z", "updatedAt": "2026-07-02T11:00:00Z", "mergedAt": None,
        "closedAt": None, "url": "https://github.com/acme/engine/pull/31", "baseRefName": "main",
        "comments": [{"author": {"login": "erin"}, "body": "Nice", "createdAt": "2026-07-02T11:00:00Z"}],
        "reviews": [{"author": {"login": "frank"}, "body": "", "submittedAt": "2026-07-02T10:00:00Z"}],
        "files": [{"path": "engine/ops/moe.py", "additions": 40, "deletions": "x"}],
    }
    item, report = parse_text(json.dumps(data))
    assert report.shape == "gh-json"
    assert (item.repo, item.number, item.kind, item.state, item.draft) == ("acme/engine", 31, "pr", "open", True)
    assert item.title == "Add NPU fused MoE" and item.author == "dave" and item.labels == ["npu"]
    assert item.created_at == datetime(2026, 7, 1, 10, tzinfo=UTC) and item.branches == ["main"]
    assert [(f.path, f.additions, f.deletions) for f in item.files] == [("engine/ops/moe.py", 40, None)]
    assert [c.author for c in item.comments] == ["erin"]


def test_gh_issue_json_and_merged_json():
    issue = {"number": 9, "title": "Crash", "state": "CLOSED", "url": "https://github.com/acme/engine/issues/9",
             "body": "", "closedAt": "2026-07-03T00:00:00Z", "stateReason": "COMPLETED"}
    item, _ = parse_text(json.dumps(issue))
    assert (item.kind, item.state, item.closed_at) == ("issue", "closed", datetime(2026, 7, 3, tzinfo=UTC))
    merged = {"number": 10, "title": "Speed up", "state": "MERGED", "url": "https://github.com/acme/engine/pull/10",
              "mergedAt": "2026-07-04T01:02:03Z"}
    item, _ = parse_text(json.dumps(merged))
    assert (item.kind, item.state, item.merged_at, item.when) == ("pr", "merged", datetime(2026, 7, 4, 1, 2, 3,
                                                                  tzinfo=UTC), datetime(2026, 7, 4, 1, 2, 3, tzinfo=UTC))


@pytest.mark.parametrize("word", ["Fix", "Revert", "See", "Closes", "Fixes"])
def test_titles_starting_with_reference_words_keep_title_and_number(word):
    one, _ = parse_text(f"{word} the crash in the block manager #812\nhttps://github.com/acme/engine/pull/812\n"
                        "alice commented on Jul 1, 2026\nThe body.\n")
    two, _ = parse_text(f"{word} a leak in the scheduler #813\nhttps://github.com/acme/engine/pull/813\n"
                        "alice commented on Jul 1, 2026\nAnother body.\n")
    assert (one.number, one.key, two.number, two.key) == (812, "812", 813, "813")
    assert one.title == f"{word} the crash in the block manager"
    ref, _ = parse_text(f"{word} #812\nhttps://github.com/acme/engine/pull/900\n")
    assert ref.number != 812  # a bare reference is still not a title


def test_thread_pages_import_into_the_store_and_twice_changes_nothing(settings, threads, tmp_path):
    engine = open_store(settings)
    pages = sorted(threads.glob("*.txt"))
    for page in pages:  # renamed: nothing comes from the file name
        copy = tmp_path / f"page-{pages.index(page)}.txt"
        shutil.copy(page, copy)
        import_page(settings, engine, copy)
    again = PageReport()
    import_page(settings, engine, tmp_path / "page-0.txt", report=again)
    assert again.stats.unchanged == 1


def test_thread_pages_onto_history_change_no_title_or_body(settings, threads, tmp_path):
    """Pages of PRs the history already holds only add: titles, bodies, files and merge times stay."""
    from infra_radar.pipeline.imports import import_jsonl
    from infra_radar.store.queries import analysed_item

    from .conftest import export_rows

    numbers: dict[str, set[int]] = {}
    for stem in TABLE:
        owner, name, number = stem.split("+")
        numbers.setdefault(f"{owner}+{name}", set()).add(int(number))
    exports = []
    for key, wanted in numbers.items():
        for source in sorted((threads.parents[1] / "git").glob(f"{key}[.@]*jsonl.gz")):  # main and release branches
            rows = export_rows(source.name)
            keep = [r for r in rows[1:] if r.get("kind") == "commit" and any(
                r["subject"].rstrip().endswith(f"(#{n})") for n in wanted)]
            if not keep:
                continue
            path = tmp_path / source.name.replace(".gz", "")
            path.write_text("\n".join(json.dumps(r) for r in [rows[0], *keep]) + "\n", encoding="utf-8")
            exports.append(path)
    if not exports:
        pytest.skip("no thread page is in the history exports")
    engine = open_store(settings)
    import_jsonl(settings, engine, exports)
    from infra_radar.pipeline.analysis import analyze

    analyze(settings, engine)
    before = {}
    for key, wanted in numbers.items():
        for n in wanted:
            found = analysed_item(engine, key.replace("+", "/"), n)
            if found is not None:
                before[(key, n)] = found.item
    assert len(before) >= 3  # verl#6881, #6911, #6913, verl-omni#208 are merged PRs of the history
    for stem in TABLE:
        import_page(settings, engine, threads / f"{stem}.txt")
    analyze(settings, engine)
    for (key, n), old in before.items():
        new = analysed_item(engine, key.replace("+", "/"), n).item
        assert (new.title, new.body, new.state, new.merged_at, new.source) == \
            (old.title, old.body, old.state, old.merged_at, old.source), (key, n)
        assert [f.path for f in new.files] == [f.path for f in old.files] and new.named_paths is not None


# -- text-only items are first-class ------------------------------------------------------------------


def test_text_only_items_take_grade_and_code_from_named_paths(settings):
    from infra_radar.analyse.rules import RuleSet, analyse_item
    from infra_radar.models import FileChange, Item

    rules = RuleSet.load(settings)
    body = ("## Purpose\nMove the fused MoE kernel in `csrc/moe/fused_moe_kernel.cu` to a new launcher and "
            "call it from vllm/model_executor/layers/fused_moe/layer.py.\n\n## Test Plan\n"
            "tests/kernels/moe/test_fused_moe.py passes.\n")
    page = Item(repo="acme/engine", kind="pr", key="5", number=5, title="[Kernel] Faster fused MoE launch",
                body=body, state="open", source="page",
                named_paths=["csrc/moe/fused_moe_kernel.cu", "vllm/model_executor/layers/fused_moe/layer.py",
                             "tests/kernels/moe/test_fused_moe.py"])
    # (the title without its [Kernel] tag: a kernel tag alone is device-kernel work, graded L)
    bare = Item(**{**{f: getattr(page, f) for f in ("repo", "kind", "key", "number", "body", "state", "source")},
                   "title": "Faster fused MoE launch", "named_paths": []})
    named, without = analyse_item(page, rules, [], settings), analyse_item(bare, rules, [], settings)
    assert named.grade == "L" and named.item_kind != "test"  # a device kernel named in the text
    tests_only = Item(repo="acme/engine", kind="pr", key="6", number=6, title="Fix crash in the scheduler",
                      body="Crash when the queue is empty; tests/test_sched.py covers it.", source="page",
                      named_paths=["tests/test_sched.py"], state="open")
    assert analyse_item(tests_only, rules, [], settings).item_kind != "test"  # named, not "every file changed"
    diffstat = Item(**{f: getattr(tests_only, f) for f in ("repo", "kind", "key", "number", "title", "body",
                                                          "state", "source")})
    diffstat.files = [FileChange("tests/test_sched.py", 10, 0)]
    diffstat.named_paths = []
    assert analyse_item(diffstat, rules, [], settings).item_kind == "test"  # a real diffstat still decides
    # the same text without the paths it names: no kernel file seen, so no grade L; a text-only item in
    # the watched field still ranks (issue 13: open work on a hot path is P1 without a diffstat)
    assert without.grade != "L" and named.priority != "none"


# -- nothing undated is lost ------------------------------------------------------------------------


def _cli(*args: str) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from infra_radar.cli import main

    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_every_page_item_shows_in_export_daily_weekly_show_and_site(settings, threads, tmp_path):
    from datetime import timedelta

    pages = [threads.parent / "vllm-project+vllm-ascend+7756.txt", *sorted(threads.glob("*.txt"))]
    for page in pages:
        code, out, err = _cli("import-page", str(page))
        assert code == 0, err
    code, out, err = _cli("import-page", str(pages[0]))
    assert "0 new, 0 updated, 1 unchanged" in out  # the import time is kept, not renewed
    assert "import time" in out
    refs = {f"{p.stem.split('+')[0]}/{p.stem.split('+')[1]}#{p.stem.split('+')[2]}" for p in pages}
    code, out, err = _cli("export")  # no window: everything
    assert code == 0, err
    objects = {f"{x['repo']}#{x['number']}": x for x in json.loads(out)}
    assert set(objects) == refs
    assert objects["vllm-project/vllm-ascend#7756"]["imported_at"] is not None  # no date on that page
    assert all(o["imported_at"] is None for r, o in objects.items() if "7756" not in r)  # thread pages are dated
    assert all(not o["files"] for o in objects.values())  # named paths are not a diffstat
    assert objects["vllm-project/vllm#46838"]["named_paths"] == ["tests/kernels/moe/test_flashinfer_moe.py"]
    until = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%d")
    code, out, err = _cli("daily", "--since", "2026-06-01", "--until", until, "--lang", "en")
    assert code == 0, err
    down = {r for r in refs if r.startswith("vllm-project/vllm-ascend#")}  # the target's own repository: apart
    assert f"Items: {len(refs) - len(down)} scanned" in out and f"; {len(down)} downstream items apart" in out
    code, out, err = _cli("show", "vllm-project/vllm-ascend#7756", "--lang", "en")
    assert code == 0 and "imported: " in out and "(the source gave no date)" in out
    code, out, err = _cli("show", "vllm-project/vllm#47334", "--lang", "en")
    assert code == 0 and "imported: " not in out  # a page with its own date
    code, out, err = _cli("weekly", "--repo", "vllm-project/vllm-ascend", "--since", "2026-06-01", "--until", until,
                          "--lang", "en")
    assert code == 0 and "#7756" not in out  # still open on its page: a weekly tells what the week merged
    code, out, err = _cli("site", "build", str(tmp_path / "site"))
    assert code == 0, err
    for ref in refs:
        repo, number = ref.split("#")
        assert (tmp_path / "site" / "items" / repo.replace("/", "+") / f"{number}.html").exists(), ref


def test_gh_pr_view_followed_by_its_comments_output():
    """`gh pr view N > f; gh pr view N --comments >> f`: the first comment header follows the body directly."""
    head, _, _ = GH_PLAIN.partition("--\nauthor:")
    text = head + ("author:\tcarol\nassociation:\tnone\nedited:\tfalse\nstatus:\tcommented\n--\nFirst comment.\n--\n"
                   "author:\tdave\nassociation:\tmember\nedited:\ttrue\nstatus:\tapproved\n--\nShip it.\n--\n")
    item, report = parse_text(text)
    assert report.shape == "gh-plain" and item.number == 4242
    assert [(c.author, c.body, c.kind) for c in item.comments] == [("carol", "First comment.", "comment"),
                                                                   ("dave", "Ship it.", "review")]
    assert "carol" not in item.body and item.body.endswith("crashed when the cache was full.")


def test_thread_variants_undated_turns_month_dates_and_other_kinds():
    text = ("url: https://github.com/acme/engine/pull/88\ntitle: Add a paged allocator\nstate: draft\n\n"
            "acme/engine · pull request #88 · draft · Python\n# Add a paged allocator\n\n"
            "alice · description\nAllocator in engine/core/alloc.py.\n\n"
            "bob · approved · Jul 3, 2026\nLooks right.\n\n"
            "carol · comment · 2026-07-04T09:30:00Z\nOne question.\n")
    item, report = parse_text(text)
    assert report.shape == "thread" and (item.state, item.draft, item.author) == ("open", True, "alice")
    assert item.body == "Allocator in engine/core/alloc.py." and item.named_paths == ["engine/core/alloc.py"]
    assert [(c.author, c.kind, c.created_at) for c in item.comments] == [
        ("bob", "review", datetime(2026, 7, 3, tzinfo=UTC)), ("carol", "comment", datetime(2026, 7, 4, 9, 30, tzinfo=UTC))]
    # the description is undated: the first review is a later event, not the opening
    assert item.created_at is None and item.updated_at == datetime(2026, 7, 4, 9, 30, tzinfo=UTC)


def test_browser_copy_of_an_issue_is_an_issue():
    text = ("Crash in the scheduler when the queue is empty #501\nhttps://github.com/acme/engine/issues/501\nOpen\n"
            "alice opened this issue on Jul 1, 2026 · 2 comments\nThe scheduler crashes.\n")
    item, _ = parse_text(text)
    assert (item.kind, item.number, item.repo) == ("issue", 501, "acme/engine")
    pr, _ = parse_text("Faster scheduler #502\nhttps://github.com/acme/engine/pull/502\nOpen\nBody text here.\n")
    assert pr.kind == "pr"
