"""The real-model pass: a few items of the team's 2026-07-02 day and one weekly through a real OpenAI-compatible
server (scripts/model_server.sh, Qwen2.5-Coder 0.5B under llama.cpp), end to end through the CLI.

scripts/test.sh starts the server and sets RADAR_TEST_LLM_URL / RADAR_TEST_LLM_MODEL; without them these tests
are skipped (and say so). Nothing here depends on how fast the model is or on what it writes: the assertions
are transport (replies arrived), a schema-valid reply or a stated fallback for every prompt, the counts
printed, nothing ungrounded in the output, and a rerun that sends nothing.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.llm.grounding import numbers, refs

URL, MODEL = os.environ.get("RADAR_TEST_LLM_URL", ""), os.environ.get("RADAR_TEST_LLM_MODEL", "")
pytestmark = pytest.mark.skipif(not (URL and MODEL), reason="real-model pass: RADAR_TEST_LLM_URL/MODEL not set "
                                                            "(scripts/test.sh starts scripts/model_server.sh)")
FILES = ("ByteDance-Seed+VeOmni.jsonl.gz",)
# the VeOmni part of the team's 2026-07-02 day (its P0/P1 items: one daily prompt, no deep dive) and a VeOmni
# week (one P0/P1 item and the weekly prompt): 3 prompts, a minute or two with the 0.5B on 2 cores
DAY = ("--since", "2026-06-29T02:00Z", "--until", "2026-07-02T02:12Z", "--repo", "ByteDance-Seed/VeOmni")
WEEK = ("--repo", "ByteDance-Seed/VeOmni", "--week", "2026-W25")
SUMMARY = re.compile(r"^llm (\S+): (\d+) request\(s\), (\d+) cached, (\d+) failed, (\d+) sentence\(s\) proposed, "
                     r"(\d+) kept, (\d+) dropped \((\d+) ungrounded, (\d+) filler, (\d+) contradiction, (\d+) language, "
                     r"(\d+) seam\), (\d+) malformed field\(s\)", re.M)


def _slice(src: Path, dest: Path) -> tuple[Path, str]:
    """The repo line and the commits of 2026-06-08..07-05 (read at test time, never committed); and their text."""
    texts = []
    with gzip.open(src, "rt", encoding="utf-8") as fh, open(dest, "w", encoding="utf-8") as out:
        for line in fh:
            rec = json.loads(line)
            when = (rec.get("committed_at") or rec.get("authored_at") or rec.get("date") or "")[:10]
            if rec.get("kind") == "repo" or (rec.get("kind") == "commit" and "2026-06-08" <= when < "2026-07-06"):
                out.write(line)
                texts.append(json.dumps(rec, ensure_ascii=False))
    return dest, "\n".join(texts)


def _unstamped(text: str) -> str:
    """A report without the time it was generated at."""
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "T", text)


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _summary(err: str) -> dict[str, int]:
    m = SUMMARY.search(err)
    assert m, f"no llm summary line on stderr:\n{err}"
    assert m.group(1) == MODEL
    names = ("requests", "cached", "failed", "proposed", "kept", "dropped", "ungrounded", "filler", "contradiction",
             "language", "seam", "malformed")
    return dict(zip(names, map(int, m.groups()[1:]), strict=True))


@pytest.fixture
def home(radar_home: Path, shared_data: Path, tmp_path: Path) -> str:
    radar_home.mkdir(parents=True, exist_ok=True)
    # generous: a loaded 2-core machine may take minutes per prompt; nothing asserts speed
    (radar_home / "radar.toml").write_text(
        f'deep_dive_limit = 0\n[llm]\nbase_url = "{URL}"\nmodel = "{MODEL}"\nmax_concurrency = 2\n'
        'timeout = 600\nrun_deadline = 3600\nmax_tokens = 384\n')
    texts = []
    for i, name in enumerate(FILES):
        path, text = _slice(shared_data / "git" / name, tmp_path / f"slice{i}.jsonl")
        assert _cli("import-jsonl", str(path))[0] == 0
        texts.append(text)
    return "\n".join(texts)


def _check_run(args: tuple[str, ...], source: str, lang: str) -> None:
    code, plain, err = _cli(*args, "--lang", lang, "--no-llm")
    assert code == 0, err
    code, text, err = _cli(*args, "--lang", lang, "--llm")
    assert code == 0, err
    first = _summary(err)
    # transport: the server answered (a reply, valid or not, came back for at least one prompt): a prompt
    # answered, or failures that are all replies the client could not use (never a connection or a timeout)
    fallbacks = [line for line in err.splitlines() if ": rule text kept: " in line]
    replied = all(line.split(": rule text kept: ")[1].startswith("invalid reply") for line in fallbacks)
    assert first["requests"] + first["failed"] >= 1 and (first["requests"] >= 1 or replied), err
    # every prompt has a schema-valid reply or a stated fallback: one explained line per failure
    assert len(fallbacks) == first["failed"] and all(line.split(": rule text kept: ")[1] for line in fallbacks)
    # every sentence a reply proposed was kept or dropped for one reason (a small model's malformed field or
    # reply stands as rule text, counted)
    assert first["dropped"] == sum(first[k] for k in ("ungrounded", "filler", "contradiction", "language", "seam"))
    assert first["proposed"] == first["kept"] + first["dropped"]
    # nothing ungrounded: every number and reference of the output is in the rule output or the imported history
    allowed = numbers(plain) | numbers(source)
    assert numbers(text) <= allowed, sorted(numbers(text) - allowed)[:10]
    repo = args[args.index("--repo") + 1]
    known = refs(plain, repo) | refs(source, repo)
    assert refs(text, repo) <= known
    # a rerun sends nothing: every reply and every failure of this run is cached
    code, again, err2 = _cli(*args, "--lang", lang, "--llm")
    second = _summary(err2)
    assert code == 0 and second["requests"] == 0 and second["cached"] == first["requests"] + first["failed"], err2
    assert _unstamped(again) == _unstamped(text)
    print(f"\n{args[0]} {lang}: {err.strip()}")  # the counts, in the CI log


def test_real_model_daily_of_the_team_day(home: str) -> None:
    _check_run(("daily", *DAY), home, "zh")


def test_real_model_weekly(home: str) -> None:
    _check_run(("weekly", *WEEK), home, "zh")
