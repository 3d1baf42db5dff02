"""rules/page.toml compiled: the patterns and word lists `radar import-page` reads pasted pages with."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..config import Settings, load_rule_file
from ..errors import ConfigError
from .page_shapes import ShapeRules, compile_shape_rules

__all__ = ["PageRules", "compile_page_rules", "load_page_rules"]


@dataclass(slots=True)
class PageRules:
    """rules/page.toml compiled."""

    data: dict[str, Any]
    re: dict[str, re.Pattern[str]]
    lists: dict[str, list[re.Pattern[str]]]
    bot_names: frozenset[str]
    boilerplate: list[tuple[str, re.Pattern[str], re.Pattern[str] | None]]
    shapes: ShapeRules



def compile_page_rules(data: dict[str, Any]) -> PageRules:
    """Compile the tables of rules/page.toml."""
    meta, blocks, drop, comments = data["meta"], data["blocks"], data["drop"], data["comments"]
    single = {
        "not_title": meta["not_titles"], "draft_title": meta["draft_title"], "repo_refs": meta["repo_refs"],
        "repo_header": meta["repo_header_text"], "file_name": meta["file_name"], "avatar": comments["avatar"],
        "no_description": drop["no_description"], "end_mark": blocks["end_mark"], "hunk_row": blocks["hunk_row"],
        "commit_prefix": blocks["commit_prefix"], "review_context": blocks["review_context"],
    }
    lists = {
        "titles": meta["titles"], "repo_urls": meta["repo_urls"], "numbers": meta["numbers"],
        "authors": meta["authors"], "headers": comments["headers"], "review_marks": comments["review_marks"],
        "force_push": drop["force_push_text"], "trailers": drop["trailer_text"], "conflict": drop["conflict"],
        "chrome": drop["chrome"], "separators": blocks["separators"], "starts": blocks["starts"],
        "flat_marks": blocks["flat_marks"], "description_marks": blocks["description_marks"],
        "dates": data["dates"]["patterns"], "bot_patterns": data["bots"]["patterns"],
        "issue_marks": meta.get("issue_marks", []),
    }
    single["merge_commit"] = meta.get("merge_commit", r"(?!x)x")  # a user's older page.toml may lack it
    for state, pattern in data["state"]["badges"].items():
        single[f"badge:{state}"] = pattern
    for state, patterns in data["state"]["events"].items():
        lists[f"event:{state}"] = patterns
    boiler = [(b["name"], re.compile(b["start"]), re.compile(b["end"]) if b.get("end") else None)
              for b in data.get("boilerplate", [])]
    return PageRules(data, {k: re.compile(v) for k, v in single.items()},
                     {k: [re.compile(p) for p in v] for k, v in lists.items()},
                     frozenset(n.lower() for n in data["bots"]["names"]), boiler, compile_shape_rules(data))


def load_page_rules(settings: Settings) -> PageRules:
    """rules/page.toml (the user's copy of a table wins), compiled."""
    try:
        return compile_page_rules(load_rule_file("page", settings))
    except KeyError as exc:
        raise ConfigError(f"rules/page.toml: a table lacks the key {exc}") from None
    except re.error as exc:
        raise ConfigError(f"rules/page.toml: bad pattern {exc.pattern!r}: {exc}") from None


def _any(patterns: list[re.Pattern[str]], text: str) -> bool:
    return any(p.search(text) for p in patterns)
