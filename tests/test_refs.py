"""Reference extraction: #N, owner/repo#N, URLs, relation phrases, subjects, dedupe, real bodies."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest

from infra_radar.analyse.refs import compile_link_rules, extract_refs, pr_number_from_subject, strip_pr_suffix
from infra_radar.models import Link

from .conftest import export_commits, export_rows

pytestmark = pytest.mark.no_store  # pure text/rules/HTTP-stub tests: the PostgreSQL pass skips them

REPO = "vllm-project/vllm-ascend"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def kinds(links: list[Link]) -> list[tuple[str, str]]:
    return [(link.kind, link.ref) for link in links]


# --------------------------------------------------------------------------- subjects


@pytest.mark.parametrize(("subject", "expected", "title"), [
    ("[Perf] Cache rope tables (#7756)", (7756, []), "[Perf] Cache rope tables"),
    ("fix: wrong processor class (#6814) (#6873)", (6873, [6814]), "fix: wrong processor class"),
    ("Revert \"[CI] add job (#12)\" (#13)", (13, []), "Revert \"[CI] add job (#12)\""),
    ("No number here", (None, []), "No number here"),
    ("Mentions #5 in the middle", (None, []), "Mentions #5 in the middle"),
])
def test_subject_numbers_and_title(subject, expected, title):
    assert pr_number_from_subject(subject) == expected
    assert strip_pr_suffix(subject) == title


def test_subject_suffix_is_not_a_reference_but_an_earlier_number_is_a_cherry_pick():
    text = "[Bugfix] fix tokenizer class (#6814) (#6873)\n\nCherry-picked to the release branch."
    assert kinds(extract_refs(text, "verl-project/verl", own=6873)) == [("cherry-pick", "verl-project/verl#6814")]
    assert extract_refs("[Perf] speed up (#7756)", REPO, own=7756) == []


# --------------------------------------------------------------------------- reference shapes


def test_same_repo_cross_repo_and_github_urls():
    text = ("Related to #4120 and vllm-project/vllm#28053.\n"
            "Upstream: https://github.com/vllm-project/vllm/pull/44941, "
            "issue https://github.com/vllm-project/vllm-ascend/issues/512.")
    links = extract_refs(text, REPO)
    assert kinds(links) == [
        ("references", f"{REPO}#4120"), ("references", "vllm-project/vllm#28053"),
        ("references", "vllm-project/vllm#44941"), ("references", f"{REPO}#512"),
    ]
    assert links[2].url == "https://github.com/vllm-project/vllm/pull/44941"  # trailing comma stripped


def test_other_urls_are_kept_stripped_and_capped():
    text = "Docs: https://docs.vllm.ai/en/latest/. Also (see https://example.com/a?b=1).\n"
    text += "\n".join(f"- https://example.com/page{i}" for i in range(15))
    links = extract_refs(text, REPO)
    assert all(link.kind == "url" for link in links)
    assert [link.url for link in links[:2]] == ["https://docs.vllm.ai/en/latest/", "https://example.com/a?b=1"]
    assert len(links) == 10


def test_things_that_look_like_references_but_are_not():
    text = """### What this PR does
## 2. Design
Colour `#123456` in code, style="color:#336699", HTML &#123; entity.
```python
x = data[0]  # 42 items, see #999
```
See [vllm #44941](https://github.com/vllm-project/vllm/pull/44941) and https://x.io/page#12 .
"""
    assert kinds(extract_refs(text, REPO)) == [("references", "vllm-project/vllm#44941"), ("url", "https://x.io/page#12")]


def test_own_number_is_excluded():
    assert extract_refs("Reland of #100, see #101", REPO, own=100) == [Link("references", REPO, 101)]


# --------------------------------------------------------------------------- relations


@pytest.mark.parametrize(("text", "kind", "detail"), [
    ("Fixes #12", "fixes", "Fixes"),
    ("closes: #12", "fixes", "closes"),
    ("This resolves issue #12.", "fixes", "resolves"),
    ("Follow-up of #12", "follow-up", "Follow-up of"),
    ("This is a follow up to PR #12", "follow-up", "follow up to"),
    ("Split from #12 to ease review", "follow-up", "Split from"),
    ("Supersedes #12", "supersedes", "Supersedes"),
    ("replaces #12 which went stale", "supersedes", "replaces"),
    ("Backport of #12 to v0.9.1-dev", "backport", "Backport of"),
    ("cherry-pick of #12", "backport", "cherry-pick of"),
    ("Cherry-picked from https://github.com/vllm-project/vllm-ascend/pull/12", "backport", "Cherry-picked from"),
    ("[Misc] Cherry pick #12 from v0.9.1-dev", "backport", "Cherry pick"),
])
def test_relation_phrases(text, kind, detail):
    (link,) = extract_refs(text, REPO)
    assert (link.kind, link.number, link.detail) == (kind, 12, detail)


def test_a_phrase_applies_to_the_whole_list_after_it_only():
    links = extract_refs("Fixes #1, #2 and #3. Related: #4", REPO)
    assert kinds(links) == [("fixes", f"{REPO}#1"), ("fixes", f"{REPO}#2"), ("fixes", f"{REPO}#3"),
                            ("references", f"{REPO}#4")]


def test_phrase_must_sit_right_before_the_reference():
    assert kinds(extract_refs("Fix the crash caused by #2719", REPO)) == [("references", f"{REPO}#2719")]


def test_a_target_keeps_only_its_strongest_kind():
    text = "See #12 for context.\nFixes #12.\nAlso https://github.com/vllm-project/vllm-ascend/issues/12"
    links = extract_refs(text, REPO)
    assert kinds(links) == [("fixes", f"{REPO}#12")]
    assert links[0].url == "https://github.com/vllm-project/vllm-ascend/issues/12"


def test_relation_phrases_are_data_a_user_can_extend():
    path = resources.files("infra_radar") / "defaults" / "rules" / "links.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    data["relation"].append({"kind": "duplicate", "phrases": ["duplicate of"]})
    data["strength"].insert(0, "duplicate")
    (link,) = extract_refs("Duplicate of #7", REPO, rules=compile_link_rules(data))
    assert (link.kind, link.number) == ("duplicate", 7)


# --------------------------------------------------------------------------- real data (read at test time)


def _commits(name: str) -> tuple[str, list[dict]]:
    return export_rows(name)[0]["full_name"], export_commits(name)


def test_real_cherry_pick_subject():
    repo, commits = _commits("verl-project+verl.jsonl.gz")
    commit = next(c for c in commits if c["subject"].endswith("(#6814) (#6873)"))
    own, earlier = pr_number_from_subject(commit["subject"])
    links = extract_refs(commit["subject"] + "\n\n" + commit["body"], repo, own)
    assert (own, earlier) == (6873, [6814])
    assert ("cherry-pick", f"{repo}#6814") in kinds(links)
    assert all(link.number != 6873 for link in links)


def test_real_export_is_sane():
    repo, commits = _commits("vllm-project+vllm-ascend.jsonl.gz")
    found = [extract_refs(c["body"], repo, pr_number_from_subject(c["subject"])[0]) for c in commits]
    links = [link for links in found for link in links]
    assert sum(1 for link in links if link.kind == "fixes") > 100
    assert all(len([x for x in group if x.kind == "url"]) <= 10 for group in found)
    assert all(link.url is None or not link.url.endswith((".", ",", ")")) for link in links)


def test_a_phrase_with_a_case_insensitive_lookalike_letter_keeps_its_kind():
    # re.I matches "ı", "İ", "ſ" and the Kelvin sign for i, s and k: the phrase found that way was looked up
    # with .lower() and raised KeyError, failing the whole item
    found = {link.number: link.kind for link in extract_refs("fıxes #12, İn place of #3, ſupersedes #4, "
                                                             "bac\u212aport of #5", "a/b")}
    assert found == {12: "fixes", 3: "supersedes", 4: "supersedes", 5: "backport"}
