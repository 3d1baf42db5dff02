"""Analysing one item: claims, rules and links together (pure: no store, no network)."""

from __future__ import annotations

import re

from ..config import Settings
from ..models import Analysis, Item, Link, ref_number
from .claims import extract_claims
from .refs import extract_refs
from .rules import RuleSet, analyse_item

_CHERRY_PICK = re.compile(r"\(#(\d+)\)\s*$")


def cherry_pick_origin(item: Item) -> Link | None:
    """A squash title still ending in "(#N)" after its own number was removed is a pick of PR N."""
    found = _CHERRY_PICK.search(item.title) if item.kind == "pr" else None
    origin = ref_number(found.group(1)) if found else None
    if origin is None or origin == item.number:
        return None
    return Link(kind="cherry-pick", repo=item.repo, number=origin, detail="cherry-pick of")


def analyse(item: Item, rules: RuleSet, settings: Settings) -> Analysis:
    """Every rule-made field of one item, links included."""
    analysis = analyse_item(item, rules, extract_claims(item.body), settings)
    found = extract_refs(item.body, item.repo, own=item.number)
    origin = cherry_pick_origin(item)
    if origin is not None:
        found = [origin, *(link for link in found if (link.repo, link.number) != (origin.repo, origin.number))]
    analysis.links = found
    if item.code:
        from .code_claims import contradictions
        from .code_facts import load_code_rules

        analysis.contradictions = contradictions(item.body, item.code, load_code_rules(settings))
    return analysis
