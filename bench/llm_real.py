"""The model stage against a real server on the team's 2026-07-02 day: prompts, prose kept, drops by reason, time.

    eval "$(RADAR_MODEL_SIZE=1.5b scripts/model_server.sh start)"
    .venv/bin/python bench/llm_real.py --home /tmp/radar-bench --out /tmp/llm-real.md

Imports ../shared/data/git into `--home` when its store is empty (once), writes the daily radar of the
window without and with the model, prints one line of figures (requests, cache hits, failures with their
reasons, sentences proposed, kept and dropped as ungrounded / filler / contradiction / language / seam,
malformed fields, the share of deep dives whose mechanism, why and boundary came from the model, prose kept
per P0/P1 conclusion, tokens, wall time) and writes the rule text and the model text side by side, item by item,
to `--out` for review. A second run answers from the cache (pass --fresh to empty it first).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from infra_radar.config import load_settings  # noqa: E402
from infra_radar.pipeline.analysis import analyze  # noqa: E402
from infra_radar.pipeline.home import open_store  # noqa: E402
from infra_radar.pipeline.imports import import_jsonl  # noqa: E402
from infra_radar.pipeline.reports import daily  # noqa: E402
from infra_radar.windows import parse_when  # noqa: E402

ROW = re.compile(r"^\| (P[01]) \| \[([\w./-]+#\d+)\]\([^)]*\) (.*?) \| .* \| ([^|]*) \|$", re.M)


def _rows(text: str) -> dict[str, tuple[str, str]]:
    """{ref: (title, last cell)} of the P0/P1 rows of a table of a daily radar."""
    return {m.group(2): (m.group(3), m.group(4).strip()) for m in ROW.finditer(text)}


def _section(text: str, title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


def figures(run, dive_refs: set[str], dives: int) -> str:
    """The run's figures: requests, sentences proposed, kept and dropped by reason, malformed fields, and the
    share of the deep dives whose mechanism, why and boundary came from the model."""
    parts = {part: sum(1 for ref in dive_refs if run.prose.get(ref, {}).get(part)) for part in
             ("mechanism", "why", "boundary")}
    every = sum(1 for ref in dive_refs if all(run.prose.get(ref, {}).get(p) for p in parts))
    share = ", ".join(f"{p} {n}/{dives}" for p, n in parts.items())
    return (f"{run.requests} request(s), {run.cached} from the cache, {run.failed} failed; "
            f"sentences {run.proposed} proposed, {run.kept} kept, {run.dropped} dropped "
            f"({', '.join(f'{n} {k}' for k, n in run.dropped_by.items())}), {run.malformed} malformed field(s); "
            f"dives from the model: {share}, all three {every}/{dives}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=Path("/tmp/radar-llm-real"), help="RADAR_HOME of the bench store")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "git")
    ap.add_argument("--since", default="2026-06-29T02:00Z")
    ap.add_argument("--until", default="2026-07-02T02:12Z")
    ap.add_argument("--lang", default="zh", choices=["zh", "en"])
    ap.add_argument("--out", type=Path, default=Path("llm-real.md"), help="side-by-side review file")
    ap.add_argument("--fresh", action="store_true", help="empty the model cache first (send every prompt)")
    args = ap.parse_args()
    if not (os.environ.get("RADAR_LLM_BASE_URL") and os.environ.get("RADAR_LLM_MODEL")):
        print("set RADAR_LLM_BASE_URL and RADAR_LLM_MODEL (eval \"$(scripts/model_server.sh start)\")", file=sys.stderr)
        return 2
    os.environ["RADAR_HOME"] = str(args.home)
    args.home.mkdir(parents=True, exist_ok=True)
    settings = load_settings(lang=args.lang)
    engine = open_store(settings)
    import sqlalchemy as sa

    from infra_radar.store.schema import llm_cache, metadata

    with engine.connect() as conn:
        empty = conn.execute(sa.select(sa.func.count()).select_from(metadata.tables["items"])).scalar_one() == 0
    if empty:
        t0 = time.monotonic()
        import_jsonl(settings, engine, sorted(args.data.glob("*.jsonl.gz")))
        analyze(settings, engine)
        print(f"imported and analysed {args.data} in {time.monotonic() - t0:.0f}s", file=sys.stderr)
    if args.fresh:
        with engine.begin() as conn:
            conn.execute(llm_cache.delete())
    since, until = parse_when(args.since), parse_when(args.until)
    plain = daily(settings, engine, since, until, llm=False).text
    t0 = time.monotonic()
    report = daily(settings, engine, since, until, llm=True)
    seconds = time.monotonic() - t0
    run = report.llm
    short = "简表" if args.lang == "zh" else "Short table"  # P0/P1 items past the table's limit are there
    rule_rows = {**_rows(_section(plain, "P0 / P1")), **_rows(_section(plain, short))}
    kept = run.report.get("conclusions", {})  # the model's one-line conclusions that survived grounding
    shown_rows = {**_rows(_section(report.text, "P0 / P1")), **_rows(_section(report.text, short))}
    # a row shows model prose when its conclusion differs from the rule-only report's; a grounded line that
    # only repeats the rule text or echoes the title is left out by llm.render (counted apart)
    shown = {ref for ref in rule_rows if ref in shown_rows and shown_rows[ref][1] != rule_rows[ref][1]}
    conclusions = (f"{len(shown)}/{len(rule_rows)} rows show model prose ({len(kept)} lines survived grounding, "
                   f"{len(set(kept) - shown)} of them left out as a copy of the rule text or an echo of the title)")
    dive_refs = set(re.findall(r"^### \[([\w./-]+#\d+)\]", _section(report.text, "重点机制" if args.lang == "zh"
                                                                else "Deep dives"), re.M))
    dives = len(dive_refs) or len(run.prose) + sum(1 for k, _ in run.failures if k != "daily" and "(" not in k)
    headline = bool(run.report.get("headline"))
    print(f"model {run.model}: {figures(run, dive_refs, dives)}; "
          f"prose kept: headline {'yes' if headline else 'no'}, P0/P1 conclusions {conclusions}; "
          f"tokens {run.prompt_tokens}+{run.completion_tokens}; {seconds:.0f}s")
    for key, why in run.failures:
        print(f"  failed {key}: {why}")
    for note in run.notes:
        print(f"  note: {note}")
    rule_head = re.search(r"^\*\*.*$", plain, re.M)
    lines = [f"# Rule text and model text, {args.since} – {args.until} ({run.model})", "",
             f"Headline — rule: {rule_head.group(0) if rule_head else '-'}",
             f"Headline — model: {run.report.get('headline') or '(rule text kept)'}", ""]
    for ref, (title, rule) in rule_rows.items():
        prose = run.prose.get(ref, {})
        lines += [f"## {ref} {title}", "", f"- rule: {rule}",
                  f"- model conclusion: {kept.get(ref) or '(none survived grounding)'}",
                  f"- shown: {shown_rows[ref][1] if ref in shown else '(rule text kept)'}"]
        lines += [f"- model {k}: {v}" for k, v in prose.items()]
        cited = run.cited.get(ref, {})
        lines += [f"  - {k} cites {', '.join(map(str, c.records))}: {c.text}" for k, kept in cited.items() for c in kept]
        lines.append("")
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"side by side: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
