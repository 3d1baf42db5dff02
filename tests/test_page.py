"""`radar import-page`: a pasted PR page becomes one item, its description once, its noise gone."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.analyse.claims import extract_claims
from infra_radar.cli import main
from infra_radar.errors import ConfigError, SourceError
from infra_radar.pipeline.home import open_store
from infra_radar.pipeline.imports import import_page
from infra_radar.sources.page import PageReport, decode_page, load_page_rules, parse_page
from infra_radar.store.queries import analysed_item

PAGES = Path(__file__).parent / "data" / "pages"
REAL = "vllm-project+vllm-ascend+7756.txt"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def parse(name: str, repo: str | None = None, number: int | None = None, settings=None, text: str | None = None):
    from infra_radar.config import load_settings

    report = PageReport(name)
    rules = load_page_rules(settings or load_settings())
    text = (PAGES / name).read_text(encoding="utf-8") if text is None else text
    return parse_page(text, rules, repo, number, Path(name).stem, report), report


def claim_pairs(body: str) -> list[tuple[str, float | None, float | None]]:
    return [(c.metric, c.before, c.after) for c in extract_claims(body)]


@pytest.fixture
def real_page(shared_data: Path) -> Path:
    path = shared_data / "pages" / REAL
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return path


# -- the real page (acceptance) -------------------------------------------------------------------


def test_real_page_gives_one_clean_item(settings, real_page):
    engine = open_store(settings)
    report = PageReport()
    item = import_page(settings, engine, real_page, report=report)
    assert item.ref == "vllm-project/vllm-ascend#7756" and item.source == "page" and item.kind == "pr"
    assert item.title == "[Feature] Optimize GDN non-spec prefill fallback metadata"
    body = item.body
    assert body.count("What this PR does") == 1
    assert body.count("| State | TTFT | TPS |") == 1 and body.count("1048.64") == 1
    # the kept copy is the best-formatted one: its table rows are lines again
    assert "\n| baseline (`dae3c99e`) | `1048.64 ms` | `162.26` |\n" in body
    for noise in ("Summary of Changes", "Gemini Code Assist", "Thank you for contributing", "Compare",
                  "f9dcd38", "2ebce48", "has conflicts", "Signed-off-by", "…ct#7756", "Code Review"):
        assert noise not in body, noise
        assert all(noise not in c.body for c in item.comments), noise
    pairs = claim_pairs(body)
    assert pairs.count(("TTFT", 1048.64, 978.58)) == 1 and pairs.count(("TPS", 162.26, 164.67)) == 1
    assert report.description_copies == 6 and report.dropped["repeated description copies"] == 5
    assert report.dropped["force-push lines"] >= 9 and report.dropped["conflict notices"] == 2


def test_real_page_keeps_human_and_review_comments(settings, real_page):
    item = import_page(settings, open_store(settings), real_page)
    bodies = [c.body for c in item.comments]
    assert "The operator UT needs to be supplemented." in bodies
    assert "Supplementing the patch deletion plan." in bodies
    review = [c for c in item.comments if c.kind == "review"]
    assert len(review) == 1 and "torch.cumsum(chunk_counts, dim=0" in review[0].body  # the suggested change
    assert review[0].body.rstrip().endswith("out_final_chunk_indices.sub_(1)")  # force-push text cut off
    assert not any(c.is_bot for c in item.comments)
    assert not any("| ||" in b or "This pull request optimizes" in b for b in bodies)  # code context, bot body


def test_real_page_import_twice_changes_nothing_and_show_works(settings, real_page):
    code, out, err = invoke("import-page", str(real_page))
    assert code == 0, err
    assert out.startswith("vllm-project/vllm-ascend#7756  [Feature] Optimize GDN")
    assert "comments kept: 3" in out and "5 repeated description copies" in out and "1 new" in out
    code, out, _ = invoke("import-page", str(real_page))
    assert code == 0 and "0 new, 0 updated, 1 unchanged" in out
    code, out, err = invoke("show", "vllm-project/vllm-ascend#7756", "--lang", "en")
    assert code == 0, err
    assert "Optimize GDN non-spec prefill fallback metadata" in out and "1048.64" in out
    found = analysed_item(open_store(settings), "vllm-project/vllm-ascend", 7756)
    assert found is not None and len(found.item.comments) == 3


def test_real_page_flags_win(settings, real_page):
    item, _ = parse(REAL, "acme/fork", 99, settings, real_page.read_text(encoding="utf-8"))
    assert item.ref == "acme/fork#99"


def test_real_page_over_a_git_import_keeps_files_and_merge(settings, shared_data, real_page, tmp_path):
    """The PR came from history first: the page adds comments, the store keeps state, files and merge."""
    export = tmp_path / "one.jsonl"
    with gzip.open(shared_data / "git" / "vllm-project+vllm-ascend.jsonl.gz", "rt", encoding="utf-8") as fh:
        head = fh.readline()
        rec = next((line for line in fh if '(#7756)"' in line), None)
    if rec is None:
        pytest.skip("#7756 is not in the history export")
    export.write_text(head + rec, encoding="utf-8")
    from infra_radar.pipeline.imports import import_jsonl

    engine = open_store(settings)
    import_jsonl(settings, engine, [export])
    item = import_page(settings, engine, real_page)
    sha = json.loads(rec)["sha"]
    assert item.state == "merged" and item.merge_commit == sha and item.files and item.merged_at is not None
    assert len(item.comments) == 3 and item.body.count("What this PR does") == 1
    again = PageReport()
    import_page(settings, engine, real_page, report=again)
    assert again.stats.unchanged == 1


# -- other layouts ----------------------------------------------------------------------------------


def test_github_full_page_copy():
    item, report = parse("github_full.txt")
    assert item.ref == "acme/infer-npu#1234"  # the repository from the page header, not the file name
    assert item.title == "[Perf] Fuse rotary embedding into the paged attention prologue"
    assert (item.state, item.author, item.branches) == ("merged", "alice-dev", ["main"])
    assert item.merged_at is not None and item.merged_at.date().isoformat() == "2026-03-05"
    assert item.body.startswith("What this PR does") and "1830 -> 2105 tokens/s" in item.body
    assert [(c.author, c.kind) for c in item.comments] == [("carol-rev", "review"), ("alice-dev", "comment")]
    review = item.comments[0]
    assert "load_cos_sin(pos, cache); for (int h" in review.body  # the suggested change is kept
    assert "paged_rope.cpp" not in review.body and review.created_at.isoformat() == "2026-03-04T00:00:00+00:00"
    text = item.body + "".join(c.body for c in item.comments)
    for noise in ("Gemini", "Thanks for your contribution", "CLA", "force-pushed", "Compare", "conflicts",
                  "👍", "Reply", "Copy link", "checks passed", "Issues 41", "infer-npu\n"):
        assert noise not in text, noise
    assert report.dropped["bot comments"] == 3 and report.dropped["force-push lines"] == 2


def test_gitlab_like_page():
    item, _ = parse("gitlab_mr.txt")
    assert item.ref == "infer/npu-serve#42" and item.draft and item.state == "open"
    assert item.title == "Add a paged KV cache pool for the NPU backend"
    assert "Allocation time per decode step drops from 0.84 ms to 0.21 ms" in item.body
    assert "Pipelines" not in item.body and "Edited" not in item.body
    assert [c.author for c in item.comments] == ["hzhang", "wenli"]  # the bot and "added 1 commit" dropped
    assert item.comments[0].created_at.isoformat() == "2026-03-06T10:15:00+00:00"


def test_gitee_like_page_in_gb18030_with_crlf(tmp_path, settings):
    text = (PAGES / "gitee_pr.txt").read_text(encoding="utf-8")
    path = tmp_path / "gitee.txt"
    path.write_bytes(text.replace("\n", "\r\n").encode("gb18030"))
    with pytest.raises(UnicodeDecodeError):
        path.read_bytes().decode("utf-8")
    item = import_page(settings, open_store(settings), path)
    assert item.ref == "ascend-lab/moe-kernels#87" and item.state == "merged"
    assert item.title == "修复 NPU 上 MoE 路由在空 batch 时越界"
    assert "`moe_route_npu`" in item.body and "\r" not in item.body
    assert [c.author for c in item.comments] == ["li-reviewer", "chen-hw"]
    assert "Signed-off-by" not in item.comments[-1].body and "欢迎" not in item.body


def test_fragment_mid_thread_imports_what_it_has():
    item, report = parse("fragment.txt", number=880)
    assert item.ref == "acme/infer-npu#880"  # repository from a URL in a comment
    assert item.body == "" and item.title == "acme/infer-npu#880 (pasted page)"  # "Follow-up to #77" is no title
    assert [c.author for c in item.comments] == ["", "dave-ops", "erin-dev"]
    assert item.comments[0].body.startswith("the warmup run")
    assert item.state == "open" and not report.state_found


def test_fragment_without_number_gets_a_stable_key():
    first, report = parse("fragment.txt")
    second, _ = parse("fragment.txt")
    assert first.number is None and first.key.startswith("page-") and first.key == second.key
    assert not report.number_found


def test_page_without_description(settings):
    item, _ = parse("no_description.txt", repo="acme/docs")
    assert item.ref == "acme/docs#5120" and item.body == "" and item.author == "frank-ci"
    assert [c.author for c in item.comments] == ["grace-m", "frank-ci"]


def test_flattened_copies_keep_the_table_copy():
    item, report = parse("flattened_copies.txt", repo="acme/kv")
    assert report.description_copies == 3
    assert item.body.count("Motivation") == 1 and "…" not in item.body and "Signed-off-by" not in item.body
    assert "\n| Setup | Step latency |\n| --- | ---: |\n| before (`a1b2c3d`) | `12.4 ms` |\n" in item.body
    assert "\n- update only the rows of requests that changed\n" in item.body
    assert claim_pairs(item.body) == [("Step latency", 12.4, 9.8)]
    assert [c.body for c in item.comments] == ["The host copy shows up clearly in the profile, nice catch."]


def test_identical_short_comments_by_different_people_are_both_kept():
    text = ("Bump the runner image #12\nOpen\n@ann\nann commented on May 2, 2026\nPins the runner image.\n"
            "@ben\nben commented on May 2, 2026\nLGTM\n@cy\ncy commented on May 3, 2026\nLGTM\n")
    item, _ = parse("x.txt", repo="acme/ci", text=text)
    assert item.body == "Pins the runner image." and item.author == "ann"  # GitHub: the first comment
    assert [(c.author, c.body) for c in item.comments] == [("ben", "LGTM"), ("cy", "LGTM")]


# -- failures and decoding ----------------------------------------------------------------------------


def test_no_repository_anywhere_asks_for_repo(tmp_path):
    path = tmp_path / "page.txt"
    shutil.copy(PAGES / "no_description.txt", path)
    code, out, err = invoke("import-page", str(path))
    assert code == 1 and out == ""
    assert err.strip().count("\n") == 0 and "--repo" in err and "Traceback" not in err
    code, out, _ = invoke("import-page", str(path), "--repo", "acme/docs")
    assert code == 0 and out.startswith("acme/docs#5120")


def test_empty_file_says_nothing_to_import(tmp_path, settings):
    path = tmp_path / "acme+x+1.txt"
    path.write_bytes(b"\r\n  \n")
    with pytest.raises(SourceError, match="nothing to import"):
        import_page(settings, open_store(settings), path)
    code, _, err = invoke("import-page", str(path))
    assert code == 1 and "nothing to import" in err and err.count("\n") == 1


def test_bad_repo_flag_and_unreadable_file(tmp_path, settings):
    with pytest.raises(ConfigError, match="OWNER/NAME"):
        parse("github_full.txt", repo="not-a-repo")
    code, _, err = invoke("import-page", str(tmp_path / "missing.txt"), "--repo", "a/b")
    assert code == 1 and "cannot read" in err and "Traceback" not in err


def test_decode_page_variants():
    assert decode_page("标题 #1".encode("gb18030")) == "标题 #1"
    assert decode_page("\ufeffTitle #1".encode()) == "Title #1"
    assert decode_page("Title #1".encode("utf-16")) == "Title #1"
    assert decode_page(b"Title \xff\xfe\xfd #1").startswith("Title ") and "#1" in decode_page(b"Title \xff #1")


def test_invalid_bytes_still_import(tmp_path, settings):
    path = tmp_path / "broken.txt"
    path.write_bytes((PAGES / "github_full.txt").read_bytes().replace(b"Fuses the", b"Fuses\xff\xfe the"))
    item = import_page(settings, open_store(settings), path)
    assert item.ref == "acme/infer-npu#1234" and "\ufffd" in item.body


def test_fragment_with_a_template_description():
    text = ("Reply...\n## What this PR does / why we need it?\nAdds a fused top-k sampler for NPU.\n\n"
            "## How was this patch tested?\nsampling latency 3.1 ms -> 2.4 ms on 910B\n|\n"
            "Looks good to me, one nit on naming. |\n")
    item, _ = parse("frag.txt", repo="acme/sample", number=7, text=text)
    assert item.body.startswith("## What this PR does") and item.title == "What this PR does / why we need it?"
    assert [c.body for c in item.comments] == ["Looks good to me, one nit on naming."]
    assert claim_pairs(item.body) == [("latency", 3.1, 2.4)]


def test_prose_about_closing_does_not_set_the_state():
    text = "Tune the allocator #55\n@ann\nann commented on May 2, 2026\nFaster allocation.\n" \
           "@ben\nben commented on May 3, 2026\nI closed this by mistake earlier, sorry.\n"
    item, report = parse("x.txt", repo="acme/alloc", text=text)
    assert item.state == "open" and not report.state_found
    assert item.comments[0].body.startswith("I closed this by mistake")


def test_links_to_other_pull_requests_do_not_name_the_repository():
    text = ("[Misc] Follow the upstream sampler change #910\n@ann\nann commented on May 2, 2026\n"
            "Adapts to https://github.com/vllm-project/vllm/pull/20000 (upstream).\n")
    with pytest.raises(ConfigError, match="--repo"):
        parse("x.txt", text=text)
    item, _ = parse("x.txt", text=text + "https://github.com/acme/npu-plugin/pull/910\n")
    assert item.ref == "acme/npu-plugin#910"


def test_bot_names_are_data_the_user_can_extend(settings, tmp_path):
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    (rules_dir / "page.toml").write_text('[bots]\nnames = ["carol-rev"]\npatterns = []\n', encoding="utf-8")
    settings.rules_dir = rules_dir
    item, report = parse("github_full.txt", settings=settings)
    assert [c.author for c in item.comments] == ["alice-dev"]
    assert "Gemini" not in item.body  # the built-in boilerplate markers still apply
    (rules_dir / "page.toml").write_text("[bots]\nnames = []\npatterns = ['(']\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="bad pattern"):
        parse("github_full.txt", settings=settings)
