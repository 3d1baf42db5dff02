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
from .errors import RadarError, few

OK, MISSING, FAIL, SKIP = "OK", "missing", "FAIL", "skipped"
TOKEN_ENVS = ("GITHUB_TOKEN", "GH_TOKEN")
LLM_URL_ENV, LLM_KEY_ENV = "RADAR_LLM_BASE_URL", "RADAR_LLM_API_KEY"
TIMEOUT = 3.0  # seconds a probe waits; RADAR_DOCTOR_TIMEOUT changes it (a slow link, a loaded machine)


def probe_timeout() -> float:
    """The probe timeout: RADAR_DOCTOR_TIMEOUT when it is a number of seconds in (0, 600], else TIMEOUT."""
    try:
        value = float(os.environ.get("RADAR_DOCTOR_TIMEOUT", TIMEOUT))
    except ValueError:
        return TIMEOUT
    return value if 0 < value <= 600 else TIMEOUT


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
    from .store.schema import MIGRATIONS, migrations_table, newer_message, newer_migrations

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
            unknown = newer_migrations(done)
            if unknown:
                return Check("store", FAIL, newer_message(name, unknown),
                             "upgrade infra-radar to the version that wrote the store (this one only reads it)", True)
            pending = [n for n, _ in MIGRATIONS if n not in done]
            if pending:
                return Check("store", MISSING, f"{name}: migrations not applied: {', '.join(pending)}",
                             "run `radar init` (any command applies them)", True)
            counts = {t: conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar_one()
                      for t in ("repos", "items", "analyses")}
            problem = integrity_problem(conn)
        engine.dispose()
    except ModuleNotFoundError as exc:
        return Check("store", FAIL, f"database driver missing ({exc.name})",
                     "pip install 'infra-radar[postgres]'", True)
    except sa.exc.SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        if any(word in reason.lower() for word in ("malformed", "corrupt", "not a database", "invalid page")):
            return Check("store", FAIL, f"{name}: the database is damaged: {reason}",
                         _REPAIR.get(url.split(":")[0].split("+")[0], _REPAIR["postgresql"]), True)
        return Check("store", FAIL, f"{name}: {reason}", "check db_url / RADAR_DB_URL / --db", True)
    if problem:
        return Check("store", FAIL, f"{name}: the database's own integrity check failed: {problem}",
                     _REPAIR.get(engine.dialect.name, _REPAIR["postgresql"]), True)
    detail = ", ".join(f"{v} {k}" for k, v in counts.items())
    check = "integrity_check ok" if engine.dialect.name == "sqlite" else "catalog and tables readable"
    return Check("store", OK, f"{name}; {len(MIGRATIONS)} migrations applied; {detail}; {check}")


_REPAIR = {
    "sqlite": "stop every radar process, keep a copy of the file, then rebuild it: `sqlite3 radar.db .recover | "
              "sqlite3 new.db` and point db_url at new.db, or re-import the history into a fresh store",
    "postgresql": "stop every radar process and ask the database administrator to check the server (REINDEX, "
                  "amcheck, a restore from backup); or re-import the history into a fresh schema",
}


def integrity_problem(conn, limit: int = 5) -> str:
    """"" when the database's own check finds nothing wrong, else its first findings in one line.

    SQLite: `PRAGMA integrity_check` (b-trees, indexes against their tables, constraints). PostgreSQL has no
    such pragma: every table of the schema is in the catalog (pg_class, pg_namespace), and each of them, the
    migrations table included, reads to its end (a damaged page fails the read)."""
    from .store.schema import metadata, migrations_table

    try:
        if conn.dialect.name == "sqlite":
            found = [str(row[0]) for row in conn.execute(sa.text(f"PRAGMA integrity_check({limit})"))]
            return "" if found == ["ok"] else "; ".join(" ".join(f.split()) for f in found)[:600]
        wanted = sorted([*metadata.tables, migrations_table.name])
        present = set(conn.execute(sa.text(
            "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')")).scalars())
        missing = [t for t in wanted if t not in present]
        if missing:
            return f"table(s) missing from the catalog: {few(missing)}"
        for table in wanted:
            conn.execute(sa.text(f'SELECT count(*) FROM "{table}"')).scalar_one()
        return ""
    except sa.exc.DBAPIError as exc:
        return " ".join(str(getattr(exc, "orig", exc)).split())[:300]


def check_repos(settings: Settings) -> Check:
    """The configured repositories against what the store holds: each one with no data named (and how to bring
    it in), and the stored ones radar.toml no longer lists."""
    try:
        engine = sa.create_engine(settings.db_url)
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT repos.name, COUNT(items.id) FROM repos LEFT JOIN items "
                                        "ON items.repo_id = repos.id GROUP BY repos.name")).all()
        engine.dispose()
    except (ModuleNotFoundError, sa.exc.SQLAlchemyError):
        return Check("repos", SKIP, "the store could not be read", "see the store line")
    held = {name.lower(): (name, int(count)) for name, count in rows}
    empty = [r.name for r in settings.repos if held.get(r.name.lower(), ("", 0))[1] == 0]
    configured = {r.name.lower() for r in settings.repos}
    extra = sorted(name for key, (name, count) in held.items() if key not in configured and count)
    where = "radar.toml" if settings.config_path else "the packaged list"
    detail = f"{len(settings.repos)} configured ({where}), {len(settings.repos) - len(empty)} with data"
    if empty:
        detail += f"; no data: {few(empty, most=len(empty))}"
    if extra:
        detail += f"; stored but not configured: {few(extra)}"
    fix = ""
    if empty:
        one = empty[0] if len(empty) == 1 else "OWNER/NAME"
        fix = f"radar fetch --repo {one} (GitHub), or radar import-git CLONE --repo {one} (a local clone)"
    return Check("repos", MISSING if empty else OK, detail, fix)


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


def reachable(url: str, timeout: float | None = None) -> str | None:
    """None when a TCP connection to the URL's host and port opens within `timeout`, else the reason."""
    timeout = probe_timeout() if timeout is None else timeout
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


def _failure(exc: BaseException) -> str:
    """Why a request failed, from the OS error underneath (never the URL, which may carry a credential)."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {probe_timeout():g}s"
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.strerror:
            return seen.strerror
        seen = seen.__cause__ or seen.__context__
    return type(exc).__name__


def probe_models(base_url: str, key: str, timeout: float | None = None) -> tuple[int | None, list[str], str]:
    """GET {base_url}/models once: (status or None, model ids served, why it failed)."""
    timeout = probe_timeout() if timeout is None else timeout
    import httpx

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None, [], "not an http(s) URL"
        loopback = parts.hostname in ("localhost", "127.0.0.1", "::1")
        # proxies from the environment, as the model client uses them; a loopback server directly
        with httpx.Client(timeout=timeout, verify=parts.scheme == "https", trust_env=not loopback) as http:
            response = http.get(base_url.rstrip("/") + "/models", headers=headers)
    except httpx.HTTPError as exc:
        return None, [], _failure(exc)
    except (httpx.InvalidURL, ValueError):
        return None, [], "invalid URL"
    try:
        data = response.json().get("data") if response.status_code == 200 else None
    except (ValueError, AttributeError):
        data = None
    ids = [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id")] if isinstance(data, list) else []
    return response.status_code, ids, ""


MODEL_SERVER_PORTS = {8765: "0.5b", 8766: "1.5b"}  # scripts/model_server.sh's default ports by model size


def local_model_server(env: dict[str, str]) -> str:
    """`scripts/model_server.sh` servers running on this machine (by their pid files), e.g. "0.5b on :8765"."""
    run = Path(env.get("RADAR_MODEL_CACHE") or Path.home() / ".cache" / "infra-radar") / "run"
    found = []
    for pidfile in sorted(run.glob("server-*.pid")) if run.is_dir() else []:
        try:
            os.kill(int(pidfile.read_text().strip()), 0)
        except (OSError, ValueError):
            continue
        size = pidfile.stem.removeprefix("server-")
        port = next((p for p, s in MODEL_SERVER_PORTS.items() if s == size), None)
        found.append(f"{size}" + (f" on :{port}" if port else ""))
    return ", ".join(found)


def check_llm(settings: Settings | None, env: dict[str, str], network: bool) -> Check:
    """The optional LLM endpoint as the stage resolves it (radar.toml [llm], RADAR_LLM_* overrides): set, key
    present (by variable name), and answering GET {base_url}/models within 3 s."""
    from .llm.stage import llm_endpoint

    try:
        point = llm_endpoint(settings, env)
    except RadarError as exc:
        return Check("llm", FAIL, str(exc), "fix the [llm] table of radar.toml")
    local = local_model_server(env)
    if not point.base_url:
        hint = (f"a local model server runs ({local}): eval \"$(scripts/model_server.sh start)\" sets both"
                if local else "set [llm] base_url and model in radar.toml (or RADAR_LLM_BASE_URL / RADAR_LLM_MODEL)")
        return Check("llm", SKIP, f"no [llm] base_url in radar.toml and {LLM_URL_ENV} not set "
                                  "(optional; rules work without it)", hint)
    where = f"{safe_url(point.base_url)} (from {point.base_from})"
    parts = urllib.parse.urlsplit(point.base_url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.hostname in ("127.0.0.1", "localhost") and port in MODEL_SERVER_PORTS and local:
        where += f", scripts/model_server.sh {MODEL_SERVER_PORTS[port]}"
    model = f"model {point.model}" if point.model else "no model set"
    key_value = env.get(point.key_env, "") if point.key_env else ""
    key = (f"key: {point.key_env} {'set' if key_value else 'not set'}" if point.key_env else "no key configured")
    facts = f"{model}; {key}"
    if not network:
        return Check("llm", OK if point.model else MISSING, f"{where}; {facts}; reachability not checked",
                     "set [llm] model in radar.toml (or RADAR_LLM_MODEL)")
    status, served, reason = probe_models(point.base_url, key_value)
    if status is None and reason.startswith("no answer") and reachable(point.base_url) is None:
        # the port accepts connections but the server is busy generating (llama.cpp answers between tokens)
        return Check("llm", OK if point.model else MISSING,
                     f"{where} reachable but busy (GET /models unanswered within {probe_timeout():g}s); {facts}",
                     "set [llm] model in radar.toml (or RADAR_LLM_MODEL)")
    if status is None:
        return Check("llm", FAIL, f"{where} unreachable: {reason}; {facts}",
                     "check [llm] base_url (or RADAR_LLM_BASE_URL) and that the server runs")
    if status in (401, 403):
        return Check("llm", FAIL, f"{where} refused GET /models (HTTP {status}): key missing or rejected; {facts}",
                     f"set the key in {point.key_env or 'the variable [llm] api_key_env names'}")
    if not point.model:
        return Check("llm", MISSING, f"{where} reachable; {facts}", "set [llm] model in radar.toml (or RADAR_LLM_MODEL)")
    if served and point.model not in served:
        shown = few(served)
        return Check("llm", FAIL, f"{where} reachable but does not serve {point.model} (it serves {shown}); {key}",
                     "set [llm] model to one the server lists")
    answered = "model listed" if served else f"GET /models answered HTTP {status}"
    return Check("llm", OK, f"{where} reachable ({answered}); {facts}")


def check_webhooks(env: dict[str, str], network: bool) -> list[Check]:
    """One line per chat platform: webhook set (its URL is a credential: only the host is shown)."""
    from .publish.digest import load_limits

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
        if checks[-1].status == OK:
            checks.append(check_repos(settings))
    else:
        checks.append(Check("store", SKIP, "config must load first", "fix the config", True))
    checks += [check_git(), check_token(env), check_llm(settings, env, network), *check_webhooks(env, network)]
    return checks


def format_table(checks: list[Check], width: int | None = None) -> str:
    """A plain aligned table: check, status, detail, and how to fix what is not OK. With `width` (a terminal's
    columns) the detail and the fix wrap under the detail column and every line fits; without it each check is
    one line, for grep and scripts."""
    import textwrap

    rows = [("check", "status", "detail", "fix")]
    rows += [(c.name, c.status, c.detail, "" if c.status == OK else c.fix) for c in checks]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    if width is None:
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(r[:3], widths, strict=True)) + "  " + r[3] for r in rows]
        return "\n".join(line.rstrip() for line in lines) + "\n"
    indent = widths[0] + widths[1] + 4
    room = max(20, width - indent)
    lines = []
    for name, status, detail, fix in rows[:1] + rows[1:]:
        head = f"{name.ljust(widths[0])}  {status.ljust(widths[1])}  "
        text = textwrap.wrap(detail, room, break_on_hyphens=False) or [""]
        if fix and name != "check":
            text += textwrap.wrap(f"fix: {fix}", room, break_on_hyphens=False)
        lines.append(head + text[0])
        lines += [" " * indent + more for more in text[1:]]
    return "\n".join(line.rstrip() for line in lines) + "\n"
