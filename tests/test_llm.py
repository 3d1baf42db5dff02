"""The optional LLM stage against a local OpenAI-compatible stand-in: client faults, grounding, cache, reports."""

from __future__ import annotations

import gzip
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra_radar.analyse.grounding import Grounds, ground, language_ok, normalise, numbers, refs
from infra_radar.analyse.llm import LlmClient, LlmConfig, LlmError, Request, parse_reply
from infra_radar.config import Settings, load_settings
from infra_radar.errors import ConfigError
from infra_radar.llm_stage import apply_llm, llm_config, load_prompt, render_messages
from infra_radar.models import AnalysedItem, Analysis, FileChange, Item, PerfClaim
from infra_radar.pipeline import import_jsonl, open_store, weekly
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


def test_timeout_is_retried(stub):
    stub.script.append(("slow", 0.6))
    reply = client(stub, timeout=0.2).complete(request())
    assert reply.data and len(stub.requests) == 2


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

@pytest.mark.parametrize("name", ["item", "weekly"])
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
    assert "Fuse rope" in prose["summary"] and INVENTED_NUMBER not in prose["summary"]
    assert prose["mechanism"] == "The change reworks the affected module."  # the sentence citing #9999999 went
    assert run.dropped == 2 and run.requests == 1 and run.cached == 0
    again = apply_llm(settings, engine, [_item()], "en", config=config)
    assert len(stub.requests) == 1 and again.cached == 1 and again.prose == run.prose


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
    assert marker in text and ("该变更涉及" if lang == "zh" else "This change covers") in text
    assert INVENTED_NUMBER not in text and INVENTED_REF not in text and report.llm.dropped >= sent
    assert KEY not in text and KEY not in report.path.read_text() and KEY not in report.llm.line()
    listed = set(re.findall(r"#(\d+)", plain))
    assert set(re.findall(r"#(\d+)", text)) <= listed


# --- the CLI ---------------------------------------------------------------------------------------

def test_cli_llm_flags_dry_run_and_cache(monkeypatch):
    from click.testing import CliRunner

    from infra_radar.cli import main
    from infra_radar.pipeline import sample_files

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
        assert code == 0 and "=== weekly v1 report ===" in out and not server.requests
        code, out, err = invoke(*week)
        assert code == 0 and "The period merged" in out and "request(s)" in err and server.requests
        sent = len(server.requests)
        code, out2, err = invoke(*week)
        assert out2 == out and len(server.requests) == sent and "0 request(s)" in err
        assert KEY not in out + err
