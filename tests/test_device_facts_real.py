"""Device facts and the target verdict read from real diffs (the shared clones): which device libraries, guards
and kernels a change's lines use, and what the grade, the row's consequence, the priority and the evidence say
from them, never from a word of the title or a path.

- slime#2135 builds Gemma4 on TransformerEngine layers and a CUDA-graph tensor store: its diff is read, so it is
  no "未见设备专有代码，NPU 可直接复用" S;
- verl#7374 removes the MindSpeed-LLM backend (an Ascend-only training engine), its NPU CI jobs and examples: a
  breaking change for the target, never S, never "reuse directly", at least P1, saying what users must do;
- verl#6901 names cuDNN only in a docstring and adds no TransformerEngine call: not "code uses cuDNN", and the
  Megatron porting entry ("fused ops come from MindSpeed/torch_npu") is not picked by the word "megatron";
- a row says "未见设备专有代码" only where the diff was read and holds none.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from click.testing import CliRunner

from infra_radar.analyse.code_facts import load_code_rules
from infra_radar.analyse.device_facts import DeviceFacts, load_device_rules
from infra_radar.analyse.target_code import read_target
from infra_radar.cli import main
from infra_radar.sources.diffs import facts_of_diff

from .conftest import SHARED, TEST_DB_URL, _fresh_schema
from .test_linear import BOUND, growth

SLIME, VERL = "THUDM+slime.git", "verl-project+verl.git"
SHAS = {"slime#2135": (SLIME, "e734ee75f9c4ea29fa4745f02151d758222ac943"),
        "verl#7374": (VERL, "859c71295d79f47e089cb7ddf6965199f4f6fa81"),
        "verl#6901": (VERL, "561a4b03a11b34446e44267c2e84c4bbf63585f5"),
        "verl#6886": (VERL, "7dc5559a05cc1373ca0269b8f3da6290ad61540a"),
        "VeOmni#962": ("ByteDance-Seed+VeOmni.git", "cdf7684fe89299304e9a86c60b6552cf45a864c6")}
DAY = ("--since", "2026-06-29T02:00Z", "--until", "2026-07-02T02:12Z")
AUGUST = ("--since", "2026-08-13T00:00Z", "--until", "2026-08-16T00:00Z")
EARLY_AUGUST = ("--since", "2026-08-05T00:00Z", "--until", "2026-08-08T00:00Z")
NEXT_DAY = ("--since", "2026-07-02T02:12Z", "--until", "2026-07-03T02:12Z")


def _facts(shared_clones, ref: str) -> dict:
    clone, sha = SHAS[ref]
    diff = subprocess.run(["git", "-C", str(shared_clones / clone), "show", "--format=", sha], check=True,
                          capture_output=True, text=True).stdout
    return facts_of_diff(load_code_rules(), diff.splitlines(), "git")


@pytest.mark.no_store
def test_device_facts_of_real_diffs(shared_clones):
    slime = {lib["id"]: lib for lib in _facts(shared_clones, "slime#2135")["device"]["libs"]}
    assert {"cudnn_te", "cuda_graph"} <= set(slime)
    assert slime["cudnn_te"]["change"] == "added" and "slime_plugins/models/gemma4.py" in slime["cudnn_te"]["files"]
    assert "CudaGraph" in slime["cuda_graph"]["line"]
    assert "cuda" not in slime  # "occupy" holds "cupy": no CUDA call in a word
    # verl#6901 names cuDNN in a docstring opened on an unchanged line; verl#6886 names flash_attn in a comment
    assert _facts(shared_clones, "verl#6901")["device"]["libs"] == []
    assert _facts(shared_clones, "verl#6886")["device"]["libs"] == []
    removal = _facts(shared_clones, "verl#7374")
    libs = {lib["id"]: lib for lib in removal["device"]["libs"]}
    assert libs["mindspeed"]["removed"] > 100 and libs["mindspeed"]["added"] <= 1
    assert ".github/workflows/e2e_ascend.yml" in libs["mindspeed"]["files"]
    reading = read_target(removal, "npu")
    assert reading.removes_target and "MindSpeed" in reading.removed
    assert not read_target(removal, "npu", native_repo=True).removes_target  # the target's own repo: its business
    assert read_target(_facts(shared_clones, "slime#2135"), "npu").other_labels()[:1]
    assert read_target(None).read is False and read_target(None).device_free is False
    # VeOmni#962 adds an FP8 weight-quant kernel written in TileLang (`@tilelang.jit`, `T.Kernel`): device code
    quant = read_target(_facts(shared_clones, "VeOmni#962"), "npu")
    assert [(k["lang"], k["file"]) for k in quant.kernels] == [
        ("tilelang", "veomni/ops/kernels/deepseek_v4/act_quant.py")]
    assert quant.primary() == "device" and not quant.device_free


@pytest.mark.no_store
def test_device_rules_are_linear():
    rules = load_device_rules()

    def feed(text: str) -> None:
        facts = DeviceFacts(rules)
        facts.file("pkg/model.py", "modified", "python")
        facts.line("+", text)

    for unit in ("torch_npu.npu_x(", "nccl_NCCL ", "hccl hcclx ", "ascend npu ", "a" * 7 + " "):
        assert growth(feed, lambda n, u=unit: (u * (n // len(u) + 1))[:n]) < BOUND, unit


def radar(url: str, *args: str) -> str:
    result = CliRunner().invoke(main, ["--db", url, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def verdicts(shared_clones, tmp_path_factory) -> dict[str, str]:
    """A store of verl's and slime's history with the clones' diffs of the 07-02 window and of mid-August:
    the daily of 07-02, cards, evidence and exports."""
    home = tmp_path_factory.mktemp("device") / "home"
    home.mkdir()
    url = _fresh_schema("device-facts-real") if TEST_DB_URL else f"sqlite:///{home / 'radar.db'}"
    out: dict[str, str] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(home))
        mp.delenv("RADAR_DB_URL", raising=False)
        radar(url, "import-jsonl", str(SHARED / "git" / "verl-project+verl.jsonl.gz"),
              str(SHARED / "git" / "THUDM+slime.jsonl.gz"))
        for clone, repo, since, until in ((SLIME, "THUDM/slime", "2026-06-28", "2026-07-05"),
                                          (VERL, "verl-project/verl", "2026-06-28", "2026-07-05"),
                                          (VERL, "verl-project/verl", "2026-08-05", "2026-08-08"),
                                          (VERL, "verl-project/verl", "2026-08-13", "2026-08-16")):
            radar(url, "import-git", str(shared_clones / clone), "--repo", repo, "--branches", "main",
                  "--since", since, "--until", until)
        radar(url, "import-page", str(SHARED / "pages" / "threads-2026-07-02" / "vllm-project+vllm+47363.txt"))
        radar(url, "analyze")
        out["daily"] = radar(url, "daily", *DAY, "--lang", "zh")
        # a page dated 07-02 belongs to the window that covers most of that day: the next morning's
        out["next day"] = radar(url, "daily", *NEXT_DAY, "--lang", "zh")
        out["august"] = radar(url, "daily", *AUGUST, "--lang", "zh")
        for ref in ("THUDM/slime#2135", "verl-project/verl#7374"):
            out[ref] = radar(url, "show", ref, "--lang", "zh")
            out[f"{ref} evidence"] = radar(url, "show", ref, "--evidence", "--lang", "zh")
        out["early august"] = radar(url, "daily", *EARLY_AUGUST, "--lang", "zh")
        for name, window in (("export", DAY), ("export august", AUGUST), ("export early august", EARLY_AUGUST)):
            out[name] = radar(url, "export", "--format", "json", *window)
    return out


def _row(daily: str, ref: str) -> str:
    return next(line for line in daily.splitlines() if line.startswith("|") and f"{ref}]" in line)


def _items(export: str) -> dict[str, dict]:
    data = json.loads(export)
    items = data["items"] if isinstance(data, dict) else data
    return {f"{i['repo']}#{i['number']}": i for i in items}


def test_slime_2135_is_not_reuse_directly(verdicts):
    row = _row(verdicts["daily"], "THUDM/slime#2135")
    assert "未见设备专有代码" not in row and "可直接复用" not in row
    assert "| S |" not in row
    assert "cuDNN / TransformerEngine" in row and "CUDA Graph" in row
    card = verdicts["THUDM/slime#2135"]
    assert "设备库 cuDNN / TransformerEngine" in card and "slime_plugins/models/gemma4.py" in card
    evidence = verdicts["THUDM/slime#2135 evidence"]
    assert "device_facts.toml [[lib]] cudnn_te" in evidence and "slime_plugins/models/gemma4.py" in evidence
    code = _items(verdicts["export"])["THUDM/slime#2135"]["code"]
    assert {lib["id"] for lib in code["device"]["libs"]} >= {"cudnn_te", "cuda_graph"}


def test_removing_the_targets_backend_is_breaking(verdicts):
    item = _items(verdicts["export august"])["verl-project/verl#7374"]
    assert item["grade"] != "S" and item["priority"] in ("P0", "P1")
    row = _row(verdicts["august"], "verl-project/verl#7374")
    assert "可直接复用" not in row and "未见设备专有代码" not in row
    assert "破坏性变更" in row and "迁移" in row and "MindSpeed" in row
    card = verdicts["verl-project/verl#7374"]
    assert "可直接复用" not in card and "破坏性变更" in card


def test_no_device_code_only_where_a_diff_was_read_and_holds_none(verdicts):
    for daily, export in (("daily", "export"), ("august", "export august")):
        items = _items(verdicts[export])
        said = [ref for ref in items if re.search(rf"\[{re.escape(ref)}\][^\n]*未见设备专有代码", verdicts[daily])]
        for ref in said:
            device = (items[ref]["code"] or {}).get("device")
            assert device is not None, ref
            assert not (device["libs"] or device["guards"] or device["kernels"]), ref


def test_kernels_named_only_in_the_text_of_a_clean_diff_are_no_L(verdicts):
    """verl#7272 pads packed micro-batches so that shape-specialised kernels (torch.compile, Triton/DeepGEMM
    autotune) stop recompiling: its description names them, its diff (config, padding and router-replay code)
    holds no device code. The change carries over; its gain is what the target has to measure: M, not "bound to
    GPU kernels, track only"."""
    item = _items(verdicts["export early august"])["verl-project/verl#7272"]
    assert item["code"]["device"]["files"] and not item["code"]["device"]["kernels"]
    assert item["grade"] == "M"
    row = _row(verdicts["early august"], "verl-project/verl#7272")
    assert "| M |" in row and "绑定 GPU" not in row and "只跟踪" not in row
    assert "未见设备专有代码" in row and "实测" in row


def test_a_change_marked_breaking_is_not_adopted_as_is(verdicts):
    """verl#6804 is titled [BREAKING] (its agent loops always build the continuous-token path; the legacy
    branch is removed): host-side Python, but not "adapt now" and its row says it breaks compatibility."""
    item = _items(verdicts["export august"])["verl-project/verl#6804"]
    assert "breaking" in item["risk_labels"]
    assert item["decision"] != "adapt-now"
    row = _row(verdicts["august"], "verl-project/verl#6804")
    assert "破坏性变更" in row and "可直接复用" not in row
    # its code files are all host-side (tokenizer, agent loop; a config file runs nowhere): no loss-curve run
    assert read_target(item["code"], "npu").host_only
    steps = [line for line in verdicts["august"].splitlines() if line.startswith("- [verl-project/verl#6804]")]
    assert not any("grad-norm" in line for line in steps), steps


def test_megatron_word_picks_no_mindspeed_verdict(verdicts):
    row = _row(verdicts["daily"], "verl-project/verl#6901")
    assert "MindSpeed/torch_npu" not in row  # its diff holds no TransformerEngine call
    assert "cuDNN" in row  # the porting entry its own mechanism names (the cuDNN plan cache)


def test_a_place_is_said_only_of_files_under_it(verdicts):
    """"（`a.py`、`b.py`，位于 `X/`）": every changed file a row names lies under X (slime#2135 on main named
    mask_utils.py of slime/utils/ as under slime_plugins/models/)."""
    for daily, export in (("daily", "export"), ("august", "export august")):
        items = _items(verdicts[export])
        for ref, item in items.items():
            rows = [line for line in verdicts[daily].splitlines() if line.startswith("|") and f"[{ref}]" in line]
            for row in rows:
                for inner, module in re.findall(r"（([^（）]*)，位于 `([^`]+)`）", row):
                    names = re.findall(r"`([^`]+)`", inner)
                    for name in names:
                        paths = [f["path"] for f in item["files"] if f["path"].rsplit("/", 1)[-1] == name]
                        assert not paths or any(p.startswith(module) for p in paths), (ref, name, module)
    row = _row(verdicts["daily"], "THUDM/slime#2135")
    assert "`mask_utils.py`" in row and "位于 `slime_plugins/models/`" not in row


def test_dive_names_the_changes_the_author_lists(verdicts):
    """verl#6886's description lists its changes (flash attention kept off in RotaryEmbedding, a wrapped
    FusedMoE weight loader, the StatelessProcessGroup creation, the quantization auto-detect variable): its dive
    names them, not the identifier its description repeats most (`listen_socket`)."""
    daily = verdicts["daily"]
    start = daily.index("### [verl-project/verl#6886]")
    end = daily.find("\n### ", start + 1)
    dive = daily[start:end if end > 0 else len(daily)]
    for name in ("RotaryEmbedding", "FusedMoE.weight_loader", "StatelessProcessGroup",
                 "VLLM_ASCEND_AUTO_DETECT_QUANTIZATION"):
        assert name in dive, name


@pytest.mark.no_store
def test_the_targets_own_repository_removing_its_op(shared_clones):
    """vllm-ascend#12232 removes its custom top-k/top-p Ascend C op: its own business (no breaking change of an
    upstream), said as a removal of its own implementation; the CUDA-looking kernel line keeps the lib apart."""
    clone = shared_clones / "vllm-project+vllm-ascend.git"
    diff = subprocess.run(["git", "-C", str(clone), "show", "--format=", "4f40494977124f8e7ef5abae25f91d8802fe5294"],
                          check=True, capture_output=True, text=True).stdout
    facts = facts_of_diff(load_code_rules(), diff.splitlines(), "git")
    libs = {lib["id"]: lib for lib in facts["device"]["libs"]}
    assert libs["ascendc"]["change"] == "removed" and libs["ascendc"]["platform"] == "npu"
    assert all(lib["platform"] in ("gpu", "rocm", "triton", "npu") for lib in libs.values())
    reading = read_target(facts, "npu", native_repo=True)
    assert reading.own_removed == ["Ascend C / aclnn"] and not reading.removes_target


def test_the_dependency_the_page_names_not_the_graph_word(verdicts):
    """vllm#47363 reserves the KV cache's address range with CUDA virtual memory so captured graphs keep their
    addresses: its row names the allocator, not "graph capture becomes ACL graph"."""
    row = _row(verdicts["next day"], "vllm-project/vllm#47363")
    assert "ACL Graph" not in row and "分配器" in row
