"""Marker secrets in the environment never show up in output, logs, exceptions, written files or the store."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.config import load_settings
from infra_radar.pipeline.demo import sample_files

from .github_stub import GitHubStub, load_repos

TOKEN = "ghp_SECRETMARKERtoken0000000000000000001"
LLM_KEY = "sk-SECRETMARKERllm00000000000000000002"
HOOK_PATH = "SECRETMARKERhook000003"
HOOK_SECRET = "SECRETMARKERsign000004"
MARKERS = [TOKEN, LLM_KEY, HOOK_PATH, HOOK_SECRET]


@pytest.fixture
def secret_env(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    monkeypatch.setenv("RADAR_LLM_API_KEY", LLM_KEY)
    for platform in ("FEISHU", "SLACK", "WECOM", "DINGTALK"):
        monkeypatch.setenv(f"RADAR_{platform}_WEBHOOK", f"https://hooks.example.invalid/{platform}/{HOOK_PATH}")
    for platform in ("FEISHU", "DINGTALK"):
        monkeypatch.setenv(f"RADAR_{platform}_SECRET", HOOK_SECRET)


def leaks(data: bytes | str) -> list[str]:
    """The markers (or their first 12 characters) found in `data`."""
    text = data.decode("latin-1") if isinstance(data, bytes) else data
    return [m for m in MARKERS if m in text or m[:12] in text]


def store_dump() -> str:
    """Every row of every table of the store (SQLite or PostgreSQL), as text."""
    engine = sa.create_engine(load_settings().db_url)
    with engine.connect() as conn:
        tables = sa.inspect(conn).get_table_names()
        assert "items" in tables
        rows = [repr(row) for t in tables for row in conn.execute(sa.text(f'SELECT * FROM "{t}"'))]
    engine.dispose()
    assert len(rows) > 100
    return "\n".join(rows)


def test_main_commands_never_leak_a_secret(tmp_path, secret_env, radar_home, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    out, site = tmp_path / "out", tmp_path / "site"
    outputs: list[str] = []

    def run(*args: str, ok: bool = True) -> None:
        result = CliRunner().invoke(main, list(args))
        outputs.extend([result.stdout, result.stderr, repr(result.exception)])
        if ok:
            assert result.exit_code == 0, (args, result.stderr)

    with GitHubStub(load_repos("acme/infer", "acme/infer-npu"), token=TOKEN) as stub:
        monkeypatch.setenv("GITHUB_API_URL", stub.url)
        run("init")
        for repo in ("acme/infer", "acme/infer-npu", "acme/trainer"):  # the list radar init wrote is the reports'
            run("repo", "add", repo)
        run("import-jsonl", *map(str, sample_files()))
        run("fetch", "--repo", "acme/infer", "--repo", "acme/infer-npu", "--since", "2026-07-29", "--stats")
        run("analyze")
        run("daily", "--since", "2026-08-02", "--until", "2026-08-04", "--out", str(out))
        run("weekly", "--repo", "acme/infer", "--week", "2026-W31", "--out", str(out))
        run("show", "acme/infer-npu#814")
        run("show", "acme/infer-npu#814", "--json")
        run("export")
        run("site", "build", str(site))
        for platform in ("feishu", "slack", "wecom", "dingtalk"):
            run("push", "daily", "--to", platform, "--dry-run")
            run("push", "weekly", "--to", platform, "--dry-run", "--repo", "acme/infer")
        run("doctor", "--offline", ok=False)
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN + "WRONG")  # a refused token: the error must not echo it
        monkeypatch.delenv("GH_TOKEN")
        run("fetch", "--repo", "acme/infer", "--since", "2026-07-29", ok=False)
        assert any(r.headers.get("authorization", "").endswith(TOKEN) for r in stub.requests)  # it was used

    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".html" for p in written) and len(written) > 20
    assert not leaks(store_dump()), "a secret is in the store"
    found = {str(p): leaks(p.read_bytes()) for p in written}
    assert not {k: v for k, v in found.items() if v}
    assert not leaks("\n".join(outputs)), [o for o in outputs if leaks(o)]
    assert not leaks(caplog.text)


def test_doctor_reports_presence_not_values(secret_env):
    result = CliRunner().invoke(main, ["doctor", "--offline"])
    assert "GITHUB_TOKEN is set" in result.stdout and "hooks.example.invalid" in result.stdout
    assert not leaks(result.stdout + result.stderr)
