"""`radar repo add|list|remove` edit radar.toml in place (comments kept); a configured repository with no data is
named by the daily radar and the doctor; list commands print a header line or JSON; the first hour's small doors
(an item given for a repository, `--out` alone, `daily --dry-run` without a model) say what to do."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.config import load_settings
from infra_radar.pipeline.demo import DEMO_DAILY

USER_CONFIG = """\
# our team's radar: keep these notes
lang = "en"   # the readers prefer English
out_dir = "{out}"

# what we follow
[[repos]]
name = "acme/infer"   # the engine
branches = ["main"]

[[repos]]
# our own port
name = "acme/infer-npu"
role = "downstream"

[[repos]]
name = "acme/trainer"

# a closing note about [llm], kept last
"""


def radar(*args: str, ok: bool = True):
    result = CliRunner().invoke(main, list(args))
    assert (result.exit_code == 0) == ok, result.output
    return result


def scope_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("- Repositories:"))


def test_repo_add_round_trip_keeps_comments_and_the_scope_line_names_it(sample_store, radar_home, tmp_path):
    config = radar_home / "radar.toml"
    original = USER_CONFIG.format(out=tmp_path / "reports")
    radar_home.mkdir(parents=True, exist_ok=True)  # with a PostgreSQL store nothing has made the home folder yet
    config.write_text(original, encoding="utf-8")
    added = radar("repo", "add", "acme/serve", "--branches", "main,release/*")
    assert f"added acme/serve to {config}" in added.stdout and "radar fetch --repo acme/serve" in added.stderr
    text = config.read_text(encoding="utf-8")
    assert text.startswith(original.split("# a closing note")[0]), text  # every line before, as it was
    assert text.rstrip().endswith("# a closing note about [llm], kept last")  # the closing comment stays last
    assert '[[repos]]\nname = "acme/serve"\nbranches = ["main", "release/*"]\n' in text
    assert [r.name for r in load_settings().repos][-1] == "acme/serve"
    assert "is already configured" in radar("repo", "add", "acme/serve").stdout
    assert "role downstream" in radar("repo", "add", "acme/serve", "--role", "downstream").stdout
    assert "role upstream" in radar("repo", "add", "acme/serve", "--role", "upstream").stdout

    header, *rows = radar("repo", "list").stdout.splitlines()
    assert header == "name\trole\tbranches\tconfigured\titems\tnewest"
    assert rows[-1].startswith("acme/serve\tupstream\tmain,release/*\tyes\t0\t")
    listed = {r["name"]: r for r in json.loads(radar("repo", "list", "--json").stdout)}
    assert listed["acme/serve"]["items"] == 0 and listed["acme/infer"]["items"] > 0
    assert listed["acme/infer-npu"]["role"] == "downstream"

    # the daily radar names it in its scope line, --repo takes it, and `--out` alone writes under out_dir
    since, until = DEMO_DAILY
    day = radar("daily", "--since", since, "--until", until, "--no-record").stdout
    assert "acme/serve" in scope_line(day).split("no data for the window:")[1], scope_line(day)
    alone = radar("daily", "--since", since, "--until", until, "--repo", "acme/serve", "--no-record", "--out")
    assert "unknown repository" not in alone.output
    written = tmp_path / "reports" / "daily" / "2026-08-03.md"
    assert alone.stdout.strip() == str(written) and "acme/serve" in scope_line(written.read_text(encoding="utf-8"))

    # every door names it the same way: a push of the daily (asked for it alone, or all) and the site's day page
    push = ("push", "daily", "--dry-run", "--to", "slack", "--since", since, "--until", until)
    alone = json.dumps(json.loads(radar(*push, "--repo", "acme/serve").stdout.split("\n", 1)[1]))
    assert "unknown repository" not in alone and "no data for the window: acme/serve" in alone
    assert "no data for the window: acme/serve" in radar(*push).stdout
    weekly = radar("push", "weekly", "--dry-run", "--to", "slack", "--repo", "acme/serve", "--week", "2026-W31")
    assert "unknown repository" not in weekly.output and "acme/serve" in weekly.stdout  # its week, empty
    latest = radar("push", "weekly", "--dry-run", "--to", "slack", "--repo", "acme/serve", ok=False).output
    assert "no items of acme/serve" in latest and "radar fetch --repo acme/serve" in latest, latest
    site = tmp_path / "site"
    radar("site", "build", str(site))
    page = (site / "daily" / "2026-08-02.html").read_text(encoding="utf-8")
    assert "no data for the window: acme/serve" in page

    doctor = radar("doctor", "--offline").stdout
    row = next(line for line in doctor.splitlines() if line.startswith("repos "))
    assert "4 configured (radar.toml), 3 with data; no data: acme/serve" in row
    assert "radar fetch --repo acme/serve" in row

    removed = radar("repo", "remove", "acme/serve")
    assert "removed acme/serve" in removed.stdout and "stays in the store" in removed.stdout
    assert config.read_text(encoding="utf-8") == original  # the round trip gives the file back byte for byte
    assert "is not configured" in radar("repo", "remove", "acme/serve", ok=False).output


def test_repo_add_without_a_config_starts_from_the_packaged_one(radar_home):
    radar("repo", "add", "sgl-project/sglang", "--role", "upstream")
    names = [r.name for r in load_settings().repos]
    assert names[-1] == "sgl-project/sglang" and "vllm-project/vllm-ascend" in names  # the packaged list kept
    assert "# Watched repositories" in (radar_home / "radar.toml").read_text(encoding="utf-8")


def test_an_item_for_a_repository_and_a_repository_for_an_item_say_which_command(sample_store):
    line = radar("watch", "add", "acme/infer", ok=False).output
    assert "that is a repository" in line and "acme/infer#N" in line and "radar repo add acme/infer" in line
    line = radar("daily", "--repo", "acme/infer#1811", ok=False).output
    assert "that is an item reference" in line and "radar show acme/infer#1811" in line
    # an item or its GitHub address names its repository for `repo add` (issue 42)
    line = radar("repo", "add", "acme/infer#1811").output
    assert "radar watch add acme/infer#1811" in line and "added acme/infer to" in line


def test_watch_list_shows_the_stored_state_with_a_header_and_json(sample_store):
    radar("watch", "add", "acme/infer#1811", "--reason", "kernel")
    missing = radar("watch", "add", "acme/infer#999999")
    assert "is not in the store" in missing.stderr and "radar fetch --repo acme/infer" in missing.stderr
    assert "radar repo add" in radar("watch", "add", "nobody/here#3").stderr  # neither configured nor stored
    header, *rows = radar("watch", "list").stdout.splitlines()
    assert header == "ref\tstate\twhy"
    state = dict(line.split("\t")[:2] for line in rows)
    assert state["acme/infer#1811"] in ("open", "merged", "closed", "open, draft")
    assert state["acme/infer#999999"] == "not stored"
    listed = json.loads(radar("watch", "list", "--json").stdout)
    assert [e["ref"] for e in listed][:2] == ["acme/infer#1811", "acme/infer#999999"]
    assert listed[0]["note"] == "kernel" and listed[0]["state"] == state["acme/infer#1811"]


@pytest.mark.no_store
def test_daily_dry_run_without_a_model_says_there_is_nothing_to_send(monkeypatch):
    for var in ("RADAR_LLM_BASE_URL", "RADAR_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    result = radar("daily", "--dry-run")
    assert "no model is configured" in result.stderr and "--llm needs a model" not in result.output


@pytest.mark.no_store
def test_doctor_fits_an_80_column_terminal(radar_home):
    from infra_radar.doctor import format_table, run_checks

    checks = run_checks(None, None, env={}, network=False)
    wrapped = format_table(checks, 80)
    assert max(len(line) for line in wrapped.splitlines()) <= 80
    for check in checks:  # nothing is lost: every word of each detail and fix is there
        for word in f"{check.detail} {check.fix}".split():
            assert word in wrapped.replace("\n", " ") or len(word) > 40, word
    assert len(format_table(checks).splitlines()) == len(checks) + 1  # piped: the header and a line per check


def test_import_page_takes_several_files_and_progress_is_a_line_per_stage(tmp_path):
    from infra_radar.cli.publish import SERVE_PORT
    from infra_radar.pipeline.demo import sample_files

    pages = []
    for n in (12, 13):
        page = tmp_path / f"p{n}.txt"
        page.write_text(f"Fix the rope kernel #{n}\nOpen\nalice wants to merge 1 commit into main\n", encoding="utf-8")
        pages.append(page)
    result = radar("import-page", *map(str, pages), str(tmp_path / "missing.txt"), "--repo", "acme/infer", ok=False)
    assert f"{pages[0]}: acme/infer#12 open: 1 new" in result.stdout and "acme/infer#13 open: 1 new" in result.stdout
    assert "missing.txt" in result.stderr and "1 of 3 page(s) not imported; the others were" in result.stderr
    # not on a terminal: the stage's total when it starts, and what was done when it ends
    assert "importing pages: 3 page(s) to do" in result.stderr and "importing pages: 3 page(s) done in" in result.stderr
    assert "one FILE" in radar("import-page", *map(str, pages), "--number", "5", ok=False).output

    sample = sample_files()[0]
    records = sum(1 for line in sample.read_text(encoding="utf-8").splitlines() if line.strip()) - 1
    err = radar("import-jsonl", str(sample)).stderr
    assert f"importing: {records:,} record(s) to do" in err and f"importing: {records:,} record(s) done in" in err
    week = radar("weekly", "--repo", "acme/infer", "--week", "2026-W31")
    assert "weekly: 1 report(s) done in" in week.stderr and week.stdout.startswith("# ")
    assert SERVE_PORT != 8000  # `mkdocs serve` and vLLM listen there by default
