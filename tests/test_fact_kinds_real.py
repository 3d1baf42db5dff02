"""Code-fact kinds checked against what the real lines do (analyse/fact_kinds.py), on the shared clones:

- verl#7374 reads `getattr(hf_config, "hidden_dropout", ...)` and the like in the code it removes: model-config
  reads, no config switches removed;
- vllm-ascend#13888 keeps `MoERoutingParams = MoeRouterInput`: an alias kept is no deletion;
- verl#7291 changes the signatures of `build_topology` and `init_process_group`: a changed signature is no removal.
"""

from __future__ import annotations

import subprocess

import pytest

from infra_radar.analyse.code_facts import ChangeFacts, load_code_rules
from infra_radar.sources.diffs import facts_of_diff, feed_patch

pytestmark = pytest.mark.no_store

CLONES = {"verl": "verl-project+verl.git", "ascend": "vllm-project+vllm-ascend.git"}


def _facts(shared_clones, repo: str, number: int) -> dict:
    clone = shared_clones / CLONES[repo]
    sha = subprocess.run(["git", "-C", str(clone), "log", "--all", "--format=%H", "-F", "--grep", f"(#{number})"],
                         check=True, capture_output=True, text=True).stdout.split()[0]
    diff = subprocess.run(["git", "-C", str(clone), "show", "--format=", sha], check=True, capture_output=True,
                          text=True).stdout
    return facts_of_diff(load_code_rules(), diff.splitlines(), "git")


def test_model_config_reads_are_no_switches(shared_clones):
    facts = _facts(shared_clones, "verl", 7374)
    names = {s["name"] for s in facts["switches"]}
    assert not names & {"hidden_dropout", "head_dim", "norm_topk_prob", "num_experts"}, facts["switches"]
    assert any(r["name"] == "MindSpeedActorConfig" for r in facts["removed"])  # what it does remove stays


def test_a_runtime_output_dict_key_is_no_switch(shared_clones):
    """verl#7272 and verl#7407 read `output_args.get("pad_size", 0)`, the padding a forward pass reports: a
    key of a dict passed between functions, no config switch."""
    for number in (7272, 7407):
        names = {s["name"] for s in _facts(shared_clones, "verl", number)["switches"] if s["kind"] == "config"}
        assert "pad_size" not in names, number
    facts = ChangeFacts(load_code_rules())
    feed_patch(facts, "pkg/engine.py", '@@ -1 +1,3 @@\n+pad = output_args.get("pad_size", 0)\n'
                                      '+depth = kwargs.get("depth", 2)\n+mode = self.config.get("mode", "a")\n')
    assert {s["name"] for s in facts.facts("git")["switches"] if s["kind"] == "config"} == {"mode"}


def test_an_alias_kept_and_a_changed_signature_are_no_removal(shared_clones):
    removed = {r["name"] for r in _facts(shared_clones, "ascend", 13888)["removed"]}
    assert "MoERoutingParams" not in removed
    removed = {r["name"] for r in _facts(shared_clones, "verl", 7291)["removed"]}
    assert not removed & {"build_topology", "init_process_group"}


def test_env_written_is_no_switch_and_a_moved_default_no_new_default():
    facts = ChangeFacts(load_code_rules())
    feed_patch(facts, "pkg/launch.py", '@@ -1 +1,2 @@\n+os.environ["HCCL_BUFFSIZE"] = "200"\n'
                                      '+limit = os.getenv("RADAR_LIMIT", "4")\n')
    feed_patch(facts, "pkg/old.py", "@@ -1,2 +1 @@\n-class Old:\n-    depth: int = 4\n")
    feed_patch(facts, "pkg/new.py", "@@ -1 +1,2 @@\n+class New:\n+    depth: int = 4\n")
    out = facts.facts("git")
    assert {s["name"] for s in out["switches"] if s["kind"] == "env"} == {"RADAR_LIMIT"}
    assert not [d for d in out["defaults"] if d["name"] == "depth"]
