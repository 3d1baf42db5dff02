"""Every setting is checked once, by name: numbers from radar.toml and the environment alike are finite and in
range, the model's base URL is http(s) when the configuration is loaded, and every command that takes an
item reference or a repository name checks it with the one parser (models.parse_ref / check_repo)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.config import Settings
from infra_radar.errors import ConfigError, RefError
from infra_radar.llm.prompts import llm_config
from infra_radar.models import MAX_NUMBER, check_repo, parse_ref


def run(args: list[str], env: dict[str, str] | None = None):
    result = CliRunner().invoke(main, args, env=env)
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def one_error(result) -> str:
    errors = [ln for ln in result.output.splitlines() if ln.startswith(("error:", "Error:"))]
    assert result.exit_code != 0 and len(errors) == 1, result.output
    assert "unexpected" not in errors[0], errors[0]
    return errors[0]


def llm_settings(tmp_path: Path, extra: str, base: str = "http://127.0.0.1:9/v1") -> Settings:
    path = tmp_path / "radar.toml"
    path.write_text(f'[llm]\nbase_url = "{base}"\nmodel = "m"\n{extra}', encoding="utf-8")
    return Settings(home=tmp_path, db_url="sqlite://", config_path=path)


# --- numbers -------------------------------------------------------------------------------------------

@pytest.mark.no_store
@pytest.mark.parametrize(("extra", "key"), [
    ("token_budget = 1e400\n", "token_budget"),  # TOML reads it as inf
    ("token_budget = -1\n", "token_budget"),
    ("token_budget = 2.5\n", "token_budget"),
    ("timeout = nan\n", "timeout"),
    ("timeout = 0\n", "timeout"),
    ("max_concurrency = -1\n", "max_concurrency"),
    ("max_concurrency = \"many\"\n", "max_concurrency"),
    ("run_deadline = inf\n", "run_deadline"),
    ("max_reply_bytes = 10\n", "max_reply_bytes"),
])
def test_an_llm_number_out_of_range_in_radar_toml_is_refused_by_name(tmp_path, extra, key):
    with pytest.raises(ConfigError) as caught:
        llm_config(llm_settings(tmp_path, extra), {})
    message = str(caught.value)
    assert f"[llm]: {key} must be" in message and "radar.toml" in message and "\n" not in message


@pytest.mark.no_store
@pytest.mark.parametrize(("name", "value"), [
    ("RADAR_LLM_TIMEOUT", "abc"), ("RADAR_LLM_TIMEOUT", "inf"), ("RADAR_LLM_TIMEOUT", "-1"),
    ("RADAR_LLM_CONCURRENCY", "-1"), ("RADAR_LLM_CONCURRENCY", "0"), ("RADAR_LLM_CONCURRENCY", "1.5"),
    ("RADAR_LLM_CONCURRENCY", "1e400"),
])
def test_an_llm_number_out_of_range_in_the_environment_names_the_variable(tmp_path, name, value):
    with pytest.raises(ConfigError, match=name):
        llm_config(llm_settings(tmp_path, ""), {name: value})
    # checked before any command runs, with or without a model configured: one line naming the variable
    line = one_error(run(["show", "acme/infer#1"], env={name: value}))
    assert name in line and repr(value) in line


@pytest.mark.no_store
@pytest.mark.parametrize("base", ["ftp://127.0.0.1/v1", "javascript:alert(1)", "file:///etc/passwd",
                                  "127.0.0.1:8000/v1", "http:///v1", "http://host:99999/v1", "http://a b/v1"])
def test_a_base_url_that_is_not_http_is_refused_when_the_config_loads(tmp_path, base):
    with pytest.raises(ConfigError) as caught:
        llm_config(llm_settings(tmp_path, "", base=base), {})
    assert "base_url must be http(s)" in str(caught.value) and "radar.toml [llm]" in str(caught.value)
    with pytest.raises(ConfigError, match="RADAR_LLM_BASE_URL"):
        llm_config(llm_settings(tmp_path, ""), {"RADAR_LLM_BASE_URL": base})


def test_a_base_url_that_is_not_http_fails_the_command_once_not_per_prompt(tmp_path):
    path = tmp_path / "radar.toml"
    path.write_text('[llm]\nbase_url = "ftp://127.0.0.1:9/v1"\nmodel = "m"\n', encoding="utf-8")
    export = tmp_path / "h.jsonl"
    rows = [{"kind": "repo", "full_name": "acme/infer"}]
    rows += [{"kind": "commit", "sha": f"{i:040x}", "subject": f"Fuse the rope kernel part {i} (#{i})",
              "committed_at": "2026-07-01T10:00:00Z", "body": "Speeds decode up by 12%.",
              "files": [{"path": "infer/ops/rope.py", "additions": 3, "deletions": 1}]} for i in range(1, 6)]
    export.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert run(["--config", str(path), "import-jsonl", str(export)]).exit_code == 0
    result = run(["--config", str(path), "daily", "--llm", "--since", "2026-07-01", "--until", "2026-07-02"])
    line = one_error(result)
    assert "base_url" in line and result.output.count("base_url") == 1


# --- references and repository names -------------------------------------------------------------------

BAD_REFS = ["javascript:alert(1)/x#1", "acme/infer#99999999999", f"acme/infer#{MAX_NUMBER + 1}", "acme/infer#0",
            "acme/infer#-3", "acme/infer#1e3", "acme/infer", "acme#1", "a/b/c#1", "../../etc#1", "acme/..#1",
            "-acme/infer#1", "acme/in fer#1", "acme/infer#1\n<script>", "acme/<img src=x>#1", "acme/" + "x" * 101 + "#1",
            "a" * 40 + "/x#1", "ａcme/infer#1", "acme/infer#١٢"]


@pytest.mark.no_store
@pytest.mark.parametrize("ref", BAD_REFS)
def test_the_one_ref_parser_refuses_what_github_could_not_have(ref):
    with pytest.raises(RefError) as caught:
        parse_ref(ref)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300


@pytest.mark.no_store
def test_the_one_ref_parser_takes_what_github_allows():
    assert parse_ref(" vllm-project/vllm-ascend#5011 ") == ("vllm-project/vllm-ascend", 5011)
    assert parse_ref(f"ByteDance-Seed/VeOmni.x_y#{MAX_NUMBER}") == ("ByteDance-Seed/VeOmni.x_y", MAX_NUMBER)
    assert check_repo("THUDM/slime") == "THUDM/slime"


@pytest.mark.parametrize("ref", ["javascript:alert(1)/x#1", "acme/infer#99999999999", "acme/in fer#2"])
def test_every_command_that_takes_a_ref_refuses_a_bad_one_and_stores_nothing(ref):
    for args in (["watch", "add", ref], ["watch", "remove", ref], ["show", ref], ["show", "--json", ref]):
        assert "invalid item reference" in one_error(run(args)), args
    listed = run(["watch", "list"])
    assert listed.exit_code == 0 and listed.output == "ref\tstate\twhy\n"  # the header line only


@pytest.mark.parametrize("repo", ["javascript:alert(1)/x", "acme/in fer", "acme", "a/b/c"])
def test_every_command_that_takes_a_repository_checks_it_the_same_way(tmp_path, make_repo, repo):
    page = tmp_path / "p.txt"
    page.write_text("Fix the rope kernel #12\nOpen\nalice wants to merge 1 commit into main\n", encoding="utf-8")
    clone = make_repo()
    for args in (["import-page", str(page), "--repo", repo, "--number", "12"],
                 ["import-git", str(clone), "--repo", repo],
                 ["fetch", "--repo", repo]):
        line = one_error(run(args, env={"GITHUB_TOKEN": "t"}))
        assert "invalid repository" in line, (args, line)
    for args in (["daily", "--repo", repo], ["weekly", "--repo", repo, "--week", "2026-W27"],
                 ["export", "--repo", repo], ["push", "daily", "--to", "slack", "--dry-run", "--repo", repo]):
        assert "invalid repository" in one_error(run(args)), args
    config = tmp_path / "c.toml"
    config.write_text(f'[[repos]]\nname = {json.dumps(repo)}\n', encoding="utf-8")
    assert "repository name" in one_error(run(["--config", str(config), "watch", "list"]))


@pytest.mark.no_store
def test_a_page_number_past_what_github_gives_is_refused(tmp_path):
    page = tmp_path / "p.txt"
    page.write_text("Fix the rope kernel\n", encoding="utf-8")
    result = run(["import-page", str(page), "--repo", "acme/infer", "--number", "99999999999"])
    assert result.exit_code == 2 and "--number" in result.output


def test_a_history_export_naming_a_repository_github_could_not_have_is_refused(tmp_path):
    export = tmp_path / "h.jsonl.gz"
    with gzip.open(export, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"kind": "repo", "full_name": "javascript:alert(1)/x"}) + "\n")
    line = one_error(run(["import-jsonl", str(export)]))
    assert "h.jsonl.gz:1" in line and "full_name" in line
    assert run(["watch", "list"]).output == "ref\tstate\twhy\n"
