"""The rule engine: every Analysis field on invented items, plus two real PRs from ../shared/data."""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra_radar.analyse.rules import (
    RuleSet,
    analyse_item,
    clean_description,
    is_bot,
    load_noise_patterns,
    strip_noise,
    words,
)
from infra_radar.config import RepoSettings, Settings
from infra_radar.errors import ConfigError
from infra_radar.models import Comment, FileChange, Item, PerfClaim

pytestmark = pytest.mark.no_store  # pure text/rules/HTTP-stub tests: the PostgreSQL pass skips them

FIXTURES = json.loads((Path(__file__).parent / "data" / "rules" / "items.json").read_text(encoding="utf-8"))
CASES = {case["name"]: case for case in FIXTURES["items"]}
FOCUS = ["performance", "multimodal", "scheduling", "attention", "padding", "kv-cache", "spec-decode", "npu"]


@pytest.fixture(scope="module")
def conf(tmp_path_factory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"), db_url="sqlite://", focus=FOCUS,
        focus_weights={"npu": 1.5, "performance": 1.3},
        repos=[RepoSettings("acme/infer", core_paths=["infer/core/**", "csrc/**"]),
               RepoSettings("vllm-project/vllm-ascend", core_paths=["vllm_ascend/worker/**"])],
    )


@pytest.fixture(scope="module")
def rules(conf) -> RuleSet:
    return RuleSet.load(conf)


def make(title: str, files=(), body: str = "", repo: str = "acme/infer", **extra) -> Item:
    """An invented merged PR."""
    changes = [FileChange(path, add, dele) for path, add, dele in files]
    return Item(repo=repo, kind=extra.pop("kind", "pr"), key="1", number=1, title=title, body=body, files=changes,
                merged_at=datetime(2026, 7, 1, tzinfo=UTC), **extra)


def case_item(name: str) -> Item:
    case = CASES[name]
    return make(case["title"], case["files"], case["body"], case["repo"])


# --------------------------------------------------------------------------- invented items, field by field


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_expectations(name, rules, conf):
    expect = CASES[name]["expect"]
    result = analyse_item(case_item(name), rules, [], conf)
    for field in ("grade", "native", "priority"):
        if field in expect:
            assert getattr(result, field) == expect[field], (field, result)
    if "kind" in expect:
        assert result.item_kind == expect["kind"]
    assert set(expect.get("topics_has", [])) <= set(result.topics), result.topics
    assert set(expect.get("risks_has", [])) <= set(result.risk_labels), result.risk_labels
    assert not set(expect.get("risks_not", [])) & set(result.risk_labels), result.risk_labels
    if "reason_has" in expect:
        assert expect["reason_has"] in result.grade_reason["en"]
        assert expect["reason_has"] in result.grade_reason["zh"]


def test_cuda_kernel_is_l_and_tracked_only(rules, conf):
    result = analyse_item(case_item("cuda-kernel"), rules, [], conf)
    assert (result.grade, result.decision) == ("L", "track-only")
    assert "CUDA" not in result.grade_reason["zh"] or "内核" in result.grade_reason["zh"]


def test_tokenizer_cache_is_s_with_host_side_reason(rules, conf):
    result = analyse_item(case_item("tokenizer-cache"), rules, [], conf)
    assert result.grade == "S"
    assert "infer/transformers_utils/tokenizer.py" in result.grade_reason["en"]
    assert (result.priority, result.decision) == ("none", "track-only")  # frontend is not a focus topic
    frontend = replace(conf, focus=[*FOCUS, "frontend"])
    result = analyse_item(case_item("tokenizer-cache"), rules, [], frontend)
    assert (result.priority, result.decision) == ("P2", "adapt-now")  # S with a test: port it with the test


def test_attention_metadata_builder_is_m(rules, conf):
    result = analyse_item(case_item("attention-metadata"), rules, [], conf)
    assert result.grade == "M"
    assert "infer/attention/backends/utils.py" in result.grade_reason["en"]
    assert result.decision == "validate-first"


def test_native_docs_are_s_and_adopted(rules, conf):
    result = analyse_item(case_item("ascend-docs"), rules, [], conf)
    # docs are never "adapt now" (nothing to adopt into the code): kept for reference
    assert (result.grade, result.native, result.decision) == ("S", True, "track-only")


def test_ci_pr_is_noise(rules, conf):
    result = analyse_item(case_item("ci-only"), rules, [], conf)
    assert result.priority == "none"
    assert result.importance <= 2 and result.insight == 1


def test_perf_pr_with_claims_is_p0_and_quotes_the_figure(rules, conf):
    # a 6.7% TTFT gain is worth knowing (P1); a large measured win on a hot path is P0
    small = [PerfClaim("TTFT", 1048.64, 978.58, "ms", -6.68, ratio=1.07)]
    assert analyse_item(case_item("attention-metadata"), rules, small, conf).priority == "P1"
    claims = [PerfClaim("TTFT", 1048.64, 778.58, "ms", -25.75, ratio=1.35), PerfClaim("TPS", 162.26, 164.67, "", 1.49)]
    item = case_item("attention-metadata")
    result = analyse_item(item, rules, claims, conf)
    assert result.priority == "P0"
    assert result.perf_claims is claims
    assert "TTFT 1048.64 → 778.58 ms" in result.summary["en"]
    assert "TTFT 1048.64 → 778.58 ms" in result.summary["zh"]
    assert result.importance >= 4 and result.insight >= 2
    without = analyse_item(item, rules, [], conf)
    assert without.priority == "P1" and without.insight < result.insight


def test_a_slowdown_is_never_a_win(rules, conf):
    # 141.42 -> 148.26 us is 5% slower: reported figures, but no win, so not P0 on its numbers
    slower = [PerfClaim("kernel time", 141.42, 148.26, "us", 4.84, ratio=0.95)]
    assert analyse_item(case_item("attention-metadata"), rules, slower, conf).priority != "P0"
    faster = [PerfClaim("kernel time", 148.26, 101.42, "us", -31.6, ratio=1.46)]
    assert analyse_item(case_item("attention-metadata"), rules, faster, conf).priority == "P0"


def test_headline_is_the_largest_improvement_with_its_condition(rules, conf):
    ctx = {"concurrency": "48"}
    claims = [PerfClaim("Total time", 12.6, 12.5, "s", -0.79, ratio=1.01, context=ctx),
              PerfClaim("dev3", 595.88, 2.41, "ms", -99.6, ratio=247.25, context=ctx),
              PerfClaim("queue p99", 603.63, 2.64, "ms", -99.56, ratio=228.65, context=ctx)]
    result = analyse_item(case_item("attention-metadata"), rules, claims, conf)
    # the largest improvement among real metric names, not the first row nor a bare row label
    assert "queue p99 [concurrency 48] 603.63 → 2.64 ms" in result.summary["en"]
    # a sweep that is mostly slower is headlined by the author's first figure, written as worse
    sweep = [PerfClaim("kernel time", 141.42, 148.26, "us", 4.84, ratio=0.95),
             PerfClaim("kernel time", 11.64, 12.75, "us", 9.54, ratio=0.91),
             PerfClaim("kernel time", 10.45, 10.19, "us", -2.49, ratio=1.03)]
    slower = analyse_item(case_item("attention-metadata"), rules, sweep, conf)
    assert "141.42 → 148.26 us, worse" in slower.summary["en"] and "变差" in slower.summary["zh"]
    assert slower.priority != "P0"


def test_a_backport_is_at_most_p1(rules, conf):
    claims = [PerfClaim("TTFT", 1048.64, 778.58, "ms", -25.75, ratio=1.35)]
    item = case_item("attention-metadata")
    assert analyse_item(item, rules, claims, conf).priority == "P0"
    item.branches = ["release/v0.8.0"]  # only on a release branch: the original on main carries P0
    backport = analyse_item(item, rules, claims, conf)
    assert backport.priority == "P1"


def test_whole_numbers_print_without_decimals(rules, conf):
    claims = [PerfClaim("step time", 12.0, 9.0, "s", -25.0)]
    result = analyse_item(case_item("attention-metadata"), rules, claims, conf)
    assert "step time 12 → 9 s" in result.summary["en"]


def test_keywords_match_whole_words_only(rules, conf):
    doctor = analyse_item(make("Refactor the doctor module", [("infer/doctor.py", 30, 3)], labels=["doctor"]),
                          rules, [], conf)
    assert doctor.item_kind != "docs" and "docs" not in doctor.topics
    docs = analyse_item(make("Refactor the module", [("infer/x.py", 30, 3)], labels=["doc"]), rules, [], conf)
    assert "docs" in docs.topics
    spelled = [make(f"Speed up {t} reuse", [("infer/x.py", 30, 3)]) for t in ("KV-cache", "kv_cache", "KV cache")]
    assert all("kv-cache" in analyse_item(i, rules, [], conf).topics for i in spelled)
    assert "kv-cache" not in analyse_item(make("Speed up kvcacheless path", [("infer/x.py", 3, 3)]),
                                          rules, [], conf).topics


def test_body_only_topics_need_two_distinct_keywords(rules, conf):
    template = "### What this PR does / why we need it?\nRuns on the NPU.\n\n- vLLM version: v0.99.0\n"
    one = analyse_item(make("Tidy the loader", [("infer/loader.py", 30, 3)], body=template), rules, [], conf)
    assert "npu" not in one.topics
    two = analyse_item(make("Tidy the loader", [("infer/loader.py", 30, 3)], body=template + "Needs CANN 8.3."),
                       rules, [], conf)
    assert "npu" in two.topics


def test_core_path_comes_from_settings(rules, conf):
    files = [("infer/core/scheduler.py", 40, 2), ("tests/core/test_scheduler.py", 10, 0)]
    assert "core-path" in analyse_item(make("Tune the scheduler", files), rules, [], conf).risk_labels
    other = analyse_item(make("Tune the scheduler", files, repo="acme/elsewhere"), rules, [], conf)
    assert "core-path" not in other.risk_labels


def test_no_test_risk_needs_code_without_tests(rules, conf):
    code = [("infer/engine/loop.py", 40, 2)]
    assert "no-test" in analyse_item(make("Tune the loop", code), rules, [], conf).risk_labels
    with_test = code + [("tests/engine/test_loop.py", 10, 0)]
    assert "no-test" not in analyse_item(make("Tune the loop", with_test), rules, [], conf).risk_labels
    docs = [("docs/loop.md", 40, 2)]
    assert "no-test" not in analyse_item(make("Describe the loop", docs), rules, [], conf).risk_labels


def test_word_risks(rules, conf):
    files = [("infer/engine/args.py", 40, 80)]
    breaking = analyse_item(make("[BREAKING] Remove the --legacy-scheduler argument", files), rules, [], conf)
    assert "breaking" in breaking.risk_labels
    default = analyse_item(make("Enable chunked prefill by default", files), rules, [], conf)
    assert "new-default" in default.risk_labels
    big = analyse_item(make("Rewrite the engine", [(f"infer/e{i}.py", 30, 0) for i in range(21)]), rules, [], conf)
    assert "large-change" in big.risk_labels
    draft = analyse_item(make("[WIP] Rewrite the engine", files, draft=True), rules, [], conf)
    assert "draft" in draft.risk_labels and draft.decision == "track-only"
    # "draft" as a word (draft models) is not a draft PR
    assert "draft" not in analyse_item(make("Batch the draft model", files), rules, [], conf).risk_labels
    conflicted = make("Tune the loop", files, comments=[Comment("bot", "This branch has conflicts.", is_bot=True)])
    assert "conflicts" in analyse_item(conflicted, rules, [], conf).risk_labels


def test_silent_accuracy_only_for_bug_fixes(rules, conf):
    body = "The outputs silently diverged: NaN logits and wrong results."
    fix = analyse_item(make("[Bugfix] Fix NaN logits", [("infer/x.py", 3, 3)], body=body), rules, [], conf)
    assert "silent-accuracy" in fix.risk_labels
    feature = analyse_item(make("[Feature] Add fp32 accumulation for accuracy", [("infer/x.py", 3, 3)], body=body),
                           rules, [], conf)
    assert "silent-accuracy" not in feature.risk_labels


def test_external_dependency_from_cross_repo_reference(rules, conf):
    files = [("vllm_ascend/ops/x.py", 10, 2)]
    body = "Depends on vllm-project/vllm#12345 being merged."
    item = make("Adapt the fused op", files, body=body, repo="vllm-project/vllm-ascend")
    assert "external-dependency" in analyse_item(item, rules, [], conf).risk_labels
    mention = make("Adapt the fused op", files, body="Also seen in vllm-project/vllm#12345.",
                   repo="vllm-project/vllm-ascend")
    assert "external-dependency" not in analyse_item(mention, rules, [], conf).risk_labels


@pytest.mark.parametrize("body, dependent", [
    ("Blocked by the model loading path (not a limitation of this builder).", False),
    ("Blocked by upstream PR vllm-project/vllm#12345 landing first.", True),
    ("This is blocked by the next release of the runtime.", True),
])
def test_blocked_by_is_an_external_dependency_only_of_a_pr_release_or_upstream(rules, conf, body, dependent):
    item = make("Add a token builder", [("infer/tok.py", 10, 2)], body=body)
    assert ("external-dependency" in analyse_item(item, rules, [], conf).risk_labels) is dependent


@pytest.mark.parametrize("title, files, kind", [
    ("[Perf] Avoid a host sync in the sampler", [("infer/sample/sampler.py", 9, 2)], "perf"),
    ("[Bugfix] Guard empty batches", [("infer/core/s.py", 9, 2)], "bugfix"),
    ("[BugFix][Doc] Fix the quick-start guide", [("docs/quick.md", 9, 2)], "docs"),
    ("fix: handle None labels", [("trainer/x.py", 3, 1)], "bugfix"),
    ("feat(rollout): add partial rollouts", [("trainer/rollout.py", 80, 1)], "feature"),
    ("[Test] Cover the empty batch", [("tests/test_x.py", 40, 0)], "test"),
    ("[Refactor] Split the runner", [("infer/worker/a.py", 90, 90)], "refactor"),
    ("[Model] Support Qwen4", [("infer/models/qwen4.py", 400, 0)], "model-support"),
    # tags that name a component or an input are not kinds
    ("[Model Runner V2] Share the top-k buffer between draft steps", [("infer/worker/gpu/spec.py", 90, 9)],
     "misc"),
    ("[image] Resize before the processor", [("infer/multimodal/image.py", 40, 9)], "misc"),
    ("[CI image] Rebuild the test image", [(".github/workflows/img.yml", 4, 1)], "ci"),
    ("[model] fix: logits when labels are None", [("trainer/models/x.py", 3, 1)], "bugfix"),
    ("[doc] fix: broken link", [("docs/a.md", 1, 1)], "docs"),
    ("Update the install guide", [("docs/install.md", 9, 2)], "docs"),
    ("Tidy workflows", [(".github/workflows/a.yml", 9, 2)], "ci"),
    ("Add more cases", [("tests/unit/test_a.py", 9, 2)], "test"),
    ("[Misc] Rename helpers", [("infer/utils.py", 9, 9)], "misc"),
    ("Something", [], "misc"),
])
def test_kind_from_conventions_and_paths(title, files, kind, rules, conf):
    assert analyse_item(make(title, files), rules, [], conf).item_kind == kind


def test_kind_of_releases_and_issues(rules, conf):
    release = replace(make("v1.2.0"), kind="release", number=None, key="v1.2.0")
    assert analyse_item(release, rules, [], conf).item_kind == "release"
    bug = make("[Bug]: crash when the batch is empty", kind="issue")
    assert analyse_item(bug, rules, [], conf).item_kind == "issue-bug"
    rfc = make("[RFC]: a new scheduler interface", kind="issue")
    assert analyse_item(rfc, rules, [], conf).item_kind == "rfc"
    ask = make("[Feature]: support video inputs", kind="issue")
    assert analyse_item(ask, rules, [], conf).item_kind == "issue-feature"


def test_every_text_is_bilingual(rules, conf):
    claims = [PerfClaim("throughput", 100.0, 150.0, "tok/s", 50.0)]
    for name in CASES:
        result = analyse_item(case_item(name), rules, claims, conf)
        texts = [result.grade_reason, result.decision_reason, result.summary]
        assert all(text.get("en") and text.get("zh") for text in texts), name
        assert len(result.summary["en"]) <= 140
        assert 1 <= result.importance <= 5 and 1 <= result.insight <= 5
        assert result.links == [] and result.version == rules.version


def test_summary_uses_the_description_lead_not_the_template(rules, conf):
    body = ("### What this PR does / why we need it?\nThis PR caches the block table on the device so each "
            "step skips a host copy.\n\n### How was this patch tested?\nCI passed.")
    result = analyse_item(make("[Perf] Block table caching", [("infer/worker/x.py", 30, 3)], body=body),
                          rules, [], conf)
    assert "Caches the block table on the device" in result.summary["en"]
    assert "What this PR does" not in result.summary["en"]


def test_template_and_checklists_are_ignored(rules):
    body = ("### What does this PR do?\n\nPads micro-batches.\n\n### Checklist Before Starting\n\n"
            "- [ ] Search for similar PRs. `perf`, `doc`, `megatron`\n\n> Demonstrate the design,\n"
            "new model support, etc.\n\nSigned-off-by: A <a@b.c>\n")
    text = clean_description(body, rules)
    assert "Pads micro-batches." in text
    assert not re.search(r"Search for|new model|Signed-off|Demonstrate", text)


def test_target_profiles_change_the_grade(conf):
    triton = make("Add a Triton kernel for top-k", [("infer/ops/triton/topk.py", 120, 0)])
    ascend = analyse_item(triton, RuleSet.load(conf), [], conf)
    rocm_conf = replace(conf, target="rocm")
    rocm = analyse_item(triton, RuleSet.load(rocm_conf), [], rocm_conf)
    assert (ascend.grade, rocm.grade) == ("L", "M")
    hip = make("Tune the HIP attention path", [("infer/attention/rocm/hip_attn.py", 30, 3)])
    assert analyse_item(hip, RuleSet.load(rocm_conf), [], rocm_conf).native
    with pytest.raises(ConfigError, match="unknown target profile"):
        RuleSet.load(replace(conf, target="tpu-v9"))


def test_version_is_stable_and_follows_the_rules(conf, tmp_path):
    first, again = RuleSet.load(conf), RuleSet.load(conf)
    assert re.fullmatch(r"[0-9a-f]{12}", first.version) and first.version == again.version
    (tmp_path / "bots.toml").write_text('[bots]\nnames = ["our-bot"]\npatterns = []\n', encoding="utf-8")
    custom = RuleSet.load(replace(conf, rules_dir=tmp_path))
    assert custom.version != first.version
    assert is_bot("our-bot", custom) and not is_bot("dependabot[bot]", custom)


def test_bots_and_noise(rules):
    assert is_bot("dependabot[bot]", rules) and is_bot("gemini-code-assist", rules)
    assert is_bot("Mergify", rules) and not is_bot("alice-dev", rules) and not is_bot("", rules)
    page = ("Fix the cache\nf9dcd38 to\n2ebce48\nCompare\nThis pull request has conflicts, please resolve.\n"
            "Real text stays.\nSigned-off-by: A <a@b.c>\n")
    cleaned = strip_noise(page, load_noise_patterns())
    assert cleaned == "Fix the cache\n\nReal text stays."


def test_bot_authors_rank_none(rules, conf):
    item = make("Bump torch from 2.8 to 2.9", [("requirements.txt", 1, 1)], author="dependabot[bot]")
    assert analyse_item(item, rules, [], conf).priority == "none"


def test_words_split_like_the_regex():
    assert words("KV_cache/İ x-86 torch.compile 修复bug") == ["kv", "cache", "i", "x", "86", "torch", "compile", "bug"]


# --------------------------------------------------------------------------- real data


def _export_item(path: Path, number: int) -> Item:
    """The squash commit of PR `number` in an export, as an Item (the real importer lives elsewhere)."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        repo = json.loads(fh.readline())["full_name"]
        for line in fh:
            if f"(#{number})\"" not in line:
                continue
            row = json.loads(line)
            return Item(repo=repo, kind="pr", key=str(number), number=number,
                        title=re.sub(r"\s*\(#\d+\)\s*$", "", row["subject"]), body=row["body"],
                        author=row["author_name"], merged_at=datetime.fromisoformat(row["committed_at"]),
                        files=[FileChange(f["path"], f["additions"], f["deletions"]) for f in row["files"]])
    raise AssertionError(f"PR #{number} not in {path.name}")


@pytest.mark.parametrize("export, number, topics", [
    ("verl-project+verl.jsonl.gz", 6901, {"performance", "padding"}),
    ("vllm-project+vllm-ascend.jsonl.gz", 7756, {"performance", "attention"}),
])
def test_real_perf_prs_rank_high(export, number, topics, shared_data, rules, conf):
    from infra_radar.analyse.claims import extract_claims

    item = _export_item(shared_data / "git" / export, number)
    claims = extract_claims(item.body)
    result = analyse_item(item, rules, claims, conf)
    assert result.priority in ("P0", "P1")
    assert topics <= set(result.topics)
    # A native change to Triton kernel wrappers is M or L (docs/labelling.md: either reading is fair).
    assert result.grade in ("M", "L")
    assert result.item_kind in ("feature", "perf")
    if claims:
        assert "→" in result.summary["en"] and "(self-reported)" in result.summary["en"]
    assert not re.search(r"What (this|does this) PR|Checklist", result.summary["en"])


def test_noise_gates_never_change_what_is_stripped():
    """strip_noise skips a pattern when its required literal is absent; the result must not change."""
    import re as _re

    from infra_radar.analyse.rules import _gate, load_noise_patterns, strip_noise

    patterns = load_noise_patterns()
    texts = [
        "Fix it\n\nSigned-off-by: A <a@x>\nalice force-pushed the fix branch from f9dcd38 to 2ebce48 Compare",
        "This branch has conflicts that must be resolved\nConflicting files\nvllm/x.py",
        "Summary of Changes\nHello, I'm Gemini Code Assist! ... Footnotes\nreal text",
        "CLA assistant check\nAll committers have signed the CLA.\nDCO check passed",
        "plain body with no noise at all, |, ---, and a table\n| a | b |\n|\n",
        "a DCO line\nDCO sign-off missing\n  -------  \nHide details\n",
        # a deletion joins "DC" and "O check" into a DCO line: later gates look at the text as it now is
        "DCSummary of Changes Hello, I'm Gemini Code Assist! x Footnotes" + "O check",
    ]
    for text in texts:
        expected = text
        for pattern in patterns:
            expected = pattern.sub("", expected)
        assert strip_noise(text, patterns) == _re.sub(r"\n{3,}", "\n\n", expected).strip()
    assert _gate(_re.compile(r"pulled it|pushed the", _re.I)) == "pu"  # the alternatives' common start only
    assert _gate(_re.compile(r"pulled it|dragged the", _re.I)) is None  # nothing common: none required
    assert _gate(_re.compile(r"^(?>.*?\bDCO\b)(?>.*?\b(?:check|sign-off)\b).*$", _re.I)) == "dco"  # inside groups
    assert _gate(_re.compile(r"^[ \t]*-{5,}[ \t]*$", _re.I)) == "-----"  # a repeated literal, at least 5 times
    assert _gate(_re.compile(r"^[ \t]*(?:Hide|Show) (?:details|comment)[ \t]*$", _re.I)) is None  # a space only
    assert _gate(_re.compile(r"(?:pull|push)ed the", _re.I)) == "ed the"  # a group is skipped, not the rest
    assert _gate(_re.compile(r"has conflicts? now", _re.I)) == "has conflict"  # "s?" is optional


def test_an_l_grade_is_bound_to_the_platform_its_own_topics_name(conf):
    """The L-grade consequence follows from the item's grade and its platform: an NPU kernel read for ROCm or
    the CPU is bound to the NPU (never "GPU-bound"), for the NPU it is a kernel change of the target, and a
    CUDA kernel stays bound to GPU kernels."""
    from infra_radar.models import AnalysedItem
    from infra_radar.render.base import load_strings
    from infra_radar.render.conclusion import consequence

    npu = make("[Ops] Add AscendC moe_token_permute op for A2/A3",
               [("csrc/moe_token_permute/op_host/moe_token_permute.cpp", 300, 0),
                ("csrc/moe_token_permute/op_kernel/moe_token_permute.cpp", 200, 0)],
               body="Adds an AscendC kernel for the NPU with its tiling.")
    cuda = make("Add a fused top-k CUDA kernel", [("csrc/moe/topk_kernel.cu", 200, 0)],
                body="A CUDA kernel with warp shuffles for the top-k of the router.")
    en = load_strings("en")

    def said(item, target: str) -> tuple[str, str]:
        target_conf = replace(conf, target=target)
        a = analyse_item(item, RuleSet.load(target_conf), [], target_conf)
        ai = AnalysedItem(item, a)
        return a.grade, str(consequence(ai, en, [], target)) + " | " + str(consequence(ai, en, [], target, True))

    for target, name in (("rocm", "ROCm"), ("cpu", "CPU")):
        grade, text = said(npu, target)
        assert grade == "L" and "NPU-bound" in text and "NPU kernels" in text and "GPU" not in text, (target, text)
        assert f"only on {name}" in text
    grade, text = said(npu, "ascend")
    assert grade == "L" and "GPU" not in text and "NPU" in text, text
    grade, text = said(cuda, "ascend")
    assert grade == "L" and "GPU" in text, text
    naming = replace(cuda, body=cuda.body + " On the NPU the same op runs npu_topk; tested on Ascend 910B too.")
    grade, text = said(naming, "ascend")  # a CUDA kernel that names the target: bound to nothing said of it
    assert grade == "L" and "GPU" not in text and "names NPU" in text, text
