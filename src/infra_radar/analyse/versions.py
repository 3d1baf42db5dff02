"""What a stored analysis or relation scan was computed from: versions taken from the rule files' bytes and
tables and the analyser's source, nothing compiled. A store whose analyses and scans carry the current ones
needs no analysing, which is all `radar show` asks before reading a card (pipeline.analysis.work_left).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..config import DEFAULTS, Settings, load_rule_file
from ..guard.files import RULES_BYTES, read_bytes

ENGINE_VERSION = "2"
RULE_FILES = ("kinds", "topics", "priority", "grades", "risks", "bots")
LEDGER_ENGINE = "4"  # bump when the ledger parser or term extraction changes, so stored relations are rebuilt


def rules_version(settings: Settings) -> str:
    """The version of the analysis rules (what ruleset.RuleSet.load gives)."""
    # Everything an analysis depends on: the rule files (packaged and the user's copies, as bytes), the
    # claim and reference rules (claims.toml, links.toml), the code version, and the settings the rules
    # read (target profile, focus), so changing any of them re-analyses.
    # every rule file, packaged and the user's copy of it: the analysis reads most of them (claims, links,
    # porting, code facts, claim figures, assertions, ...), some only through a shared loader (config.rule_data)
    rules = DEFAULTS / "rules"
    names = sorted({*RULE_FILES, *(p.name[:-5] for p in rules.iterdir() if p.name.endswith(".toml"))})
    files = [rules / f"{name}.toml" for name in names]
    if settings.rules_dir is not None:
        files += [settings.rules_dir / f"{name}.toml" for name in names]
    files += sorted(Path(__file__).parent.glob("*.py"))
    digest = hashlib.sha256()
    for path in files:
        # a rule file the user did not override is "-"; one that is a pipe, a device or past the rules cap is
        # refused naming it (it was waited on for ever, or read without end)
        body = read_bytes(path, RULES_BYTES) if os.path.lexists(path) else b"-"
        digest.update(hashlib.sha256(body).digest())
    blob = json.dumps({"engine": ENGINE_VERSION, "files": digest.hexdigest(), "target": settings.target,
                       "focus": sorted(settings.focus), "weights": settings.focus_weights},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


def ledger_version(data: dict[str, Any]) -> str:
    """The version of a ledger.toml table (what ledger.compile_ledger_rules gives it)."""
    blob = json.dumps({"engine": LEDGER_ENGINE, "rules": data}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


def scan_version(settings: Settings, ledger: str) -> str:
    """The version of the relation scan (relations.RelationScan) over ledger rules of version `ledger`."""
    terms = load_rule_file("links", settings).get("terms", {})
    blob = json.dumps({"ledger": ledger, "terms": terms}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


def relation_version(settings: Settings) -> str:
    """The version `relations.RelationScan.load(settings)` gives."""
    return scan_version(settings, ledger_version(load_rule_file("ledger", settings)))
