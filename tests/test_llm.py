"""The optional LLM stage against a local OpenAI-compatible stand-in: client faults, grounding, cache, reports."""

from __future__ import annotations

import gzip
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra_radar.config import Settings, load_settings
from infra_radar.errors import ConfigError
from infra_radar.llm.client import LlmClient, LlmConfig, LlmError, Request, parse_reply
from infra_radar.llm.grounding import Grounds, ground, language_ok, normalise, numbers, refs
from infra_radar.llm.stage import apply_llm, llm_config, load_prompt, render_messages, settings_prompt
from infra_radar.models import AnalysedItem, Analysis, FileChange, Item, PerfClaim
from infra_radar.pipeline.home import open_store
from infra_radar.pipeline.imports import import_jsonl
from infra_radar.pipeline.reports import weekly
from infra_radar.windows import make_window

from .llm_stub import INVENTED_NUMBER, INVENTED_REF, LlmStub

KEY = "sk-test-0123456789abcdef"
SCHEMA = {"type": "object", "required": ["summary"], "properties": {"summary": {"type": "string"}}}
MESSAGES = [{"role": "system", "content": "You write English."}, {"role": "user", "content": "Title: Faster rope"}]


@pytest.fixture
def stub():
    with LlmStub() as server:
        yield server


def client(stub: LlmStub, sleeps: list[float] | None = None, **kw) -> LlmClient:
    config = LlmConfig(stub.base_url, "stub-model", api_key=KEY, **kw)
    return LlmClient(config, sleep=(sleeps.append if sleeps is not None else lambda _s: None))


def request(check=None) -> Request:
    return Request("a/b#1", MESSAGES, SCHEMA, check=check)


# --- grounding -------------------------------------------------------------------------------------

def test_numbers_normalise_commas_and_trailing_zeros():
    assert normalise("1,048.640") == normalise("1048.64") == normalise("1048.64") == "1048.64"
    assert normalise("07") == "7" and normalise("2.0") == "2"
    assert numbers("TTFT 1,048.640 ms vs 512 ms, see #4321") == {"1048.64", "512"}
    assert refs("see #12 and Org/Repo#7", "a/b") == {"a/b#12", "org/repo#7"}


def test_ground_drops_sentences_with_invented_numbers_and_refs():
    grounds = Grounds.of("Latency fell from 1,048.64 ms to 512 ms (#12).", ["a/b#12"], "a/b")
    text = "Latency fell from 1048.640 ms to 512 ms. It is 3x faster. See #12. Also #13 helps. 中文 7 倍。"
    kept, dropped = ground(text, grounds)
    assert kept == "Latency fell from 1048.640 ms to 512 ms. See #12."
    assert dropped == 3


def test_language_check():
    assert language_ok("该改动优化了调度器。", "zh") and not language_ok("This reworks the scheduler.", "zh")
    assert language_ok("This reworks the scheduler.", "en") and not language_ok("该改动优化了调度器。", "en")


# --- client ----------------------------------------------------------------------------------------

def test_valid_reply_uses_json_mode_and_sends_the_key_only_as_header(stub):
    reply = client(stub).complete(request())
    assert reply.data["summary"].startswith("This change covers") and not reply.repaired
    assert reply.prompt_tokens == 100 and reply.completion_tokens == 20
    assert stub.requests[0]["response_format"] == {"type": "json_object"}
    assert stub.auth == [f"Bearer {KEY}"] and KEY not in json.dumps(stub.requests)


def test_json_schema_mode_sends_the_schema(stub):
    client(stub, json_mode="json_schema").complete(request())
    fmt = stub.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA


def test_invalid_then_valid_is_repaired_once(stub):
    stub.script.append(("invalid",))
    reply = client(stub).complete(request())
    assert reply.repaired and len(stub.requests) == 2
    assert "invalid" in stub.requests[1]["messages"][-1]["content"]
    assert reply.prompt_tokens == 200  # both attempts are counted


def test_invalid_twice_fails_without_a_third_request(stub):
    stub.script.extend([("invalid",), ("content", '{"other": 1}')])
    with pytest.raises(LlmError, match="after one repair"):
        client(stub).complete(request())
    assert len(stub.requests) == 2


def test_429_waits_for_retry_after(stub):
    stub.script.append(("status", 429, 7))
    sleeps: list[float] = []
    assert client(stub, sleeps).complete(request()).data
    assert sleeps == [7.0] and len(stub.requests) == 2


def test_5xx_retries_then_gives_up_with_a_scrubbed_message(stub):
    stub.script.extend([("status", 503, 0)] * 4)
    with pytest.raises(LlmError) as err:
        client(stub, retries=3).complete(request())
    assert "HTTP 503" in str(err.value) and KEY not in str(err.value) and len(stub.requests) == 4


@pytest.mark.no_store
def test_a_timed_out_request_is_not_resent(stub):
    stub.script.append(("slow", 0.6))
    with pytest.raises(LlmError, match="not resent"):
        client(stub, timeout=0.2).complete(request())
    assert len(stub.requests) == 1  # the server may still be working on it: no second copy queued behind it


def test_wrong_language_is_repaired(stub):
    stub.script.append(("wrong_lang",))
    def check(data):
        return None if language_ok(data["summary"], "en") else "must be English"

    reply = client(stub).complete(request(check))
    assert reply.repaired and language_ok(reply.data["summary"], "en")


def test_token_budget_stops_sending(stub):
    c = client(stub, token_budget=100)
    c.complete(request())  # 120 tokens spent
    with pytest.raises(LlmError, match="budget"):
        c.complete(request())
    assert len(stub.requests) == 1


def test_parse_reply_accepts_fenced_json():
    data, problem = parse_reply('```json\n{"summary": "x"}\n```', SCHEMA)
    assert data == {"summary": "x"} and problem is None
    assert parse_reply('{"summary": 3}', SCHEMA)[1] == "reply.summary must be a string"


# --- prompts and configuration ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["item", "weekly", "daily", "row"])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_prompts_render_strictly(name, lang):
    prompt = load_prompt(name)
    assert prompt.version >= 1 and prompt.schema["type"] == "object"
    with pytest.raises(Exception, match="undefined"):
        render_messages(prompt, lang, {})


def test_config_from_file_and_env(tmp_path, monkeypatch):
    path = tmp_path / "radar.toml"
    path.write_text('[llm]\nbase_url = "http://127.0.0.1:8000/v1"\nmodel = "Qwen/Qwen3-8B"\n'
                    'api_key_env = "MY_KEY"\nmax_concurrency = 8\njson_mode = "json_schema"\n')
    settings = Settings(home=tmp_path, db_url="sqlite://", config_path=path)
    config = llm_config(settings, {"MY_KEY": KEY})
    assert config and config.model == "Qwen/Qwen3-8B" and config.max_concurrency == 8 and config.api_key == KEY
    assert KEY not in repr(config)
    config = llm_config(settings, {"RADAR_LLM_MODEL": "other", "RADAR_LLM_API_KEY": "k2"})
    assert config and config.model == "other" and config.api_key == "k2"
    assert config.timeout == 120 and config.run_deadline == 900 and not config.retry_failed
    config = llm_config(settings, {"RADAR_LLM_CONCURRENCY": "2", "RADAR_LLM_TIMEOUT": "900",
                                   "RADAR_LLM_RETRY_FAILED": "1"})  # what scripts/model_server.sh start exports
    assert config and config.max_concurrency == 2 and config.timeout == 900 and config.retry_failed
    with pytest.raises(ConfigError, match="RADAR_LLM_TIMEOUT"):
        llm_config(settings, {"RADAR_LLM_TIMEOUT": "-1"})
    assert llm_config(Settings(home=tmp_path, db_url="sqlite://"), {}) is None
    path.write_text('[llm]\nmodel = "m"\nbase_url = "u"\ntemprature = 1\n')
    with pytest.raises(ConfigError, match="temprature"):
        llm_config(settings, {})


# --- the stage -------------------------------------------------------------------------------------

def _item() -> AnalysedItem:
    item = Item(repo="acme/infer-npu", kind="pr", key="77", number=77, title="Fuse rope into attention kernel",
                body="Fusing rope cuts TTFT from 1,048.64 ms to 512.0 ms on Qwen3-8B. Follows #70.",
                files=[FileChange("infer_npu/ops/rope.py", 120, 30)],
                merged_at=datetime(2026, 7, 30, tzinfo=UTC))
    analysis = Analysis(item_kind="perf", priority="P1", summary={"en": "Faster rope", "zh": "rope 更快"},
                        perf_claims=[PerfClaim("TTFT", 1048.64, 512.0, "ms", -51.2)])
    return AnalysedItem(item, analysis)


def _stage_settings(tmp_path, stub) -> tuple[Settings, LlmConfig]:
    settings = Settings(home=tmp_path, db_url=f"sqlite:///{tmp_path / 'r.db'}", lang="en")
    return settings, LlmConfig(stub.base_url, "stub-model", api_key=KEY)


def test_apply_llm_grounds_caches_and_dry_runs(tmp_path, stub):
    settings, config = _stage_settings(tmp_path, stub)
    engine = open_store(settings)
    dry = apply_llm(settings, engine, [_item()], "en", dry_run=True, config=config)
    assert not stub.requests and "Fuse rope" in dry.prompts[0]
    run = apply_llm(settings, engine, [_item()], "en", config=config)
    prose = run.prose["acme/infer-npu#77"]
    # every field: the supported sentence only; the invented name and number, the record #999 and the filler went
    assert prose == dict.fromkeys(("summary", "mechanism", "why", "boundary", "risks"),
                                  'The change covers "Fuse rope into attention kernel".')
    assert run.dropped_by == {"ungrounded": 10, "filler": 5, "contradiction": 0, "language": 0, "seam": 0}
    assert (run.proposed, run.kept, run.requests, run.cached) == (20, 5, 1, 0)
    assert run.cited["acme/infer-npu#77"]["why"][0].records == (1,) and run.records["acme/infer-npu#77"][0].kind == "title"
    again = apply_llm(settings, engine, [_item()], "en", config=config)
    assert len(stub.requests) == 1 and again.cached == 1 and again.prose == run.prose


def test_llm_max_tokens_lowers_each_prompts_cap_and_keys_the_cache(tmp_path, stub):
    from dataclasses import replace

    settings, config = _stage_settings(tmp_path, stub)
    engine = open_store(settings)
    own = load_prompt("item").max_tokens
    assert own > 100
    apply_llm(settings, engine, [_item()], "en", config=config)
    config_path = tmp_path / "radar.toml"
    capped = replace(settings, config_path=config_path)
    assert stub.requests[-1]["max_tokens"] == own
    for cap in (100, own + 1000, 0):
        config_path.write_text(f"[llm]\nmax_tokens = {cap}\n")
        run = apply_llm(capped, engine, [_item()], "en", config=config)
        # a lower cap is a new prompt (its reply may be cut); a higher one or none keeps the prompt's own
        assert (run.requests, run.cached) == ((1, 0) if cap == 100 else (0, 1)), cap
        assert stub.requests[-1]["max_tokens"] == 100 and len(stub.requests) == 2
    config_path.write_text("[llm]\nmax_tokens = -5\n")
    with pytest.raises(ConfigError, match=r"\[llm\] max_tokens must be an integer"):
        apply_llm(capped, engine, [_item()], "en", config=config)


def test_apply_llm_counts_failures_and_keeps_going(tmp_path, stub):
    settings, config = _stage_settings(tmp_path, stub)
    stub.script.extend([("invalid",), ("invalid",)])
    run = apply_llm(settings, open_store(settings), [_item()], "en", config=config)
    assert run.failed == 1 and run.prose == {} and KEY not in " ".join(run.errors)


# --- acceptance on real data -----------------------------------------------------------------------

ASCEND = "vllm-project+vllm-ascend.jsonl.gz"
SINCE, UNTIL = datetime(2026, 7, 20, tzinfo=UTC), datetime(2026, 8, 3, tzinfo=UTC)


def _slice(src: Path, dest: Path) -> Path:
    """The repo line and the commits of the week and the week before (read at test time, never committed)."""
    with gzip.open(src, "rt", encoding="utf-8") as fh, open(dest, "w", encoding="utf-8") as out:
        for line in fh:
            rec = json.loads(line)
            when = rec.get("committed_at") or rec.get("authored_at") or rec.get("date") or ""
            if rec.get("kind") == "repo" or (rec.get("kind") == "commit" and SINCE.isoformat()[:10] <= when[:10]
                                             < UNTIL.isoformat()[:10]):
                out.write(line)
    return dest


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_weekly_with_model_prose_is_grounded_cached_and_keyless(shared_data, tmp_path, monkeypatch, lang):
    with LlmStub() as server:
        settings = load_settings(lang=lang)
        engine = open_store(settings)
        import_jsonl(settings, engine, [_slice(shared_data / "git" / ASCEND, tmp_path / "slice.jsonl")])
        window = make_window(datetime(2026, 7, 27, tzinfo=UTC), UNTIL)
        plain = weekly(settings, engine, "vllm-project/vllm-ascend", window).text
        assert weekly(settings, engine, "vllm-project/vllm-ascend", window, llm=False).text == plain
        monkeypatch.setenv("RADAR_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("RADAR_LLM_MODEL", "stub-model")
        monkeypatch.setenv("RADAR_LLM_API_KEY", KEY)
        assert weekly(settings, engine, "vllm-project/vllm-ascend", window, llm=False).text == plain
        report = weekly(settings, engine, "vllm-project/vllm-ascend", window, out_dir=tmp_path / "out")
        sent = len(server.requests)
        again = weekly(settings, engine, "vllm-project/vllm-ascend", window)
    text = report.text
    assert sent > 1 and len(server.requests) == sent and again.text == text and again.llm.cached == sent
    marker = "本期合入" if lang == "zh" else "The period merged"
    assert marker in text and ("改动涉及" if lang == "zh" else "The change covers") in text
    assert INVENTED_NUMBER not in text and INVENTED_REF not in text and report.llm.dropped >= sent
    assert KEY not in text and KEY not in report.path.read_text() and KEY not in report.llm.line()
    listed = set(re.findall(r"#(\d+)", plain))
    assert set(re.findall(r"#(\d+)", text)) <= listed


# --- the CLI ---------------------------------------------------------------------------------------

def test_cli_llm_flags_dry_run_and_cache(monkeypatch):
    from click.testing import CliRunner

    from infra_radar.cli import main
    from infra_radar.pipeline.demo import sample_files

    def invoke(*args: str):
        result = CliRunner().invoke(main, list(args))
        return result.exit_code, result.stdout, result.stderr

    assert invoke("import-jsonl", *map(str, sample_files()))[0] == 0
    week = ("weekly", "--repo", "acme/infer-npu", "--week", "2026-W31", "--lang", "en")
    plain = invoke(*week)[1]
    code, _, err = invoke(*week, "--llm")
    assert code == 1 and "--llm needs a model" in err
    with LlmStub() as server:
        monkeypatch.setenv("RADAR_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("RADAR_LLM_MODEL", "stub-model")
        monkeypatch.setenv("RADAR_LLM_API_KEY", KEY)
        assert invoke(*week, "--no-llm")[1] == plain
        code, out, err = invoke("llm", "--repo", "acme/infer-npu", "--week", "2026-W31", "--lang", "en", "--dry-run")
        assert code == 0 and "=== weekly v3 report ===" in out and not server.requests
        code, out, err = invoke(*week)
        assert code == 0 and "The period merged" in out and "request(s)" in err and server.requests
        sent = len(server.requests)
        code, out2, err = invoke(*week)
        assert out2 == out and len(server.requests) == sent and "0 request(s)" in err
        assert KEY not in out + err


# --- the daily prompt ------------------------------------------------------------------------------

def _daily_input(items: list[AnalysedItem]):
    from infra_radar.render.context import DailyInput

    window = make_window(datetime(2026, 7, 29, tzinfo=UTC), datetime(2026, 7, 31, tzinfo=UTC))
    return DailyInput(window=window, repos=sorted({ai.item.repo for ai in items}), items=items, watch=[],
                      deep_dive_limit=5, first_run=False, generated_at=datetime(2026, 7, 31, tzinfo=UTC),
                      explicit=True)


def _other_item() -> AnalysedItem:
    item = Item(repo="acme/infer", kind="pr", key="12", number=12, title="Batch block-table updates",
                body="Copies dominated the scheduler step; throughput 21.4 -> 22.1 req/s.",
                files=[FileChange("infer/core/scheduler.py", 40, 10)], merged_at=datetime(2026, 7, 30, tzinfo=UTC))
    analysis = Analysis(item_kind="perf", priority="P0", summary={"en": "Faster scheduler", "zh": "调度更快"},
                        perf_claims=[PerfClaim("throughput", 21.4, 22.1, "req/s", 3.3)])
    return AnalysedItem(item, analysis)


def test_daily_prompt_grounds_each_conclusion_and_the_headline(tmp_path, stub):
    from dataclasses import replace

    from infra_radar.llm.render import render_daily_llm
    from infra_radar.llm.stage import daily_llm

    settings, config = _stage_settings(tmp_path, stub)
    config = replace(config, max_concurrency=1)
    engine = open_store(settings)
    inp = _daily_input([_item(), _other_item()])
    from infra_radar.llm.stage import _daily_ctx

    headline = {"headline": f"Rope got faster: TTFT 512 ms. It is {INVENTED_NUMBER}x better. See #70. Start with #12."}
    # each sentence cites its records (#77: 3, #12: 4, the description sentence with the figures; 1: the title)
    rows = {"acme/infer-npu#77": [{"text": "TTFT fell from 1,048.64 ms to 512 ms.", "records": [3]},
                                  {"text": "It is 22.1 times faster.", "records": [3]},
                                  {"text": "Compare #78.", "records": [1]}],
            "acme/infer#12": [{"text": "Throughput rose to 22.1 req/s.", "records": [4]},
                              {"text": "It pairs with acme/infer-npu#77.", "records": [1]}]}
    order = [r["ref"] for r in _daily_ctx(inp, "en", None)["top"]]
    assert sorted(order) == sorted(rows)
    # one at a time, in job order: the headline prompt, then a row prompt per item in rank order
    for reply in [headline, *({"conclusion": rows[ref]} for ref in order)]:
        stub.script.append(("content", json.dumps(reply)))
    run = daily_llm(settings, engine, inp, "en", config=config)
    daily_prompt = stub.requests[0]["messages"]
    assert "headline" in daily_prompt[0]["content"] and "- acme/infer-npu#77 (" in daily_prompt[1]["content"]
    row_prompts = [r["messages"][1]["content"] for r in stub.requests[1:3]]
    assert [p.split()[1] for p in row_prompts] == order  # "Item <ref> (…": one item each
    assert run.requests == 5 and run.failed == 0  # and the two deep dives
    # the headline lost its invented number and #70 (a link, not an item of the prompt); bare #12 names one item.
    # #77's conclusion lost 22.1 (a figure of #12, not of #77) and #78; #12's lost #77, which its prompt did not show.
    assert run.report == {"headline": "Rope got faster: TTFT 512 ms. Start with #12.",
                          "conclusions": {"acme/infer-npu#77": "TTFT fell from 1,048.64 ms to 512 ms.",
                                          "acme/infer#12": "Throughput rose to 22.1 req/s."}}
    # the headline's two, #77's two, #12's one, two sentences of each field of each item reply
    assert run.dropped_by["ungrounded"] == 2 + 2 + 1 + 2 * 5 * 2
    text = render_daily_llm(inp, "en", run)
    assert "**Headline:** Rope got faster: TTFT 512 ms. Start with #12." in text
    # the model's line, then the rules' consequence for the target (its figure is the model's already; no diff was read)
    assert "| TTFT fell from 1,048.64 ms to 512 ms; Python-level by its paths; its diff was not read, so read it for device code before reusing it on NPU. |" in text
    assert INVENTED_NUMBER not in text
    again = daily_llm(settings, engine, inp, "en", config=config)
    assert len(stub.requests) == 5 and again.cached == 5 and again.report == run.report


def _section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _daily_plain(text: str) -> str:
    return re.sub(r"^- (Generated|生成时间)\S*.*$", "", text, flags=re.M)  # the run time differs between runs


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_daily_radar_with_model_prose_is_grounded_cached_and_rule_only_without(monkeypatch, lang):
    from infra_radar.pipeline.demo import sample_files
    from infra_radar.pipeline.reports import daily

    settings = load_settings(lang=lang)
    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files())
    since, until = datetime(2026, 7, 28, tzinfo=UTC), datetime(2026, 8, 4, tzinfo=UTC)
    plain = daily(settings, engine, since, until).text
    with LlmStub() as server:
        monkeypatch.setenv("RADAR_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("RADAR_LLM_MODEL", "stub-model")
        monkeypatch.setenv("RADAR_LLM_API_KEY", KEY)
        assert _daily_plain(daily(settings, engine, since, until, llm=False).text) == _daily_plain(plain)
        assert not server.requests
        report = daily(settings, engine, since, until)
        sent = len(server.requests)
        again = daily(settings, engine, since, until)
    top = re.findall(r"^\| (?:P[0-2]|none) \| \[([\w/-]+#\d+)\]", _section(plain, "P0 / P1"), re.M)
    short_title = "Short table" if lang == "en" else "简表"
    more = re.findall(r"^\| P[01] \| \[([\w/-]+#\d+)\]", _section(plain, short_title), re.M)
    assert len(top) == settings.top_table_limit and more and not set(top) & set(more)  # no item twice
    every = top + more
    text = report.text
    deep = min(len(top), settings.deep_dive_limit)
    per = settings_prompt(settings, "daily").items_listed or len(every)
    # the headline prompt, a row prompt per P0/P1 item (the table's and the short table's), an item prompt per
    # deep dive
    assert len(top) > deep >= 2 and sent == 1 + len(every) + deep
    assert len(server.requests) == sent and again.llm.cached == sent and _daily_plain(again.text) == _daily_plain(text)
    marker = "模型结论" if lang == "zh" else "Model conclusion"
    rows = [line for line in _section(text, "P0 / P1").splitlines() if re.match(r"\| (?:P[0-2]|none) \|", line)]
    assert len(rows) == len(top) and all(marker in row for row in rows)
    notes = [line for line in _section(text, short_title).splitlines() if re.match(r"\| P[01] \|", line)]
    assert len(notes) == len(more) and all(marker in row for row in notes)  # the short table's P0/P1 notes too
    headline = "**今日要点**：" if lang == "zh" else "**Headline:** "
    # the headline prompt lists the first `items_listed` items (the stub counts them)
    assert f"{headline}{'今日 P0 / P1 条目共' if lang == 'zh' else 'Today brings'} {min(len(every), per)} " in text
    assert INVENTED_NUMBER not in text and INVENTED_REF not in text
    # every daily conclusion lost two sentences (the invented name and number, the record that does not exist),
    # the headline one, each field of each item reply two
    assert report.llm.dropped_by["ungrounded"] == 2 * len(every) + 1 + 2 * 5 * deep and report.llm.failed == 0
    # the dives' mechanism, why and boundary are the model's supported sentence, joined on sentence boundaries
    dives = _section(text, "Deep dives" if lang == "en" else "重点机制")
    for part in (("How: The change covers \"", "Why: The change covers \"") if lang == "en" else
                 ("做法：改动涉及「", "起因：改动涉及「")):
        assert dives.count(part) == deep, part
    assert dives.count("The change covers \"" if lang == "en" else "改动涉及「") == 3 * deep
    assert not re.search(r"[。.][，,。]", dives.replace("...", "")) and "至关重要" not in text and "opt-in" not in text
    assert set(re.findall(r"#(\d+)", text)) <= set(re.findall(r"#(\d+)", plain))
    assert KEY not in text and KEY not in report.llm.line()


# --- prompt overrides ------------------------------------------------------------------------------

def _cli(*args: str) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from infra_radar.cli import main

    result = CliRunner().invoke(main, list(args))
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_a_user_prompt_replaces_the_packaged_one_and_its_version_keys_the_cache(radar_home, monkeypatch):
    from importlib import resources

    from infra_radar.pipeline.demo import sample_files

    for var in ("RADAR_LLM_BASE_URL", "RADAR_LLM_MODEL", "RADAR_LLM_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    packaged = (resources.files("infra_radar") / "defaults" / "prompts" / "daily.toml").read_text(encoding="utf-8")
    v = int(re.search(r"^version = (\d+)$", packaged, re.M).group(1))
    assert "You write the headline of the daily" in packaged
    mine = radar_home / "my-prompts"
    mine.mkdir(parents=True)
    override = mine / "daily.toml"
    override.write_text(packaged.replace("You write the headline of the daily", "OVERRIDE-7f3a. You write the headline of the daily"))
    day = ("daily", "--since", "2026-07-28", "--until", "2026-08-04", "--lang", "en")
    with LlmStub() as server:
        (radar_home / "radar.toml").write_text(f'[llm]\nbase_url = "{server.base_url}"\nmodel = "stub-model"\n'
                                               'prompts_dir = "my-prompts"\n')  # relative to radar.toml
        assert _cli("import-jsonl", *map(str, sample_files()))[0] == 0
        code, out, err = _cli(*day)
        assert code == 0 and "**Headline:**" in out, err
        systems = [r["messages"][0]["content"] for r in server.requests]
        parts = sum(s.startswith("OVERRIDE-7f3a. You write the headline of the daily") for s in systems)
        assert parts == 1  # the headline prompt (the rows have their own, packaged)
        first = next(i for i, s in enumerate(systems) if s.startswith("OVERRIDE-7f3a."))
        sent = len(server.requests)
        assert _cli(*day)[0] == 0 and len(server.requests) == sent  # cached
        override.write_text(override.read_text().replace(f"version = {v}\n", f"version = {v + 1}\n"))
        code, out2, err = _cli(*day)
        assert code == 0 and len(server.requests) == sent + parts and f"{parts} request(s)" in err  # the headline
        again = [r["messages"] for r in server.requests[sent:]]
        assert server.requests[first]["messages"] in again  # same text, new version
        code, dry, _ = _cli(*day, "--dry-run")
        assert code == 0 and len(server.requests) == sent + parts and f"=== daily v{v + 1}" not in dry  # cached: nothing
        override.write_text(override.read_text().replace(f"version = {v + 1}\n", f"version = {v + 2}\n"))
        code, dry, _ = _cli(*day, "--dry-run")
        assert code == 0 and f"=== daily v{v + 2} daily ===" in dry and "OVERRIDE-7f3a." in dry
        assert len(server.requests) == sent + parts  # a dry run sends nothing
        errors: list[str] = []
        for broken, needle in [(f"version = {v + 2}\n", "version = \"five\"\n"), ("[en]\n", "[en]\nsytem = 'x'\n"),
                               ("id = \"daily\"", "id = \"daily"), ("{{ date }}", "{{ date }")]:
            override.write_text(override.read_text().replace(broken, needle, 1))
            code, _, err = _cli(*day)
            assert code == 1 and str(override) in err and len(err.strip().splitlines()) == 1, err
            errors.append(err)
            override.write_text(override.read_text().replace(needle, broken, 1))
        assert len(server.requests) == sent + parts
    assert "version must be an integer" in errors[0] and "invalid TOML" in errors[2] and "template line" in errors[3]


# --- radar doctor ----------------------------------------------------------------------------------

def _doctor_row(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("llm "))


def test_doctor_reads_llm_from_radar_toml_and_never_prints_the_key(radar_home, monkeypatch):
    import socket

    for var in ("RADAR_LLM_BASE_URL", "RADAR_LLM_MODEL", "RADAR_LLM_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MY_LLM_KEY", KEY)
    monkeypatch.setenv("RADAR_DOCTOR_TIMEOUT", "60")  # the stub answers at once, however loaded the machine
    assert _cli("init")[0] == 0
    config = radar_home / "radar.toml"
    base = config.read_text()
    seen: list[str] = []

    def llm_table(url: str, model: str = "stub-model") -> None:
        config.write_text(base + f'\n[llm]\nbase_url = "{url}"\nmodel = "{model}"\napi_key_env = "MY_LLM_KEY"\n')

    def doctor(*args: str) -> tuple[int, str]:
        code, out, err = _cli("doctor", *args)
        seen.append(out + err)
        return code, _doctor_row(out)

    with LlmStub() as server:
        llm_table(server.base_url)
        code, row = doctor()
        assert code == 0 and " OK " in row and "reachable (model listed)" in row and "radar.toml [llm]" in row
        assert "model stub-model" in row and "MY_LLM_KEY set" in row
        assert server.gets == [("/v1/models", f"Bearer {KEY}")] and not server.requests
        assert "reachability not checked" in doctor("--offline")[1] and len(server.gets) == 1
        llm_table(server.base_url, "Qwen/Qwen3-8B")
        row = doctor()[1]
        assert "FAIL" in row and "does not serve Qwen/Qwen3-8B (it serves stub-model)" in row
        monkeypatch.setenv("RADAR_LLM_MODEL", "stub-model")  # the environment overrides the file
        assert " OK " in doctor()[1]
        monkeypatch.delenv("MY_LLM_KEY")
        assert "MY_LLM_KEY not set" in doctor()[1] and server.gets[-1][1] == ""
        monkeypatch.setenv("MY_LLM_KEY", KEY)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: nothing listens there
    llm_table(f"http://127.0.0.1:{port}/v1")
    code, row = doctor()
    assert code == 0 and "FAIL" in row and f"http://127.0.0.1:{port} (from radar.toml [llm]) unreachable" in row
    assert "MY_LLM_KEY set" in row and len(seen) == 6
    assert not [o for o in seen if KEY in o or KEY[:12] in o]


def test_prompts_in_radar_home_override_and_a_missing_variable_names_the_file(tmp_path, stub):
    from importlib import resources

    from infra_radar.llm.stage import prompts_dir, settings_prompt

    settings, config = _stage_settings(tmp_path, stub)  # home = tmp_path, no radar.toml
    assert prompts_dir(settings) is None and settings_prompt(settings, "item").source == "defaults/prompts/item.toml"
    packaged = (resources.files("infra_radar") / "defaults" / "prompts" / "item.toml").read_text(encoding="utf-8")
    (tmp_path / "prompts").mkdir()
    mine = tmp_path / "prompts" / "item.toml"
    mine.write_text(packaged.replace("Records:\n{{ records }}", "Records:\n{{ records }}\nAuthor: {{ author }}"))
    assert settings_prompt(settings, "item").source == str(mine)
    with pytest.raises(ConfigError, match=re.escape(f"{mine}: [en]: 'author' is undefined")):
        apply_llm(settings, open_store(settings), [_item()], "en", config=config)
    assert not stub.requests


def test_daily_radar_on_real_history_keeps_only_grounded_prose(shared_data, tmp_path, monkeypatch):
    # a team whose radar follows vllm-ascend as an upstream project (the packaged config makes it the Ascend
    # target's downstream, reported in a section of its own, with no conclusions for the model to write)
    from infra_radar.config import home_dir
    from infra_radar.pipeline.reports import daily

    home_dir().mkdir(parents=True, exist_ok=True)
    (home_dir() / "radar.toml").write_text('[[repos]]\nname = "vllm-project/vllm-ascend"\nrole = "upstream"\n',
                                           encoding="utf-8")
    settings = load_settings(lang="zh")
    engine = open_store(settings)
    import_jsonl(settings, engine, [_slice(shared_data / "git" / ASCEND, tmp_path / "slice.jsonl")])
    since, until = datetime(2026, 7, 29, tzinfo=UTC), datetime(2026, 8, 1, tzinfo=UTC)
    plain = daily(settings, engine, since, until).text
    top = re.findall(r"^\| (?:P[0-2]|none) \| \[([\w/-]+#\d+)\]", _section(plain, "P0 / P1"), re.M)
    more = re.findall(r"^\| P[01] \| \[([\w/-]+#\d+)\]", _section(plain, "简表"), re.M)  # beyond the table's limit
    with LlmStub() as server:
        monkeypatch.setenv("RADAR_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("RADAR_LLM_MODEL", "stub-model")
        report = daily(settings, engine, since, until)
        sent = len(server.requests)
        per = settings_prompt(settings, "daily").items_listed or len(top)
        dives = _section(plain, "重点机制").count("\n### ") + _section(plain, "重点机制").startswith("### ")
        assert 0 < dives <= min(len(top), settings.deep_dive_limit)  # the few chosen, not the table's first five
        assert daily(settings, engine, since, until).llm.cached == sent == dives + 1 + len(top + more)
        assert len(server.requests) == sent
    text = report.text
    assert f"**今日要点**：今日 P0 / P1 条目共 {min(len(top), per)} 项。首先关注 {top[0]}。\n" in text
    assert _section(text, "P0 / P1").count("模型结论") == len(top) >= 3
    assert INVENTED_NUMBER not in text and INVENTED_REF not in text
    assert set(re.findall(r"#(\d+)", text)) <= set(re.findall(r"#(\d+)", plain))


def test_a_model_line_that_only_repeats_the_rule_conclusion_leaves_the_rule_text():
    """A small model shown the rule conclusion tends to copy it; grounding then cuts its figures. The copy
    (whole, cut short, or nearly the same) never replaces the rule text; a line of its own does."""
    from infra_radar.llm.render import _overlay_daily

    rule = "作者：“This PR adds X.”；涉及 `forced_max_seqlen`；Total Step Time 534.13 s → 397.71 s；建议先验证"
    refs = ["a/b#1", "a/b#2", "a/b#3", "a/b#4"]
    rest = ["位于 `verl/models/mcore/`", "Total Step Time 534.13 s → 397.71 s", "建议先验证"]
    refs = ["a/b#1", "a/b#2", "a/b#3", "a/b#4", "a/b#5", "a/b#6"]
    title = "[megatron, perf] feat: pad BSHD micro-batches to mini-batch max seq_len"
    ctx = {"top": [{"ref": ref, "summary": rule, "summary_rest": rest, "title": title} for ref in refs]}
    own = "`forced_max_seqlen` 让同一 mini-batch 的 micro-batch 共用 s_q 形状，cuDNN 图不再反复构建。"
    report = {"conclusions": {
        "a/b#1": "作者：“This PR adds X.”；涉及 `forced_max_seqlen`；",  # cut short
        "a/b#2": rule,  # whole
        "a/b#3": "作者：“This PR adds X。”；涉及 `forced_max_seqlen`；Total Step Time 534.13 s → 397.71 s；建议验证",  # near
        "a/b#4": own,
        "a/b#5": "将 BSHD micro-batches 填充到 mini-batch max seq_len。",  # the title translated: nothing new
        "a/b#6": "",
    }}
    _overlay_daily(ctx, report)
    assert [r["summary"] == rule for r in ctx["top"]] == [True, True, True, False, True, True]
    # the model's own line says what changed; the rules' figure and decision follow it
    assert ctx["top"][3]["summary"] == "；".join([own.rstrip("。"), *rest]) + "。"


def test_a_translated_title_or_a_pasted_prompt_is_not_model_prose():
    """A small model's line for a P0/P1 row must say more than the title: a translated title (few CJK
    characters, no Latin word beyond the title's) leaves the rule text; a Chinese explanation does not.
    A sentence carrying a prompt field label is the prompt pasted back: dropped as filler."""
    from infra_radar.llm.grounding import Grounds, ground_counted
    from infra_radar.llm.render import says_more_than_title

    title = "[hardware] fix: add flops estimation for ascend a2g3 device"
    assert not says_more_than_title("添加 ascend a2g3 设备的 flops 估计", title)
    assert not says_more_than_title("Support dsv4 mtp graph", "[Feature] Support dsv4 mtp graph")
    assert says_more_than_title("为 FLOPS 计数器加入 A2G3 设备名，A2G3 是国际版 Ascend；计数器按运行设备名匹配理论 "
                                "FLOPS 表来估算 MFU。", title)
    assert says_more_than_title("estimate MFU from the device name table", title)  # words beyond the title
    pasted = "ByteDance-Seed/VeOmni#855 [P1/M，已合并] fix: add flops estimation for ascend a2g3 device；位于 `x/`"
    assert not says_more_than_title(pasted, title)  # the prompt's item line pasted back
    grounds = Grounds.of("xlite speculation check with num_speculative_tokens=1", ["a/b#1"], "a/b",
                         names=["xlite support speculation"], lang="zh")
    text = "xlite 的 speculation 检查放宽到 num_speculative_tokens=1。xlite 支持，性能数据（作者报告）：-，处理建议：先验证。"
    kept, dropped = ground_counted(text, grounds)
    assert kept == "xlite 的 speculation 检查放宽到 num_speculative_tokens=1。" and dropped["filler"] == 1
    kept, dropped = ground_counted("修复 xlite speculation，已合并，P1/S。", grounds)
    assert kept == "" and dropped["filler"] == 1  # the item header's priority/grade pasted back
