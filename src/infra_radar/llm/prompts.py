"""The model stage's configuration (radar.toml `[llm]` and RADAR_LLM_* overrides) and its versioned prompt files
(defaults/prompts/NAME.toml, overridable per user), rendered with Jinja2 StrictUndefined."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, StrictUndefined

from ..config import CONFIG_NAME, LLM_NUMBERS, Settings, number
from ..errors import ConfigError

if TYPE_CHECKING:
    from .client import LlmConfig

_KEYS = {"base_url", "model", "api_key_env", "json_mode", "max_concurrency", "timeout", "token_budget",
         "language", "prompts_dir", "run_deadline", "max_reply_bytes", "max_tokens"}


# --- configuration ---------------------------------------------------------------------------------

def _llm_table(settings: Settings) -> dict[str, Any]:
    path = settings.config_path
    if path is None or not path.exists():
        return {}
    from ..guard.files import CONFIG_BYTES, read_toml

    table = read_toml(path, CONFIG_BYTES).get("llm", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [llm] must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{path}: [llm] unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_KEYS))}")
    return table


@dataclass(frozen=True, slots=True)
class LlmEndpoint:
    """Where the model is, as radar.toml `[llm]` and the RADAR_LLM_* overrides resolve it; no key value."""

    base_url: str
    model: str
    base_from: str  # "RADAR_LLM_BASE_URL" or "radar.toml [llm]" ("" when unset)
    key_env: str  # the env var the key is read from ("" when no key is configured)


def llm_endpoint(settings: Settings | None, env: Mapping[str, str] | None = None) -> LlmEndpoint:
    """The endpoint, model and key variable name (`radar doctor` shows these; the key value is never read here)."""
    env = os.environ if env is None else env
    table = _llm_table(settings) if settings is not None else {}
    base_env = env.get("RADAR_LLM_BASE_URL") or ""
    base = base_env or str(table.get("base_url") or "")
    key_env = "RADAR_LLM_API_KEY" if env.get("RADAR_LLM_API_KEY") else str(table.get("api_key_env") or "")
    return LlmEndpoint(base, str(env.get("RADAR_LLM_MODEL") or table.get("model") or ""),
                       "RADAR_LLM_BASE_URL" if base_env else "radar.toml [llm]" if base else "", key_env)


def llm_config(settings: Settings, env: Mapping[str, str] | None = None) -> LlmConfig | None:
    """The `[llm]` table of radar.toml with RADAR_LLM_* overrides; None when no model is configured."""
    env = os.environ if env is None else env
    table = _llm_table(settings)
    point = llm_endpoint(settings, env)
    base, model = point.base_url, point.model
    if not model or not base:
        return None
    from .client import JSON_MODES, LlmConfig  # the model client (http.client): loaded with a model only

    key = env.get(point.key_env, "") if point.key_env else ""
    mode = table.get("json_mode", "json_object")
    if mode not in JSON_MODES:
        raise ConfigError(f"[llm] json_mode must be one of {', '.join(JSON_MODES)}, not {mode!r}")
    language = table.get("language", "")
    if language not in ("", "zh", "en"):
        raise ConfigError(f"[llm] language must be zh or en, not {language!r}")
    check_base_url(str(base), point.base_from)
    where = f"{settings.config_path or CONFIG_NAME} [llm]"
    numbers = {name: number(table.get(name, default), name, where, *LLM_NUMBERS[name])
               for name, default in (("max_concurrency", 4), ("timeout", 120), ("token_budget", 200_000),
                                     ("run_deadline", 900), ("max_reply_bytes", 1_000_000))}
    for name, var in (("max_concurrency", "RADAR_LLM_CONCURRENCY"), ("timeout", "RADAR_LLM_TIMEOUT")):
        if (env.get(var) or "").strip():  # an override wins; checked by name like radar.toml's value
            numbers[name] = number(env[var].strip(), var, "environment variable", *LLM_NUMBERS[name])
    return LlmConfig(base_url=str(base), model=str(model), api_key=key, json_mode=mode, language=language,
                     retry_failed=env.get("RADAR_LLM_RETRY_FAILED", "") not in ("", "0"), **numbers)


def check_base_url(url: str, origin: str) -> str:
    """The model's base URL when it is http(s) with a host; else one ConfigError naming where it was set
    (the URL itself is not shown: it may carry a credential)."""
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(url.strip())
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        parts, host = None, None
    scheme = parts.scheme if parts is not None else ""
    if scheme not in ("http", "https") or not host or any(c.isspace() or ord(c) < 32 for c in url.strip()):
        shown = f"a {scheme[:20]}: URL" if scheme else "not a URL"
        raise ConfigError(f"{origin or '[llm]'}: the model's base_url must be http(s)://HOST[:PORT]/..., "
                          f"and this one is {shown}" + (" without a host" if scheme in ("http", "https") else ""))
    return url


def use_llm(settings: Settings, flag: bool | None) -> LlmConfig | None:
    """The config to use: None for --no-llm or no model; an error for --llm without a model."""
    if flag is False:
        return None
    config = llm_config(settings)
    if flag and config is None:
        raise ConfigError("--llm needs a model: set [llm] base_url and model in radar.toml, "
                          "or RADAR_LLM_BASE_URL and RADAR_LLM_MODEL")
    return config


# --- prompts ---------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Prompt:
    """A versioned prompt file: system and user templates per language and the reply schema."""

    id: str
    version: int
    schema: dict[str, Any]
    texts: dict[str, dict[str, str]]
    source: str = ""  # the file it came from (packaged prompts: defaults/prompts/NAME.toml)
    max_tokens: int = 0  # the completion cap sent with each request (0: the server's default)
    items_listed: int = 0  # a prompt over many items lists at most this many, highest-ranked first (0: all)


_PROMPT_KEYS = {"id", "version", "schema", "zh", "en"}
_OPTIONAL_KEYS = {"max_tokens", "items_listed"}
_ROLES = ("system", "user")


def _prompt_problem(data: dict[str, Any], name: str) -> str | None:
    """What is wrong with a parsed prompt file, or None."""
    unknown = sorted(set(data) - _PROMPT_KEYS - _OPTIONAL_KEYS)
    if unknown:
        return f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_PROMPT_KEYS | _OPTIONAL_KEYS))}"
    for key, top in (("max_tokens", 32768), ("items_listed", 1000)):
        cap = data.get(key, 0)
        if not isinstance(cap, int) or isinstance(cap, bool) or not 0 <= cap <= top:
            return f"{key} must be an integer in [0, {top}], not {cap!r}"
    missing = sorted(_PROMPT_KEYS - set(data))
    if missing:
        return f"missing key(s) {', '.join(missing)}"
    if data["id"] != name:
        return f"id must be {name!r} (the file name), not {data['id']!r}"
    version = data["version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return f"version must be an integer >= 1, not {version!r}"
    schema = data["schema"]
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return '[schema] must be a table with type = "object"'
    if not isinstance(schema.get("properties", {}), dict) or not all(
            isinstance(k, str) for k in schema.get("required", [])):
        return "[schema] properties must be a table and required a list of names"
    for lang in ("zh", "en"):
        texts = data[lang]
        if not isinstance(texts, dict) or set(texts) != set(_ROLES) or not all(
                isinstance(v, str) for v in texts.values()):
            return f"[{lang}] must hold exactly the strings system and user"
    return None


def parse_prompt(text: str, name: str, where: str) -> Prompt:
    """A prompt file's text, validated (keys, id, version, schema, templates); ConfigError naming `where`."""
    from jinja2 import TemplateSyntaxError

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: invalid TOML: {exc}") from None
    problem = _prompt_problem(data, name)
    if problem:
        raise ConfigError(f"{where}: {problem}")
    for lang in ("zh", "en"):
        for role in _ROLES:
            try:
                _template(data[lang][role])
            except TemplateSyntaxError as exc:
                raise ConfigError(f"{where}: [{lang}] {role}, template line {exc.lineno}: {exc.message}") from None
    return Prompt(data["id"], data["version"], data["schema"], {k: data[k] for k in ("zh", "en")}, where,
                  data.get("max_tokens", 0), data.get("items_listed", 0))


@lru_cache(maxsize=8)
def _packaged_prompt(name: str) -> Prompt:
    text = (resources.files("infra_radar") / "defaults" / "prompts" / f"{name}.toml").read_text(encoding="utf-8")
    return parse_prompt(text, name, f"defaults/prompts/{name}.toml")


@lru_cache(maxsize=16)
def _user_prompt(path: str, name: str, stamp: tuple[int, int]) -> Prompt:  # stamp: re-read once the file changes
    from ..guard.files import PROMPT_BYTES, read_text

    return parse_prompt(read_text(path, PROMPT_BYTES), name, path)


def load_prompt(name: str, directory: Path | None = None) -> Prompt:
    """Prompt `name`: the user's `directory/NAME.toml` when it exists, else the packaged `defaults/prompts/NAME.toml`."""
    if directory is not None:
        path = directory / f"{name}.toml"
        try:
            st = path.stat()
        except OSError:
            st = None
        if st is not None:
            return _user_prompt(str(path), name, (st.st_mtime_ns, st.st_size))
    return _packaged_prompt(name)


def prompts_dir(settings: Settings) -> Path | None:
    """Where user prompts override the packaged ones: `[llm] prompts_dir` (relative to radar.toml's folder),
    else `$RADAR_HOME/prompts`; None when neither exists."""
    raw = _llm_table(settings).get("prompts_dir", "")
    if not isinstance(raw, str):
        raise ConfigError(f"{settings.config_path}: [llm] prompts_dir must be a path string")
    if raw:
        path = Path(raw).expanduser()
        if not path.is_absolute() and settings.config_path is not None:
            path = settings.config_path.parent / path
        if not path.is_dir():
            raise ConfigError(f"{settings.config_path}: [llm] prompts_dir {path} is not a directory")
        return path
    home = settings.home / "prompts"
    return home if home.is_dir() else None


def settings_prompt(settings: Settings, name: str) -> Prompt:
    """Prompt `name` as this configuration sees it: the user's override wins, and `[llm] max_tokens` lowers
    (never raises) the prompt's own completion cap."""
    prompt = load_prompt(name, prompts_dir(settings))
    cap = _llm_table(settings).get("max_tokens", 0)
    if not isinstance(cap, int) or isinstance(cap, bool) or not 0 <= cap <= 32768:
        raise ConfigError(f"{settings.config_path}: [llm] max_tokens must be an integer in [0, 32768] "
                          f"(0: each prompt's own), not {cap!r}")
    if cap and not 0 < prompt.max_tokens <= cap:
        prompt = replace(prompt, max_tokens=cap)
    return prompt


_ENV = Environment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False)


@lru_cache(maxsize=32)
def _template(source: str):
    return _ENV.from_string(source)  # compiling costs ~5 ms; every item of a run shares the template


# What a prompt may show of each value, in characters (any other string: DEFAULT_BUDGET). An author's text
# longer than its budget is clipped, at a space or a sentence mark when one lies near the end, else right at the
# budget: a description with no punctuation at all costs its budget, never its length.
BUDGETS = {"body": 6000, "excerpt": 800, "title": 400, "summary": 1200, "files": 1500, "claims": 1500,
           "links": 1000, "decision": 600, "topics": 400,
           "records": 7000}  # records: whole records within grounding.toml [records] budget (llm/records.py)
DEFAULT_BUDGET = 2000
_BREAKS = " \n\t.,;:!?)]}。，；：！？、）】"


def clip_to_budget(text: str, budget: int) -> str:
    """`text` when it fits `budget` characters, else its start, ended at a break in the last fifth of the
    budget when there is one (else at the budget), and marked with "…"."""
    if len(text) <= budget:
        return text
    head = text[: max(budget - 1, 1)]
    cut = max(head.rfind(ch) for ch in _BREAKS)
    if cut >= len(head) * 4 // 5:
        head = head[: cut + 1]
    return head.rstrip() + "…"


def within_budget(value: Any, key: str = "") -> Any:
    """A prompt value with every string in it clipped to its key's budget (lists and tables walked)."""
    if isinstance(value, str):
        return clip_to_budget(value, BUDGETS.get(key, DEFAULT_BUDGET))
    if isinstance(value, dict):
        return {k: within_budget(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [within_budget(v, key) for v in value]
    return value


def render_messages(prompt: Prompt, lang: str, values: dict[str, Any]) -> list[dict[str, str]]:
    """System and user messages of `prompt` in `lang`, rendered with StrictUndefined; every value is clipped to
    its budget first (BUDGETS), so no author text reaches a prompt whole whatever its length or punctuation."""
    from jinja2 import UndefinedError

    texts = prompt.texts[lang]
    values = within_budget(values)
    try:
        return [{"role": role, "content": _template(texts[role]).render(**values)} for role in _ROLES]
    except UndefinedError as exc:
        if not prompt.source.startswith("defaults/"):  # a user's prompt names a variable the stage does not give
            raise ConfigError(f"{prompt.source}: [{lang}]: {exc.message}") from None
        raise
