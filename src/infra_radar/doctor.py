"""`radar doctor`: what is configured, what is missing, and how to fix each, without printing a secret."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from .config import Settings, load_settings
from .errors import RadarError

OK, MISSING, FAIL, SKIP = "OK", "missing", "FAIL", "skipped"
TOKEN_ENVS = ("GITHUB_TOKEN", "GH_TOKEN")
LLM_URL_ENV, LLM_KEY_ENV = "RADAR_LLM_BASE_URL", "RADAR_LLM_API_KEY"
TIMEOUT = 3.0


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the doctor's table."""

    name: str
    status: str
    detail: str
    fix: str = ""
    required: bool = False

    @property
    def failed(self) -> bool:
        return self.required and self.status in (MISSING, FAIL)


def safe_url(url: str) -> str:
    """Scheme, host and port only: user info, path and query of a URL may carry a credential."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


def check_config(config: Path | None, db: str | None) -> tuple[Check, Settings | None]:
    """Parse radar.toml (unknown keys are errors there too)."""
    try:
        settings = load_settings(config, db)
    except RadarError as exc:
        return Check("config", FAIL, str(exc), "fix the file named above (radar init --force rewrites it)",
                     True), None
    where = str(settings.config_path) if settings.config_path else "no radar.toml, packaged defaults"
    return Check("config", OK, f"{where}; {len(settings.repos)} repositories"), settings


def _store_name(url: str) -> str:
    return url if url.startswith("sqlite") else safe_url(url.replace("+psycopg", ""))


def check_store(settings: Settings) -> Check:
    """Open the store read-only: migrations applied and row counts; never creates or migrates it."""
    from .store.schema import MIGRATIONS, migrations_table

    url = settings.db_url
    name = _store_name(url)
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        if not Path(url.removeprefix("sqlite:///")).expanduser().exists():
            return Check("store", MISSING, f"{name} does not exist", "run `radar init`", True)
    try:
        engine = sa.create_engine(url)
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table(migrations_table.name):
                return Check("store", MISSING, f"{name}: no schema", "run `radar init`", True)
            done = set(conn.execute(sa.select(migrations_table.c.name)).scalars())
            pending = [n for n, _ in MIGRATIONS if n not in done]
            if pending:
                return Check("store", MISSING, f"{name}: migrations not applied: {', '.join(pending)}",
                             "run `radar init` (any command applies them)", True)
            counts = {t: conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar_one()
                      for t in ("repos", "items", "analyses")}
        engine.dispose()
    except ModuleNotFoundError as exc:
        return Check("store", FAIL, f"database driver missing ({exc.name})",
                     "pip install 'infra-radar[postgres]'", True)
    except sa.exc.SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        return Check("store", FAIL, f"{name}: {reason}", "check db_url / RADAR_DB_URL / --db", True)
    detail = ", ".join(f"{v} {k}" for k, v in counts.items())
    return Check("store", OK, f"{name}; {len(MIGRATIONS)} migrations applied; {detail}")


def check_git() -> Check:
    """git on PATH (needed by import-git only)."""
    exe = shutil.which("git")
    if not exe:
        return Check("git", MISSING, "git is not on PATH", "install git (apt-get install git) for import-git")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=TIMEOUT).stdout.strip()
    return Check("git", OK, version)


def check_token(env: dict[str, str]) -> Check:
    """Whether a GitHub token is set; its value is never read beyond non-emptiness."""
    for var in TOKEN_ENVS:
        if env.get(var):
            return Check("github token", OK, f"{var} is set")
    return Check("github token", MISSING, "neither GITHUB_TOKEN nor GH_TOKEN is set",
                 "export GITHUB_TOKEN=... (needed by fetch; imports work without)")


def reachable(url: str, timeout: float = TIMEOUT) -> str | None:
    """None when a TCP connection to the URL's host and port opens within `timeout`, else the reason."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "invalid port"
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def check_llm(env: dict[str, str], network: bool) -> Check:
    """The optional LLM endpoint: set, and reachable within 3 s."""
    url = env.get(LLM_URL_ENV, "")
    if not url:
        return Check("llm", SKIP, f"{LLM_URL_ENV} not set (optional; rules work without it)",
                     f"export {LLM_URL_ENV}=https://... and {LLM_KEY_ENV}=...")
    key = "key set" if env.get(LLM_KEY_ENV) else f"{LLM_KEY_ENV} not set"
    if not network:
        return Check("llm", OK, f"{safe_url(url)}; {key}; reachability not checked")
    reason = reachable(url)
    if reason:
        return Check("llm", FAIL, f"{safe_url(url)} unreachable: {reason}", f"check {LLM_URL_ENV} and the network")
    return Check("llm", OK, f"{safe_url(url)} reachable; {key}")


def check_webhooks(env: dict[str, str], network: bool) -> list[Check]:
    """One line per chat platform: webhook set (its URL is a credential: only the host is shown)."""
    from .publish.push import load_limits

    checks = []
    for platform, conf in load_limits().items():
        if not isinstance(conf, dict) or "webhook_env" not in conf:
            continue
        url, var = env.get(conf["webhook_env"], ""), conf["webhook_env"]
        if not url:
            checks.append(Check(f"push {platform}", SKIP, f"{var} not set (optional)", f"export {var}=<webhook URL>"))
            continue
        secret_env = conf.get("secret_env")
        extra = f"; {secret_env} {'set' if env.get(secret_env) else 'not set'}" if secret_env else ""
        reason = reachable(url) if network else None
        if reason:
            checks.append(Check(f"push {platform}", FAIL, f"{safe_url(url)} unreachable: {reason}",
                                f"check {var} and the network"))
        else:
            checks.append(Check(f"push {platform}", OK, f"{safe_url(url)}{extra}"))
    return checks


def run_checks(config: Path | None, db: str | None, env: dict[str, str] | None = None,
               network: bool = True) -> list[Check]:
    """Every check, in table order."""
    env = dict(os.environ) if env is None else env
    config_check, settings = check_config(config, db)
    checks = [config_check]
    if settings is not None:
        checks.append(check_store(settings))
    else:
        checks.append(Check("store", SKIP, "config must load first", "fix the config", True))
    checks += [check_git(), check_token(env), check_llm(env, network), *check_webhooks(env, network)]
    return checks


def format_table(checks: list[Check]) -> str:
    """A plain aligned table: check, status, detail, and how to fix what is not OK."""
    rows = [("check", "status", "detail", "fix")]
    rows += [(c.name, c.status, c.detail, "" if c.status == OK else c.fix) for c in checks]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r[:3], widths, strict=True)) + "  " + r[3] for r in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"
