"""`radar label` and the team's judgment in the store (both stores: SQLite, and PostgreSQL in its pass): labels
set, imported, listed and removed; every output shows a labelled item's priority and grade as the team's; labels
survive re-analysis and new rule versions; and two invented team days: after the first day's labels are
imported, the second day scores at least as well as without them (better here: the team's taste differs from
the rules' on two classes of change, and the calibration learns both).

The histories and labels are invented (acme/*): diffusion RL recipes the rules rank P1 and this team P2, stage
connector changes the rules grade M and this team S, and items on which the team agrees with the rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main

RECIPE = ("## Motivation\nAdds a {algo} training recipe for {model} text-to-image generation: the rollout samples "
          "{n} images per prompt with the diffusion pipeline and the trainer optimises a flow-matching policy loss "
          "against a {reward} reward. The recipe reuses the async rollout and caches the VAE latents.\n")
CONNECTOR = "Moves the {what} between the {a} stage and the {b} stage through the shared-memory connector: {how}.\n"

# (repo, number, title, body, files, the team's priority, the team's grade); day 1 is 2026-07-03, day 2 07-04
DAY1 = [
    ("acme/trainer", 101, "[diffusion, recipe] feat: Flow-GRPO recipe for Flux text-to-image",
     RECIPE.format(algo="Flow-GRPO", model="Flux", n=8, reward="PickScore"),
     [("recipe/flow_grpo/flux_t2i.py", 180, 0), ("recipe/flow_grpo/run_flux.sh", 30, 0)], "P2", None),
    ("acme/trainer", 102, "[diffusion, recipe] feat: DanceGRPO recipe for SD3.5",
     RECIPE.format(algo="DanceGRPO", model="SD3.5", n=12, reward="HPS"),
     [("recipe/dance_grpo/sd35.py", 160, 0), ("recipe/dance_grpo/run_sd35.sh", 25, 0)], "P2", None),
    ("acme/trainer", 103, "[diffusion, recipe] feat: DPO recipe for Qwen-Image",
     RECIPE.format(algo="DPO", model="Qwen-Image", n=4, reward="ImageReward"), [("recipe/dpo/qwen_image.py", 210, 0)],
     "P2", None),
    ("acme/trainer", 104, "[diffusion, recipe] feat: MixGRPO recipe for Wan2.1 text-to-video",
     RECIPE.format(algo="MixGRPO", model="Wan2.1", n=6, reward="VideoAlign"), [("recipe/mix_grpo/wan21_t2v.py", 240, 0)],
     "P2", None),
    ("acme/omni", 201, "[connector] feat: zero-copy shared-memory handoff of thinker hidden states",
     CONNECTOR.format(what="hidden states", a="thinker", b="talker", how="one shared buffer per request"),
     [("acme_omni/distributed/connectors/shm_connector.py", 120, 30)], None, "S"),
    ("acme/omni", 202, "[connector] fix: release shared-memory segments of aborted requests",
     CONNECTOR.format(what="codec tokens", a="talker", b="code2wav", how="segments of aborted requests are unlinked"),
     [("acme_omni/distributed/connectors/shm_connector.py", 40, 10),
      ("acme_omni/distributed/connectors/registry.py", 12, 2)], None, "S"),
    ("acme/omni", 203, "[connector] feat: msgpack wire format for stage connector payloads",
     CONNECTOR.format(what="stage payloads", a="AR", b="diffusion", how="msgpack replaces pickle on the wire"),
     [("acme_omni/distributed/connectors/serializer.py", 150, 60)], None, "S"),
    ("acme/infer", 301, "[Attention] Add chunked prefill to the paged MLA backend",
     "### Motivation\nA long unsplit prefill causes decode stalls for every request of the batch.\n"
     "### What this PR does\nSplits long prefills into chunks inside the MLA attention backend; reuses the KV cache "
     "blocks.\n",
     [("acme_infer/attention/backends/mla.py", 320, 40)], "P0", "M"),
    ("acme/infer", 302, "[CI] Run the nightly e2e suite on two runners", "CI only.\n",
     [(".github/workflows/nightly.yml", 20, 4)], "none", "S"),
    ("acme/trainer", 303, "[fsdp] fix: crash when the checkpoint dir is missing", "Creates the directory first.\n",
     [("acme_trainer/utils/checkpoint.py", 6, 1)], "P2", "S"),
    ("acme/infer", 304, "[Doc] Update the quick start", "Docs.\n", [("docs/quick_start.md", 20, 5)], "none", "S"),
]
DAY2 = [
    ("acme/trainer", 111, "[diffusion, recipe] feat: Flow-GRPO recipe for LTX-Video",
     RECIPE.format(algo="Flow-GRPO", model="LTX-Video", n=4, reward="VideoScore"),
     [("recipe/flow_grpo/ltx_video.py", 190, 0)], "P2", None),
    ("acme/trainer", 112, "[diffusion, recipe] feat: GRPO-Guard recipe for HunyuanImage",
     RECIPE.format(algo="GRPO-Guard", model="HunyuanImage", n=8, reward="OCR"),
     [("recipe/grpo_guard/hunyuan_image.py", 170, 0), ("recipe/grpo_guard/run.sh", 20, 0)], "P2", None),
    ("acme/trainer", 113, "[diffusion, recipe] feat: DiffusionNFT recipe for Z-Image",
     RECIPE.format(algo="DiffusionNFT", model="Z-Image", n=6, reward="CLIP"), [("recipe/diffusion_nft/z_image.py", 230, 0)],
     "P2", None),
    ("acme/omni", 211, "[connector] feat: batch small payloads in the shared-memory connector",
     CONNECTOR.format(what="small payloads", a="AR", b="diffusion", how="payloads under 4 KiB share one segment"),
     [("acme_omni/distributed/connectors/shm_connector.py", 90, 20)], None, "S"),
    ("acme/omni", 212, "[connector] fix: connector leaks file descriptors under load",
     CONNECTOR.format(what="segments", a="talker", b="code2wav", how="descriptors are closed after mapping"),
     [("acme_omni/distributed/connectors/shm_connector.py", 14, 4)], None, "S"),
    ("acme/infer", 311, "[KV] Reuse prefix cache blocks across LoRA adapters",
     "Shares KV cache blocks of the prefix between adapters.\n", [("acme_infer/core/kv_cache_utils.py", 140, 20)],
     "P1", "M"),
    ("acme/trainer", 312, "[ci] chore: bump the CPU test image", "CI.\n", [(".github/workflows/cpu.yml", 2, 2)],
     "none", "S"),
]
DAYS = {"2026-07-03": DAY1, "2026-07-04": DAY2}
REPOS = ["acme/infer", "acme/omni", "acme/trainer"]


def _history(folder: Path) -> list[Path]:
    """One export per repository (the ../shared/data/git format), every PR of both days merged at 08:00Z + n min."""
    commits: dict[str, list[dict]] = {r: [] for r in REPOS}
    for day, rows in DAYS.items():
        for i, (repo, number, title, body, files, _, _) in enumerate(rows):
            when = f"{day}T08:{i:02d}:00+00:00"
            commits[repo].append({"kind": "commit", "sha": f"{number:040x}", "parents": [], "author_name": "dev",
                                  "author_email": "dev@example.com", "authored_at": when, "committer_name": "GitHub",
                                  "committer_email": "noreply@github.com", "committed_at": when,
                                  "subject": f"{title} (#{number})", "body": body,
                                  "files": [{"path": p, "additions": a, "deletions": d} for p, a, d in files]})
    paths = []
    for repo, rows in commits.items():
        path = folder / f"{repo.replace('/', '+')}.jsonl"
        head = {"kind": "repo", "full_name": repo, "ref": "HEAD", "head": rows[-1]["sha"]}
        path.write_text("\n".join(json.dumps(r) for r in [head, *reversed(rows)]) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def _labels(folder: Path, day: str) -> Path:
    part = f"team-{day}"
    lines = [{"window": {"part": part, "since": f"{day}T00:00Z", "until": f"{day}T23:59Z", "repos": REPOS}}]
    for repo, number, *_, priority, grade in DAYS[day]:
        line = {"item": f"{repo}#{number}", "part": part}
        line.update({k: v for k, v in (("priority", priority), ("grade", grade)) if v})
        lines.append(line)
    path = folder / f"{part}.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def radar(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(main, list(args))
    if ok:
        assert result.exit_code == 0, result.output
    return result.stdout if args[0] == "export" else result.output  # an export's data is its stdout (a long one says its progress on stderr)


@pytest.fixture
def days(tmp_path, monkeypatch) -> dict[str, Path]:
    """A store with both invented days imported and analysed; the two days' label files."""
    monkeypatch.setenv("RADAR_LABEL_BY", "lead")
    radar("import-jsonl", *map(str, _history(tmp_path)))
    radar("analyze")
    return {day: _labels(tmp_path, day) for day in DAYS}


def _export() -> dict[str, dict]:
    return {f"{o['repo']}#{o['number']}": o for o in json.loads(radar("export", "--format", "json"))}


def _scores(day: Path) -> dict:
    return json.loads(radar("eval", str(day), "--json"))


# --- the command ------------------------------------------------------------------------------------

def test_label_sets_lists_and_removes_with_who_and_when(days, monkeypatch):
    assert "acme/infer#301: P1 / M (added, by lead)" in radar("label", "acme/infer#301", "--priority", "P1",
                                                              "--grade", "M", "--note", "core path | for us")
    assert "(unchanged, by lead)" in radar("label", "acme/infer#301", "--priority", "P1", "--grade", "M",
                                           "--note", "core path | for us")
    out = radar("label", "acme/infer#301", "--priority", "P0", "--by", "mei")
    assert "acme/infer#301: P0 (updated, by mei)" in out
    header, *listed = radar("label", "--list").splitlines()
    assert header.split("\t") == ["ref", "priority", "grade", "by", "at", "part", "note"] and len(listed) == 1
    ref, priority, grade, by, at, part, note = listed[0].split("\t")
    assert (ref, priority, grade, by, part, note) == ("acme/infer#301", "P0", "", "mei", "", "")
    assert json.loads(radar("label", "--list", "--json"))[0]["grade"] is None
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\dZ", at)
    # an item not imported yet keeps its label until it is
    assert "is not in the store yet" in radar("label", "acme/infer#999", "--priority", "P2")
    assert "removed the label of acme/infer#999" in radar("label", "acme/infer#999", "--remove")
    assert "has no label" in radar("label", "acme/infer#999", "--remove", ok=False)
    assert "error" in radar("label", "acme/infer#301", ok=False).lower()  # neither priority nor grade
    assert radar("label", "acme/infer#301", "--priority", "P9", ok=False).count("P9")
    out = radar("label", "--import", str(days["2026-07-03"]))
    assert "11 added, 0 updated, 0 unchanged, 1 window(s) (by lead)" not in out  # #301 was labelled before
    assert "10 added, 1 updated, 0 unchanged, 1 window(s) (by lead)" in out
    assert len(radar("label", "--list").splitlines()) == 1 + 11  # the header line and one per label


def test_import_reports_bad_lines_and_keeps_the_rest(days, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item": "acme/infer#301", "priority": "P0"}\nnot json\n{"item": "nope", "priority": "P1"}\n'
                   '{"item": "acme/infer#302", "priority": "P7"}\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["label", "--import", str(bad)])
    assert result.exit_code == 0, result.output
    assert "1 added" in result.output and result.output.count("warning:") == 3
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n", encoding="utf-8")
    assert "no label with a priority or grade" in radar("label", "--import", str(empty), ok=False)


# --- every output shows the team's label --------------------------------------------------------------

def test_every_output_shows_the_teams_label_marked_as_the_teams(days, tmp_path):
    radar("label", "--import", str(days["2026-07-03"]))
    radar("label", "acme/infer#301", "--priority", "P0", "--grade", "L", "--note", "our hot path")
    # the daily radar, both languages: the row and the deep dive carry the team's priority with its mark
    zh = radar("daily", "--since", "2026-07-03T00:00Z", "--until", "2026-07-04T00:00Z")
    assert re.search(r"\| P0（团队标注） \| \[acme/infer#301\]", zh), zh
    dive = zh.split("## 重点机制", 1)[1].split("\n## ", 1)[0]
    assert "P0（团队标注） · " in dive and " · L（团队标注） · " in dive  # the deep dive's first line
    assert re.search(r"团队标注：P0 / L（lead[^）]*；备注：our hot path）；规则原判 P1 / M", dive), dive
    # the short table: a labelled priority, and a labelled grade in its note
    assert re.search(r"\| P2（团队标注） \| \[acme/trainer#101\]", zh)
    # a labelled grade: in the short table's note when the item is listed (two P2 rows here), and on its card
    if "acme/omni#201]" in zh:
        assert re.search(r"\| P2 \| \[acme/omni#201\][^\n]*\| S（团队标注）：", zh)
    assert "团队标注：S（" in radar("show", "acme/omni#201")
    en = radar("daily", "--since", "2026-07-03T00:00Z", "--until", "2026-07-04T00:00Z", "--lang", "en")
    assert "P0 (team label)" in en
    # a recipe the rules rank P1 and the team P2 leaves the P0/P1 table
    top = en.split("## ", 3)[2]
    assert "acme/trainer#101" not in top
    # the card: the mark, the label line (who, when, note) and what the rules said
    card = radar("show", "acme/infer#301", "--lang", "en")
    assert "priority: P0 (team label)" in card
    assert re.search(r"Team label: P0 / L \(lead, \d{4}-\d\d-\d\d; note: our hot path\); the rules said P1 / M",
                     card), card
    assert "graded L by the team (lead); the rules said M" in card
    # the export: effective priority and grade, the label object and the rules' own answer
    obj = _export()["acme/infer#301"]
    assert (obj["priority"], obj["grade"]) == ("P0", "L")
    assert obj["label"]["priority"] == "P0" and obj["label"]["by"] == "lead" and obj["label"]["note"] == "our hot path"
    assert obj["rules"] == {"priority": "P1", "grade": "M", "decision": "validate-first"}
    assert _export()["acme/trainer#101"]["priority"] == "P2"
    # the weekly report's key PRs
    weekly = radar("weekly", "--repo", "acme/infer", "--week", "2026-W27", "--lang", "en")
    key = next(line for line in weekly.splitlines() if "acme/infer/pull/301" in line and line[:1].isdigit())
    assert "P0 (team label)" in key and "L (team label)" in key, key
    # the site's home table and item page
    out = tmp_path / "site"
    radar("site", "build", str(out), "--lang", "en")
    page = next(out.rglob("*301*.html")).read_text(encoding="utf-8")
    assert 'class="prio prio-p0">P0 (team label)</span>' in page and "Team label: P0 / L" in page


def test_labels_survive_reanalysis_and_new_rule_versions(days, radar_home, tmp_path):
    radar("label", "--import", str(days["2026-07-03"]))
    before = _export()
    assert before["acme/trainer#101"]["priority"] == "P2"
    # new rules: a rules directory whose priority.toml ranks every item by one catch-all rule
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "priority.toml").write_text('[[rule]]\npriority = "P1"\nwhy = { en = "all", zh = "全部" }\n',
                                         encoding="utf-8")
    radar_home.mkdir(parents=True, exist_ok=True)  # (a PostgreSQL store leaves no file there)
    (radar_home / "radar.toml").write_text(f'rules_dir = "{rules.as_posix()}"\n', encoding="utf-8")
    assert re.search(r"analysed [1-9]\d* item", radar("analyze"))
    after = _export()
    for ref, obj in after.items():
        labelled = obj["label"] is not None
        assert labelled == (ref in {f"{r}#{n}" for r, n, *_ in DAY1}), ref
        if labelled and obj["label"]["priority"]:
            assert obj["priority"] == obj["label"]["priority"]  # the team's priority, under any rules
    assert after["acme/trainer#101"]["rules"]["priority"] == "P1"  # the new rules' answer, kept beside it
    assert len(radar("label", "--list").splitlines()) == 1 + len(DAY1)


# --- learning -------------------------------------------------------------------------------------------

def test_the_next_day_scores_at_least_as_well_after_the_first_days_labels(days):
    without = _scores(days["2026-07-04"])
    assert "shown" not in without["learning"]  # no labels in the store yet: the radar shows the rules
    rules = without["parts"]["team-2026-07-04"]
    radar("label", "--import", str(days["2026-07-03"]))
    with_labels = _scores(days["2026-07-04"])
    shown = with_labels["learning"]["shown"]["parts"]["team-2026-07-04"]
    for field in ("priority", "grade"):
        assert shown[field]["accuracy"] >= rules[field]["accuracy"], field
    # this team's taste differs from the rules' on two classes; day 1 taught both
    assert rules["priority"]["accuracy"] < 1 and rules["grade"]["accuracy"] < 1
    assert shown["priority"]["accuracy"] == 1.0, shown  # every recipe moved to P2
    # the connector features move to S (the fix of day 2 by kin: the same directory and topics as day 1's fix)
    assert shown["grade"]["accuracy"] > rules["grade"]["accuracy"], shown
    assert shown["high_recall"] == rules["high_recall"] == 1.0
    # every labelled item shows the team's priority
    exported = _export()
    for repo, number, *_, priority, grade in DAY1:
        assert exported[f"{repo}#{number}"]["priority"] == (priority or exported[f"{repo}#{number}"]["rules"]["priority"])
        if grade:
            assert exported[f"{repo}#{number}"]["grade"] == grade


def test_the_card_says_which_flags_moved_an_unlabelled_item(days):
    radar("label", "--import", str(days["2026-07-03"]))
    card = radar("show", "acme/trainer#111", "--lang", "en")
    found = re.search(r"Calibrated by the team's labels: P1 → P2; moved by (.+)", card)
    assert found, card
    assert re.search(r"\S+ -\d\.\d\d", found.group(1))  # a flag and its weight in steps
    obj = _export()["acme/trainer#111"]
    assert obj["label"] is None and obj["learned"]["priority"] == "P2" and obj["rules"]["priority"] == "P1"
    assert obj["learned"]["moved_by"] and all(w < 0 for _, w in obj["learned"]["moved_by"])
    zh = radar("show", "acme/trainer#111")
    assert "按团队标注校准：P1 → P2" in zh


def test_eval_prints_the_cross_validated_figures_and_checks_them(days):
    radar("label", "--import", str(days["2026-07-03"]))
    out = radar("eval", str(days["2026-07-04"]))
    assert "with learning, cross-validated (leave one team day out" in out
    assert re.search(r"team-2026-07-04\s+\d\.\d{3} -> \d\.\d{3}", out)
    assert "as the radar shows them" in out
    data = _scores(days["2026-07-04"])
    assert set(data["learning"]) == {"cross_validated", "folds", "kin", "shown"}


def test_a_read_fits_the_calibration_itself_when_the_store_has_none_for_its_inputs(days):
    """A store whose kept calibration was fitted on other inputs (here: none kept at all) is judged by one fitted
    in memory: `radar show` on the stdlib sqlite3 path and the export agree with what a refit stores."""
    import sqlalchemy as sa

    from infra_radar.config import load_settings
    from infra_radar.pipeline.home import open_store

    radar("label", "--import", str(days["2026-07-03"]))
    expected = _export()["acme/trainer#111"]["learned"]
    engine = open_store(load_settings())
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM label_models"))
    engine.dispose()
    assert "Calibrated by the team's labels: P1 → P2" in radar("show", "acme/trainer#111", "--lang", "en")
    assert _export()["acme/trainer#111"]["learned"] == expected
