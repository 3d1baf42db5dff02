"""One Settings object: packaged defaults < radar.toml < environment < flags, loaded once.

Secrets never live here; they are read from the environment where they are used.
"""

from __future__ import annotations

import errno
import math
import os
from dataclasses import dataclass, field
from fnmatch import fnmatch
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .guard import files as safe_read
from .models import repo_problem

DEFAULTS = resources.files("infra_radar") / "defaults"
CONFIG_NAME = "radar.toml"
_TOP_KEYS = {
    "lang", "db_url", "out_dir", "target", "deep_dive_limit", "first_lookback_hours",
    "weekly_key_prs", "short_p2_limit", "top_table_limit", "short_table_limit", "downstream_limit", "rules_dir", "focus", "repos", "llm", "lock_timeout",
    "carry_days", "open_lookback_days",
    "clock_skew", "long_window_days",
}
_REPO_KEYS = {"name", "branches", "core_paths", "role"}
ROLES = ("upstream", "downstream")
LANGS = ("zh", "en")


@dataclass(slots=True)
class RepoSettings:
    """One watched repository."""

    name: str
    branches: list[str] = field(default_factory=lambda: ["main"])
    core_paths: list[str] = field(default_factory=list)
    # upstream: a project the team follows (the daily radar's tables); downstream: the team's own target
    # repository (e.g. vLLM-Ascend for Ascend), reported apart as what landed there
    role: str = "upstream"

    def is_core(self, path: str) -> bool:
        return any(fnmatch(path, pattern) for pattern in self.core_paths)


@dataclass(slots=True)
class Settings:
    """Everything a run needs to know, passed explicitly to every stage."""

    home: Path
    db_url: str
    lang: str = "zh"
    out_dir: Path = Path("radar-out")
    target: str = "ascend"
    deep_dive_limit: int = 3
    first_lookback_hours: int = 72
    weekly_key_prs: int = 8
    short_p2_limit: int = 2
    top_table_limit: int = 8
    short_table_limit: int = 30
    downstream_limit: int = 4
    rules_dir: Path | None = None
    focus: list[str] = field(default_factory=list)
    focus_weights: dict[str, float] = field(default_factory=dict)
    repos: list[RepoSettings] = field(default_factory=list)
    config_path: Path | None = None
    lock_timeout: float = 600.0  # seconds a writing command waits for another writer of the store
    carry_days: int = 14  # days the daily radar carries an item on from the radar that began carrying it
    repos_listed: bool = False  # radar.toml lists its own [[repos]]: the reports cover those only
    long_window_days: float = 7  # a daily window longer than this is said before it is written (--since)
    open_lookback_days: int = 21  # a first radar lists items opened this many days before it and open at its start
    clock_skew: float = 600.0  # seconds a record's date may lie ahead of the clock and still count as now

    def repo(self, name: str) -> RepoSettings:
        """The settings of repository `name` (a bare entry when it is not configured)."""
        for repo in self.repos:
            if repo.name.lower() == name.lower():
                return repo
        return RepoSettings(name=name)

    def downstream(self) -> list[str]:
        """The repositories configured as downstream (the team's own target repositories); others are upstream."""
        return [r.name for r in self.repos if r.role == "downstream"]


def home_dir() -> Path:
    """The home directory: $RADAR_HOME, else ~/.infra-radar."""
    return Path(os.environ.get("RADAR_HOME") or Path.home() / ".infra-radar").expanduser()


def default_config_text() -> str:
    """The packaged radar.toml, with every option and a comment for each."""
    return (DEFAULTS / CONFIG_NAME).read_text(encoding="utf-8")


MAX_CONFIG_BYTES = safe_read.CONFIG_BYTES  # radar.toml: a configuration, not a data file
MAX_RULES_BYTES = safe_read.RULES_BYTES  # a rules file of the user's rules_dir
MAX_LIST = 10_000  # entries of any list of the configuration (repos, branches, core_paths, [focus] topics, weights)


def _read_toml(path: Path, most: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """The TOML file `path`: a regular file of at most `most` bytes (a device such as /dev/zero, a FIFO or a
    folder is refused, never read without end nor waited on; guard/files.py)."""
    hint = "a configuration file is a few KiB" if most == MAX_CONFIG_BYTES else "a rules file is a few KiB"
    return safe_read.read_toml(path, most, ConfigError, f"{path}: larger than {most >> 20} MiB; {hint}")


def _capped(value: list | dict, key: str, where: str, most: int = MAX_LIST) -> None:
    """ConfigError naming `key` when the list or table `value` has more than `most` entries (every report
    would pay for each of them)."""
    if len(value) > most:
        raise ConfigError(f"{where}: {key} has {len(value):,} entries; at most {most:,} are read")


def _check_keys(data: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")


def _merge(base: dict[str, Any], user: dict[str, Any], where: str) -> dict[str, Any]:
    _check_keys(user, _TOP_KEYS, where)
    merged = dict(base)
    for key, value in user.items():
        if key == "focus" and isinstance(value, dict):
            merged["focus"] = {**base.get("focus", {}), **value}
        else:
            merged[key] = value
    return merged


def _repos(raw: Any, where: str) -> list[RepoSettings]:
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: [[repos]] must be an array of tables")
    _capped(raw, "[[repos]]", where)
    repos = []
    for entry in raw:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ConfigError(f"{where}: every [[repos]] entry needs a name = \"OWNER/NAME\" string")
        _check_keys(entry, _REPO_KEYS, f"{where} [[repos]] {entry.get('name')}")
        if repo_problem(entry["name"]):
            raise ConfigError(f"{where}: repository name {entry['name'][:80]!r} is {repo_problem(entry['name'])}")
        here = f"{where} [[repos]] {entry['name']}"
        role = entry.get("role", "upstream")
        if role not in ROLES:
            raise ConfigError(f"{here}: role must be one of {', '.join(ROLES)}, not {role!r:.40}")
        repos.append(RepoSettings(entry["name"], _strings(entry.get("branches", ["main"]), "branches", here),
                                  _strings(entry.get("core_paths", []), "core_paths", here), role))
    return repos


def _strings(value: Any, key: str, where: str) -> list[str]:
    """A list of strings (a lone string is not read as its characters)."""
    if isinstance(value, list):
        _capped(value, key, where)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be a list of strings, e.g. {key} = [\"main\"], not {value!r:.60}")
    return list(value)


def _number(value: Any, key: str, where: str, low: float, high: float, whole: bool = False) -> float:
    """A finite number in [low, high] (an integer when `whole`), else ConfigError naming `key` and `where`."""
    kind = "a whole number" if whole else "a number"
    raw = value
    if isinstance(value, str) and where.startswith("environment"):
        try:
            value = float(value)
        except ValueError:
            pass
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not low <= value <= high or (whole and value != int(value)):
        raise ConfigError(f"{where}: {key} must be {kind} from {low:g} to {high:g}, not {raw!r:.40}")
    return int(value) if whole else float(value)


def number(value: Any, key: str, where: str, low: float, high: float, whole: bool = False) -> float:
    """A setting checked by name: a finite number in [low, high] (whole when `whole`), else one ConfigError
    naming `key` and `where` ("environment variable" reads strings)."""
    return _number(value, key, where, low, high, whole)


# The [llm] table's numbers (radar.toml and RADAR_LLM_*): name -> (low, high, whole)
LLM_NUMBERS = {
    "timeout": (0.001, 3600, False),  # seconds per request
    "max_concurrency": (1, 256, True),
    "token_budget": (0, 10**12, True),  # per run; 0 = unlimited
    "run_deadline": (0, 86400, False),  # seconds; 0 = none
    "max_reply_bytes": (1024, 1 << 30, True),
}


def _env_number(name: str, low: float, high: float, whole: bool = False) -> float | None:
    """The environment variable `name` as a checked number, None when unset."""
    raw = os.environ.get(name, "").strip()
    return _number(raw, name, "environment variable", low, high, whole) if raw else None


ENV_NUMBERS = {  # name: (low, high, whole): numbers read from the environment, checked before any command runs
    "RADAR_LOCK_TIMEOUT": (0, math.inf, False),
    "RADAR_SAVE_BATCH": (1, 1_000_000, True),
    "RADAR_FETCH_PAGE_SIZE": (1, 100, True),
    "RADAR_FETCH_TIMEOUT": (0.001, 1e6, False),
    "RADAR_FETCH_TOTAL_TIMEOUT": (0.001, 1e6, False),
    "RADAR_FETCH_MAX_BYTES": (1, 1 << 40, True),
    "RADAR_FETCH_RETRIES": (0, 100, True),
    "RADAR_MAX_LINE_BYTES": (1024, 1 << 31, True),  # the longest history-export line read (sources/jsonl.py)
    "RADAR_MAX_PAGE_BYTES": (1024, 1 << 31, True),  # the largest saved page read (sources/page.py)
    "RADAR_PIPE_WAIT": (0.001, 86400, False),
    "RADAR_SITE_WORKERS": (1, 64, True),  # processes rendering the site's pages (publish/build.py)  # seconds a pipe given as a file may stay silent (guard/files.py)
    "RADAR_LLM_TIMEOUT": LLM_NUMBERS["timeout"],
    "RADAR_LLM_CONCURRENCY": LLM_NUMBERS["max_concurrency"],
}


def check_env() -> None:
    """ConfigError naming the first RADAR_* environment variable that is not UTF-8 text (its value is not
    shown), or the first numeric one that is not a number in range."""
    for name, value in sorted(os.environ.items()):
        if name.startswith("RADAR_"):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ConfigError(f"environment variable {name} is not UTF-8 text: set it again in UTF-8") from None
    for name, (low, high, whole) in ENV_NUMBERS.items():
        _env_number(name, low, high, whole)


def flag(name: str) -> bool:
    """A yes/no environment variable: unset, empty, 0, false, no and off (any case) mean no; anything else yes."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def _check_db_url(url: str, origin: str) -> str:
    """`url` when it reads as a database URL (SCHEME://..., a well-formed host and port); else ConfigError naming
    where it came from (the value is not shown: it may hold a password)."""
    import re
    import urllib.parse

    problem = ""
    if not re.match(r"[A-Za-z][\w+.-]*://", url):
        problem = "it does not start with SCHEME:// (sqlite:///PATH or postgresql+psycopg://...)"
    else:
        try:
            urllib.parse.urlsplit(url).port  # noqa: B018 - raises ValueError on a bad host or port
        except ValueError as exc:
            problem = f"its host or port cannot be read ({str(exc)[:60]})"
    if problem:
        raise ConfigError(f"{origin}: not a database URL: {problem} (the value is not shown)")
    return url


def _names(repos) -> set[str]:
    """The lower-cased names of a [[repos]] list as read (entries without a name are left to the loader)."""
    if not isinstance(repos, list):
        return set()
    return {str(r.get("name", "")).lower() for r in repos if isinstance(r, dict)}


def load_settings(config: Path | None = None, db_url: str | None = None, lang: str | None = None) -> Settings:
    """Load settings: packaged defaults, then the config file, then env, then explicit flags."""
    home = home_dir()
    from .toml_cache import loads  # the packaged defaults as last parsed, when they have not changed

    data = loads(default_config_text())
    path = config or (home / CONFIG_NAME)
    if config is None and path.is_symlink() and not path.exists():  # a dangling link: never silently skipped
        try:
            os.stat(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ConfigError(f"{path}: {safe_read.problem(exc)}") from None
        raise ConfigError(f"{path} is a symbolic link to {os.readlink(path)}, which does not exist: fix the link "
                          "or remove it")
    listed = False  # whether the user's file lists its own [[repos]] (not the packaged example)
    if config is not None or path.exists():
        user = _read_toml(path)
        # a radar.toml that lists [[repos]] (as `radar init` writes it, or edited) is the user's choice: the reports
        # cover those; only with no list of the user's (no file, or a file without one) is every stored one reported
        listed = isinstance(user, dict) and "repos" in user
        data = _merge(data, user, str(path))
    where = str(path)
    origin = "--lang" if lang else "environment variable RADAR_LANG" if os.environ.get("RADAR_LANG") else where
    lang = lang or os.environ.get("RADAR_LANG") or data.get("lang", "zh")
    if lang not in LANGS:
        raise ConfigError(f"{origin}: lang must be one of {', '.join(LANGS)}, not {lang!r:.40}")
    url_origin = "--db" if db_url else "environment variable RADAR_DB_URL" if os.environ.get("RADAR_DB_URL") \
        else f"{where}: db_url" if data.get("db_url") else ""
    url = db_url or os.environ.get("RADAR_DB_URL") or data.get("db_url") or f"sqlite:///{home / 'radar.db'}"
    if url_origin:
        if not isinstance(url, str):
            raise ConfigError(f"{url_origin} must be a string, e.g. db_url = \"sqlite:///radar.db\"")
        _check_db_url(url, url_origin)
    focus = data.get("focus", {})
    if not isinstance(focus, dict) or not isinstance(focus.get("weights", {}), dict):
        raise ConfigError(f"{where}: [focus] must be a table: topics = [...], weights = {{topic = 1.5}}")
    _capped(focus.get("weights", {}), "[focus] weights", where)
    env_lock = _env_number("RADAR_LOCK_TIMEOUT", 0, math.inf)
    _env_number("RADAR_SAVE_BATCH", 1, 1_000_000, whole=True)  # read by the store; checked here, named here
    try:
        settings = Settings(
            home=home, db_url=url, lang=lang, out_dir=Path(data.get("out_dir") or "radar-out"),
            target=str(data.get("target", "ascend")),
            deep_dive_limit=_number(data.get("deep_dive_limit", 3), "deep_dive_limit", where, 0, 10_000, True),
            first_lookback_hours=_number(data.get("first_lookback_hours", 72), "first_lookback_hours", where,
                                         0, 24 * 365 * 20, True),
            weekly_key_prs=_number(data.get("weekly_key_prs", 8), "weekly_key_prs", where, 0, 10_000, True),
            short_p2_limit=_number(data.get("short_p2_limit", 2), "short_p2_limit", where, 0, 10_000, True),
            top_table_limit=_number(data.get("top_table_limit", 8), "top_table_limit", where, 0, 10_000, True),
            short_table_limit=_number(data.get("short_table_limit", 30), "short_table_limit", where, 0, 10_000, True),
            downstream_limit=_number(data.get("downstream_limit", 4), "downstream_limit", where, 0, 10_000, True),
            rules_dir=Path(data["rules_dir"]).expanduser() if data.get("rules_dir") else None,
            focus=_strings(focus.get("topics", []), "[focus] topics", where),
            focus_weights={k: _number(v, f"[focus] weights.{k}", where, -1e6, 1e6)
                           for k, v in focus.get("weights", {}).items()},
            repos=_repos(data.get("repos", []), where),
            config_path=path if path.exists() else None,
            lock_timeout=env_lock if env_lock is not None else _number(
                data.get("lock_timeout", 600), "lock_timeout", where, 0, math.inf),
            carry_days=_number(data.get("carry_days", 14), "carry_days", where, 0, 3650, True),
            open_lookback_days=_number(data.get("open_lookback_days", 21), "open_lookback_days", where, 0, 3650,
                                       True),
            clock_skew=_number(data.get("clock_skew", 600), "clock_skew", where, 0, 7 * 86400),
            long_window_days=_number(data.get("long_window_days", 7), "long_window_days", where, 0, 3650),
            repos_listed=listed,
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    activate_rules_dir(settings.rules_dir)
    return settings


def load_rule_file(name: str, settings: Settings) -> dict[str, Any]:
    """Rule table `name` (e.g. "topics"): the packaged file, its tables replaced by the user's copy."""
    return load_rules_in(name, settings.rules_dir)


# The rules directory of the settings loaded last: the rule files every stage reads without settings in hand
# (the conclusion, checklist, dive and zh word rules, the claim and assertion rules, ...) take its tables over
# the packaged ones, as the stages given settings do (load_rule_file). Loaders are cached (`rules_cache`) and
# cleared together when another directory becomes active.
_ACTIVE_RULES: list[Path | None] = [None]
_RULE_CACHES: list[Any] = []


def rules_cache(loader):
    """Cache a no-argument loader of rule data until the active rules directory changes."""
    cached = lru_cache(maxsize=1)(loader)
    _RULE_CACHES.append(cached)
    return cached


def activate_rules_dir(rules_dir: Path | None) -> None:
    """Make `rules_dir` the one `rule_data` overlays (settings.rules_dir; load_settings calls it)."""
    if _ACTIVE_RULES[0] != rules_dir:
        _ACTIVE_RULES[0] = rules_dir
        for cached in _RULE_CACHES:
            cached.cache_clear()


def rule_data(name: str) -> dict[str, Any]:
    """Rule table `name`: the packaged file, its tables replaced by the active rules directory's copy."""
    return load_rules_in(name, _ACTIVE_RULES[0])


def load_rules_in(name: str, rules_dir: Path | None) -> dict[str, Any]:
    """Rule table `name`: the packaged file, its tables replaced by those of `rules_dir`'s copy (if any)."""
    from .toml_cache import loads  # the packaged file's table as last parsed, when it has not changed

    data = loads((DEFAULTS / "rules" / f"{name}.toml").read_text(encoding="utf-8"))
    if rules_dir is not None:
        user = rules_dir / f"{name}.toml"
        if os.path.lexists(user):  # a broken or looping link is said, not skipped
            from .guard.patterns import check_rule_data

            user_data = _read_toml(user, MAX_RULES_BYTES)
            check_rule_data(user_data, user)
            data.update(user_data)
    return data
