"""One Settings object: packaged defaults < radar.toml < environment < flags, loaded once.

Secrets never live here; they are read from the environment where they are used.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatch
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import ConfigError

DEFAULTS = resources.files("infra_radar") / "defaults"
CONFIG_NAME = "radar.toml"
_TOP_KEYS = {
    "lang", "db_url", "out_dir", "target", "deep_dive_limit", "first_lookback_hours",
    "weekly_key_prs", "rules_dir", "focus", "repos", "llm", "lock_timeout",
}
_REPO_KEYS = {"name", "branches", "core_paths"}
LANGS = ("zh", "en")


@dataclass(slots=True)
class RepoSettings:
    """One watched repository."""

    name: str
    branches: list[str] = field(default_factory=lambda: ["main"])
    core_paths: list[str] = field(default_factory=list)

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
    deep_dive_limit: int = 5
    first_lookback_hours: int = 72
    weekly_key_prs: int = 8
    rules_dir: Path | None = None
    focus: list[str] = field(default_factory=list)
    focus_weights: dict[str, float] = field(default_factory=dict)
    repos: list[RepoSettings] = field(default_factory=list)
    config_path: Path | None = None
    lock_timeout: float = 600.0  # seconds a writing command waits for another writer of the store

    def repo(self, name: str) -> RepoSettings:
        """The settings of repository `name` (a bare entry when it is not configured)."""
        for repo in self.repos:
            if repo.name.lower() == name.lower():
                return repo
        return RepoSettings(name=name)


def home_dir() -> Path:
    """The home directory: $RADAR_HOME, else ~/.infra-radar."""
    return Path(os.environ.get("RADAR_HOME") or Path.home() / ".infra-radar").expanduser()


def default_config_text() -> str:
    """The packaged radar.toml, with every option and a comment for each."""
    return (DEFAULTS / CONFIG_NAME).read_text(encoding="utf-8")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None


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
    repos = []
    for entry in raw:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ConfigError(f"{where}: every [[repos]] entry needs a name = \"OWNER/NAME\" string")
        _check_keys(entry, _REPO_KEYS, f"{where} [[repos]] {entry.get('name')}")
        if entry["name"].count("/") != 1:
            raise ConfigError(f"{where}: repository name {entry['name']!r} is not OWNER/NAME")
        repos.append(RepoSettings(entry["name"], list(entry.get("branches", ["main"])),
                                  list(entry.get("core_paths", []))))
    return repos


def load_settings(config: Path | None = None, db_url: str | None = None, lang: str | None = None) -> Settings:
    """Load settings: packaged defaults, then the config file, then env, then explicit flags."""
    home = home_dir()
    data = tomllib.loads(default_config_text())
    path = config or (home / CONFIG_NAME)
    if config is not None or path.exists():
        data = _merge(data, _read_toml(path), str(path))
    where = str(path)
    lang = lang or os.environ.get("RADAR_LANG") or data.get("lang", "zh")
    if lang not in LANGS:
        raise ConfigError(f"{where}: lang must be one of {', '.join(LANGS)}, not {lang!r}")
    url = db_url or os.environ.get("RADAR_DB_URL") or data.get("db_url") or f"sqlite:///{home / 'radar.db'}"
    focus = data.get("focus", {})
    if not isinstance(focus, dict) or not isinstance(focus.get("weights", {}), dict):
        raise ConfigError(f"{where}: [focus] must be a table: topics = [...], weights = {{topic = 1.5}}")
    try:
        settings = Settings(
            home=home, db_url=url, lang=lang, out_dir=Path(data.get("out_dir") or "radar-out"),
            target=str(data.get("target", "ascend")), deep_dive_limit=int(data.get("deep_dive_limit", 5)),
            first_lookback_hours=int(data.get("first_lookback_hours", 72)),
            weekly_key_prs=int(data.get("weekly_key_prs", 8)),
            rules_dir=Path(data["rules_dir"]).expanduser() if data.get("rules_dir") else None,
            focus=list(focus.get("topics", [])),
            focus_weights={k: float(v) for k, v in focus.get("weights", {}).items()},
            repos=_repos(data.get("repos", []), where),
            config_path=path if path.exists() else None,
            lock_timeout=float(os.environ.get("RADAR_LOCK_TIMEOUT") or data.get("lock_timeout", 600)),
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if settings.deep_dive_limit < 0:
        raise ConfigError(f"{where}: deep_dive_limit must be >= 0")
    if not settings.lock_timeout >= 0:
        raise ConfigError(f"{where}: lock_timeout (or RADAR_LOCK_TIMEOUT) must be seconds >= 0")
    return settings


def load_rule_file(name: str, settings: Settings) -> dict[str, Any]:
    """Rule table `name` (e.g. "topics"): the packaged file, its tables replaced by the user's copy."""
    data = tomllib.loads((DEFAULTS / "rules" / f"{name}.toml").read_text(encoding="utf-8"))
    if settings.rules_dir is not None:
        user = settings.rules_dir / f"{name}.toml"
        if user.exists():
            data.update(_read_toml(user))
    return data
