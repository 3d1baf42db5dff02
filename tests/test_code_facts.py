"""Code facts read from diffs: real changes of the shared clones (one per fact kind), a page's diff hunk, the
caps, the shallow boundary, and description-against-code contradictions."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from infra_radar.analyse.code_claims import contradictions
from infra_radar.analyse.code_facts import ChangeFacts, load_code_rules
from infra_radar.sources.diffs import facts_of_commit, facts_of_diff, feed_patch, shallow_boundary

VERL, ASCEND, VEOMNI = "verl-project+verl.git", "vllm-project+vllm-ascend.git", "ByteDance-Seed+VeOmni.git"


def _sha(clone: Path, subject_part: str) -> str:
    """The commit of the clone whose subject holds `subject_part` (the PR number, as the history writes it)."""
    out = subprocess.run(["git", "-C", str(clone), "log", "--all", "--format=%H %s", "--fixed-strings",
                          f"--grep={subject_part}"], capture_output=True, text=True, check=True).stdout
    found = [line.split(" ", 1) for line in out.splitlines() if subject_part in line.split(" ", 1)[1]]
    assert found, f"no commit with {subject_part!r} in {clone.name}"
    return found[0][0]


def _facts(clones: Path, name: str, pr: str) -> tuple[dict, str]:
    clone = clones / name
    sha = _sha(clone, f"(#{pr})")
    body = subprocess.run(["git", "-C", str(clone), "log", "-1", "--format=%b", sha], capture_output=True,
                          text=True, check=True).stdout
    facts = facts_of_commit(clone, sha, load_code_rules())
    assert facts is not None
    return facts, body


@pytest.mark.no_store
def test_a_default_that_ships_on_while_the_description_says_off(shared_clones):
    facts, body = _facts(shared_clones, VERL, "6901")
    shipped = {(d["file"], d["value"]) for d in facts["defaults"] if d["name"] == "pad_bshd_to_minibatch_max"}
    assert shipped == {("verl/trainer/config/engine/megatron.yaml", "True"), ("verl/workers/config/engine.py", "True")}
    assert all(d["previous"] is None for d in facts["defaults"] if d["name"] == "pad_bshd_to_minibatch_max")
    assert facts["skipped"].get("generated") == 1  # the generated trainer config is counted, not read
    found = contradictions(body, facts, load_code_rules())
    assert {c["file"] for c in found} == {"verl/trainer/config/engine/megatron.yaml", "verl/workers/config/engine.py"}
    assert all("pad_bshd_to_minibatch_max = True" == c["code"] for c in found)
    assert all("opt-in" in c["description"] and "false" in c["description"] for c in found)


@pytest.mark.no_store
def test_a_version_gate_moved(shared_clones):
    facts, _ = _facts(shared_clones, ASCEND, "12427")  # the vllm upgrade moves every `vllm_version_is` gate
    moved = {(g["package"], g["before"], g["after"]) for g in facts["version_gates"]}
    assert ("vllm", "0.25.0", "0.25.1") in moved
    assert facts["complete"]


@pytest.mark.no_store
def test_an_env_var_removed_from_the_env_table(shared_clones):
    facts, _ = _facts(shared_clones, ASCEND, "12117")
    removed = {(r["name"], r["kind"], r["file"]) for r in facts["removed"]}
    assert ("VLLM_ASCEND_FLASHCOMM2_PARALLEL_SIZE", "env", "vllm_ascend/envs.py") in removed
    assert {"name": "VLLM_ASCEND_FLASHCOMM2_PARALLEL_SIZE", "kind": "env", "change": "removed",
            "file": "vllm_ascend/envs.py"} in facts["switches"]
    # a Triton heuristics dict ("NAME": lambda args: ...) is no env table: nothing of it counts as an env var
    triton, _ = _facts(shared_clones, ASCEND, "13723")
    assert not [r for r in triton["removed"] if r["kind"] == "env"]


@pytest.mark.no_store
def test_a_device_check_added(shared_clones):
    facts, _ = _facts(shared_clones, ASCEND, "14116")
    assert {"check": "is_310p", "change": "added", "file": "vllm_ascend/sample/rejection_sampler.py"} \
        in facts["device_checks"]


@pytest.mark.no_store
def test_a_kernel_touched(shared_clones):
    triton, _ = _facts(shared_clones, VEOMNI, "879")
    assert any(k["kind"] == "triton" and k["file"].endswith("chunk_o.py") for k in triton["kernels"])
    ascendc, _ = _facts(shared_clones, ASCEND, "14412")
    assert any(k["kind"] == "ascendc" and "/op_kernel/" in k["file"] for k in ascendc["kernels"])


@pytest.mark.no_store
def test_remove_downcast_removes_a_cast_not_a_definition(shared_clones):
    facts, _ = _facts(shared_clones, ASCEND, "13987")  # "... Remove e_correction_bias downcast"
    casts = [c for c in facts["casts"] if c["file"] == "vllm_ascend/ops/fused_moe/routed_experts.py"]
    assert casts and all(c["change"] == "removed" for c in casts)
    assert any("e_score_correction_bias" in c["line"] and ".to(" in c["line"] for c in casts)
    assert not [r for r in facts["removed"] if "correction_bias" in r["name"]]
    assert facts["tests"]  # the change touches tests, listed by path


@pytest.mark.no_store
def test_the_shallow_boundary_is_history_unknown(shared_clones):
    clone = shared_clones / VERL
    boundary = shallow_boundary(clone)
    assert boundary
    for sha in boundary:
        assert facts_of_commit(clone, sha, load_code_rules()) is None  # never "everything added"
    from datetime import UTC, datetime, timedelta

    from infra_radar.sources.git import read_clone

    first = subprocess.run(["git", "-C", str(clone), "log", "-1", "--format=%cI", *boundary], capture_output=True,
                           text=True, check=True).stdout.strip()
    day = datetime.fromisoformat(first).astimezone(UTC).replace(hour=0, minute=0, second=0)
    items = list(read_clone(clone, "verl-project/verl", ["main"], lambda s: s, day, day + timedelta(days=4),
                            diffs=True))
    at_boundary = [i for i in items if i.merge_commit in boundary]
    assert at_boundary and all(i.code is None and i.files == [] for i in at_boundary)  # its whole tree is no change
    assert any(i.code is not None for i in items if i.merge_commit not in boundary)


@pytest.mark.no_store
def test_a_page_diff_hunk(shared_data):
    from infra_radar.config import load_settings
    from infra_radar.sources.page import load_page_rules, parse_page, read_page

    page = shared_data / "pages" / "threads-2026-07-02" / "ByteDance-Seed+VeOmni+860.txt"
    item = parse_page(read_page(page), load_page_rules(load_settings()), None, None, page.stem)
    assert item.code is not None and item.code["source"] == "page" and item.code["complete"] is False
    assert item.code["read"]["files"] == 1 and item.code["read"]["lines"] >= 5  # the hunk a review thread shows
    invented = ("url: https://github.com/acme/infer/pull/5\ntitle: gate the fused path\nstate: open\n\n"
                "acme/infer · pull request #5 · open · Python\n# gate the fused path\n\n"
                "dev · description · 2026-06-01\nGates the path.\n\n"
                "reviewer · review thread · 2026-06-02\nacme/ops/fused.py\n```diff\n"
                "-    if torch.cuda.is_available():\n+    if current_platform.is_cuda():\n"
                '+        use_fused = os.getenv("ACME_USE_FUSED", "0") == "1"\n```\nWhy the env var?\n')
    facts = parse_page(invented, load_page_rules(load_settings())).code
    assert {"check": "current_platform.is_cuda", "change": "added", "file": "acme/ops/fused.py"} in facts["device_checks"]
    assert {"name": "ACME_USE_FUSED", "kind": "env", "change": "added", "file": "acme/ops/fused.py"} in facts["switches"]
    assert {"name": "ACME_USE_FUSED", "value": '"0"', "previous": None, "file": "acme/ops/fused.py"} in facts["defaults"]


@pytest.mark.no_store
def test_caps_skips_and_incomplete():
    rules = load_code_rules()
    lines = ["diff --git a/uv.lock b/uv.lock", "@@ -1 +1 @@", "+x = 1",
             "diff --git a/third_party/x/a.py b/third_party/x/a.py", "@@ -1 +1 @@", "+import os",
             "diff --git a/img.png b/img.png", "Binary files a/img.png and b/img.png differ",
             "diff --git a/pkg/big.py b/pkg/big.py", "@@ -0,0 +1,5000 @@",
             *(f'+    v{i}: int = {i}' for i in range(5000)),
             "diff --git a/pkg/conf.yaml b/pkg/conf.yaml", "@@ -1,2 +1,2 @@", "-use_x: False", "+use_x: True"]
    facts = facts_of_diff(rules, lines, "git")
    assert facts["skipped"] == {"lock": 1, "vendored": 1, "binary": 1}
    assert facts["complete"] is False  # the big file was cut at its cap
    assert facts["read"]["lines"] <= rules.caps["file_lines"] + 2
    assert len(facts["defaults"]) <= 40  # what is stored per change is bounded
    assert {"name": "use_x", "value": "True", "previous": "False", "file": "pkg/conf.yaml"} in facts["defaults"]


@pytest.mark.no_store
def test_api_patch_missing_is_incomplete_and_removed_file_counts():
    facts = ChangeFacts(load_code_rules())
    feed_patch(facts, "pkg/a.py", "@@ -1,2 +1,2 @@\n-def old_api(x):\n+def new_api(x):", "modified")
    feed_patch(facts, "pkg/huge.py", None)  # the API left the patch out: too big
    feed_patch(facts, "pkg/gone.py", None, status="removed")
    out = facts.facts("api")
    assert out["complete"] is False
    removed = [{k: r[k] for k in ("name", "kind", "file")} for r in out["removed"]]
    assert {"name": "old_api", "kind": "function", "file": "pkg/a.py"} in removed
    assert {"name": "pkg/gone.py", "kind": "file", "file": "pkg/gone.py"} in removed


@pytest.mark.no_store
def test_no_api_change_against_a_removed_public_function():
    facts = ChangeFacts(load_code_rules())
    feed_patch(facts, "pkg/api.py", "@@ -1,3 +1,1 @@\n-def fetch_all(x):\n-    return x\n+X = 1")
    out = facts.facts("git")
    said = "Refactor the loader. No API change.\n\nNothing else."
    found = contradictions(said, out, load_code_rules())
    assert [{k: c[k] for k in ("description", "code", "file")} for c in found] == [
        {"description": "No API change.", "code": "removes function fetch_all", "file": "pkg/api.py"}]
    assert contradictions("This is not a breaking change for callers? It is.", out, load_code_rules()) == []


@pytest.mark.no_store
def test_the_boundary_follows_the_code():
    from infra_radar.models import AnalysedItem, Analysis, Item
    from infra_radar.render.base import load_strings
    from infra_radar.render.code_view import code_boundary

    facts = ChangeFacts(load_code_rules())
    feed_patch(facts, "acme/ops/attn.py", "@@ -1 +1,2 @@\n+    if torch.cuda.get_device_capability()[0] >= 9:\n+        x = 1")
    feed_patch(facts, "csrc/attn.cu", "@@ -1 +1 @@\n-__global__ void k() {}\n+__global__ void k(int n) {}")
    item = Item(repo="acme/infer", kind="pr", key="1", title="t", number=1, code=facts.facts("git"))
    said = str(code_boundary(item, load_strings("en")))
    assert "GPU-only guard `torch.cuda.get_device_capability`" in said
    assert "kernel for another device (cuda: `attn.cu`)" in said
    gated = ChangeFacts(load_code_rules())
    for path in ("acme/utils/dist.py", "acme/utils/npu_patch.py"):
        feed_patch(gated, path, '@@ -1 +1,2 @@\n+    if _VLLM_VERSION >= version.parse("0.19.0"):\n+        x = 1')
    said = str(code_boundary(Item(repo="a/b", kind="pr", key="3", title="t", code=gated.facts("git")),
                             load_strings("en")))
    assert said == "the code branches on `vllm >= 0.19.0` (`dist.py`, `npu_patch.py`)", said
    npu = ChangeFacts(load_code_rules())
    feed_patch(npu, "acme/ops/attn.py", "@@ -1 +1,2 @@\n+    if is_310p():\n+        x = 1")
    assert str(code_boundary(Item(repo="a/b", kind="pr", key="2", title="t", code=npu.facts("git")),
                             load_strings("en"))) == ""
    assert AnalysedItem(item, Analysis(item_kind="feature")).analysis.contradictions == []


@pytest.mark.no_store
def test_a_full_clone_reads_its_root_and_no_diffs_reads_none(make_repo):
    from infra_radar.sources.git import read_clone

    from .conftest import commit

    repo = make_repo()
    commit(repo, "init (#1)", {"pkg/cfg.py": "class C:\n    fast: bool = False\n", "README.md": "x\n"},
           "2026-07-01T10:00:00+00:00")
    commit(repo, "turn fast on (#2)", {"pkg/cfg.py": "class C:\n    fast: bool = True\n",
                                       "tests/test_cfg.py": "def test(): pass\n"}, "2026-07-02T10:00:00+00:00")
    commit(repo, "docs only (#3)", {"README.md": "y\n"}, "2026-07-03T10:00:00+00:00")
    items = {i.number: i for i in read_clone(repo, "acme/infer", ["main"], lambda s: s, diffs=True)}
    assert shallow_boundary(repo) == set()
    assert {"name": "fast", "value": "False", "previous": None, "file": "pkg/cfg.py"} in items[1].code["defaults"]
    assert items[2].code["defaults"] == [{"name": "fast", "value": "True", "previous": "False", "file": "pkg/cfg.py"}]
    assert items[2].code["tests"] == ["tests/test_cfg.py"]
    assert items[3].code["complete"] and not items[3].code["defaults"]  # a diff read: nothing the rules read
    plain = list(read_clone(repo, "acme/infer", ["main"], lambda s: s))
    assert all(i.code is None for i in plain)


@pytest.mark.no_store
def test_weekly_risks_follow_the_code_when_a_diff_was_read():
    from infra_radar.models import AnalysedItem, Analysis, FileChange, Item
    from infra_radar.render.weekly_risks import find, removed

    def analysed(title: str, patch: str) -> AnalysedItem:
        facts = ChangeFacts(load_code_rules())
        feed_patch(facts, "acme/ops/moe.py", patch)
        item = Item(repo="acme/infer", kind="pr", key="1", title=title, number=1, code=facts.facts("git"),
                    files=[FileChange("acme/ops/moe.py", 3, 9)])
        return AnalysedItem(item, Analysis(item_kind="refactor"))

    cast = analysed("Remove bias_scale downcast", "@@ -1,3 +1,1 @@\n-        w.data = w.data.to(\n-            dtype=t\n-        )")
    assert removed(cast) is None  # the diff removes a cast, not bias_scale
    api = analysed("Tidy the loader", "@@ -1,2 +1 @@\n-def load_all(x):\n-    return x\n+X = 1")
    assert str(removed(api)) == "`load_all`"
    on = analysed("Tidy", "@@ -1 +1 @@\n-    use_fused: bool = False\n+    use_fused: bool = True")
    assert find([on, cast]).defaults == [on]


@pytest.mark.no_store
@pytest.mark.parametrize(("path", "line", "kind", "want"), [
    ("acme/conf/engine.yaml", "use_fused_attn: true  # faster", "defaults", ("use_fused_attn", "true")),
    ("pyproject.toml", "max_batch = 64", "defaults", ("max_batch", "64")),
    ("acme/presets/a.json", '  "enable_overlap": false,', "defaults", ("enable_overlap", "false")),
    ("acme/cli.py", '    p.add_argument("--chunk-size", type=int, default=512)', "defaults", ("--chunk-size", "512")),
    ("acme/cli.py", '@click.option("--warmup", default=3)', "switches", ("--warmup", "cli")),
    ("acme/run.py", 'x = os.getenv("ACME_FAST", "1")', "defaults", ("ACME_FAST", '"1"')),
    ("acme/envs.py", '    "ACME_DEBUG_SYNC": lambda: bool(int(os.getenv("ACME_DEBUG_SYNC", "0"))),', "switches",
     ("ACME_DEBUG_SYNC", "env")),
    ("acme/cfg.py", 'if getattr(cfg, "use_mla", False):', "switches", ("use_mla", "config")),
    ("acme/compat.py", 'if version.parse(torch.__version__) >= version.parse("2.6.0"):', "version_gates", ("torch", ">= 2.6.0")),
    ("acme/compat.py", 'if vllm_version_is("0.19.0"):', "version_gates", ("vllm", "0.19.0")),
    ("acme/compat.py", 'elif _VLLM_VERSION >= version.parse("0.19.0"):', "version_gates", ("vllm", ">= 0.19.0")),
    ("acme/ops.py", "    if torch.cuda.get_device_capability()[0] >= 9:", "device_checks", ("torch.cuda.get_device_capability",)),
    ("acme/ops.py", "    if current_platform.is_cuda():", "device_checks", ("current_platform.is_cuda",)),
    ("acme/ops.py", "    out = torch_npu.npu_rms_norm(x, w)", "kernels", ("torch_npu",)),
    ("acme/ops.py", "@triton.jit", "kernels", ("triton",)),
    ("csrc/k.cu", "__global__ void k() {}", "kernels", ("cuda",)),
])
def test_each_rule_on_one_added_line(path, line, kind, want):
    facts = ChangeFacts(load_code_rules())
    feed_patch(facts, path, f"@@ -1 +1,1 @@\n+{line}")
    out = facts.facts("git")[kind]
    if kind == "defaults":
        assert (want[0], want[1]) in {(d["name"], d["value"]) for d in out}, out
    elif kind == "switches":
        assert {"name": want[0], "kind": want[1], "change": "added", "file": path} in out, out
    elif kind == "version_gates":
        assert {"package": want[0], "before": None, "after": want[1], "file": path} in out, out
    elif kind == "device_checks":
        assert {"check": want[0], "change": "added", "file": path} in out, out
    else:
        assert {"file": path, "kind": want[0]} in out, out


def test_code_facts_round_trip_through_the_store(make_repo):
    """import-git keeps each change's facts in the store (either store), the export gives them back, and a
    re-import changes nothing."""
    import json

    from click.testing import CliRunner

    from infra_radar.cli import main

    from .conftest import commit

    repo = make_repo()
    commit(repo, "add the engine (#1)", {"acme/cfg.py": "class C:\n    use_overlap: bool = False\n"},
           "2026-07-01T10:00:00+00:00")
    commit(repo, "overlap by default (#2)", {"acme/cfg.py": "class C:\n    use_overlap: bool = True\n"},
           "2026-07-02T10:00:00+00:00",
           body="Adds nothing new: `use_overlap` stays opt-in, default `false`.")
    runner = CliRunner()
    for _ in range(2):
        done = runner.invoke(main, ["import-git", str(repo), "--repo", "acme/infer"])
        assert done.exit_code == 0, done.output
    assert "0 new, 0 updated, 2 unchanged" in done.output
    out = runner.invoke(main, ["export", "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    items = {i["number"]: i for i in (data["items"] if isinstance(data, dict) else data)}
    assert items[2]["code"]["defaults"] == [{"name": "use_overlap", "value": "True", "previous": "False",
                                             "file": "acme/cfg.py"}]
    assert items[2]["contradictions"] == [{"description": "Adds nothing new: `use_overlap` stays opt-in, default `false`.",
                                           "code": "use_overlap = True", "file": "acme/cfg.py"}]
    plain = runner.invoke(main, ["import-git", str(repo), "--repo", "acme/infer", "--no-diffs"])
    assert plain.exit_code == 0 and "0 new, 0 updated, 2 unchanged" in plain.output  # facts kept, not wiped
