"""Performance claims in Markdown and plain-text tables: by metric columns, by before/after rows, or
`before -> after` cells (the decisions are documented in claims.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..models import PerfClaim
from .claim_rules import (
    _BRACKETS,
    _INLINE_SEPARATOR,
    _ROW_SPLIT,
    _SEPARATOR,
    ClaimRules,
    _Budget,
    _clean,
    _convert,
    _display,
    _make,
    _metric_info,
    _unit,
    _value,
)

# --------------------------------------------------------------------------- tables


@dataclass(slots=True)
class _Row:
    cells: list[str]
    start: int
    end: int
    raw: str


@dataclass(slots=True)
class _Table:
    header: list[str]
    rows: list[_Row]
    start: int
    end: int


def _split_cells(line: str, piped: bool = True) -> list[str]:
    """Cells of a table line; without leading pipes a line starting with `|` has an empty first cell."""
    body = line.strip()
    if body.startswith("|") and piped:
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def _lines(text: str) -> list[tuple[int, int]]:
    """Line spans; a line holding a whole flattened table is split into one span per row."""
    spans, pos = [], 0
    for line in text.split("\n"):
        end = pos + len(line)
        if "|" in line and _INLINE_SEPARATOR.search(line) and not _SEPARATOR.match(line):
            lo = pos
            for cut in _ROW_SPLIT.finditer(line):
                spans.append((lo, pos + cut.start() + 1))
                lo = pos + cut.end()
            spans.append((lo, end))
        else:
            spans.append((pos, end))
        pos = end + 1
    return spans


def _tables(text: str, lines: list[tuple[int, int]], budget: _Budget) -> Iterator[_Table]:
    """Markdown tables: header (possibly wrapped), separator, rows (wrapped rows joined). Each separator and
    row line counts against the body's budget; the tables end where it is spent."""
    i = 1
    while i < len(lines):
        line = text[lines[i][0]:lines[i][1]]
        if "-" not in line or not _SEPARATOR.match(line):
            i += 1
            continue
        if not budget.take():
            return
        width = len(_split_cells(line))
        piped = line.strip().startswith("|")
        header, hstart = _header(text, lines, i, width, piped)
        rows, i = _rows(text, lines, i + 1, width, piped, budget)
        if header and rows:
            yield _Table(header, rows, hstart, rows[-1].end)


def _header(text: str, lines: list[tuple[int, int]], sep: int, width: int, piped: bool) -> tuple[list[str], int]:
    j, raw = sep - 1, ""
    while j >= 0 and j >= sep - 3:
        chunk = text[lines[j][0]:lines[j][1]]
        if not chunk.strip() or "|" not in chunk:
            break
        raw = f"{chunk} {raw}" if raw else chunk
        if len(_split_cells(raw, piped)) >= width:
            break
        j -= 1
    cells = _split_cells(raw, piped) if raw else []
    return cells[-width:], lines[max(j, 0)][0]


def _rows(text: str, lines: list[tuple[int, int]], i: int, width: int, piped: bool,
          budget: _Budget) -> tuple[list[_Row], int]:
    rows: list[_Row] = []
    while i < len(lines) and budget.take():
        lo, hi = lines[i]
        chunk = text[lo:hi]
        if not chunk.strip():
            break
        starts_row = chunk.lstrip().startswith("|") if piped else "|" in chunk
        short = bool(rows) and len(_split_cells(rows[-1].raw, piped)) < width
        if not piped and short and chunk.lstrip().startswith("|"):
            starts_row = False  # a wrapped row: its tail went to the next line
        if rows and not starts_row and not chunk.lstrip().startswith("#") and short:
            rows[-1].raw += " " + chunk.strip()
            rows[-1].end = hi
        elif "|" in chunk and (starts_row or not piped):
            rows.append(_Row([], lo, hi, chunk))
        else:
            break
        i += 1
    for row in rows:
        row.cells = _split_cells(row.raw, piped)
    return rows, i


def _role(rules: ClaimRules, header: str) -> str:
    text = _clean(header)
    if rules.strong_after_re.search(text):
        return "after"
    if rules.before_re.search(text):
        return "before"
    if rules.after_re.search(text):
        return "after"
    if rules.delta_re.search(text):
        return "delta"
    return ""


def _residual(rules: ClaimRules, header: str, states: bool = True) -> tuple[str, str | None]:
    """A header minus state words: (metric text, unit spelling from brackets or a trailing unit)."""
    text = _clean(header)
    unit = None
    for m in _BRACKETS.finditer(text):
        inner = (m.group(1) or m.group(2) or "").strip()
        if _unit(rules, inner):
            unit, text = inner, text[: m.start()] + " " + text[m.end():]
            break
    for regex in (rules.strong_after_re, rules.before_re, rules.after_re) if states else ():
        text = regex.sub(" ", text)
    text = re.sub(r"\(\s*\)|\[\s*\]|->|→|=>|\bvs\.?(?!\w)", " ", text)
    words = text.split()
    if words and unit is None and _unit(rules, words[-1]) and len(words) > 1:
        unit = words.pop()
    return " ".join(words).strip(" :-,"), unit


def _cell(rules: ClaimRules, text: str) -> tuple[float, str | None, float | None] | None:
    """A cell holding one figure: (value, unit spelling, stated ratio in brackets) or None."""
    m = rules.cell_re.match(_clean(text))
    if m is None:
        return None
    value = _value(m.group("n"))
    if m.group("m"):
        value *= 1000 if m.group("m").lower() == "k" else 1e6
    ratio = None
    paren = m.group("paren")
    if paren:
        r = re.fullmatch(r"\s*[x×]\s*(\d+(?:\.\d+)?)\s*|\s*(\d+(?:\.\d+)?)\s*[x×]\s*", paren)
        ratio = float(r.group(1) or r.group(2)) if r else None
    return value, m.group("u"), ratio


def _stated_ratio(rules: ClaimRules, cells: list[str], cols: list[int]) -> float | None:
    for c in cols:
        if c < len(cells):
            m = re.fullmatch(r"~?\s*[x×]?\s*(\d+(?:\.\d+)?)\s*[x×]?", _clean(cells[c]))
            if m and ("x" in cells[c].lower() or "×" in cells[c]):
                return float(m.group(1))
    return None


def _table_claim(rules: ClaimRules, metric: str, before: tuple[float, str | None, float | None],
                 after: tuple[float, str | None, float | None], unit_hint: str | None,
                 ratio: float | None, span: tuple[int, int], source: str) -> PerfClaim | None:
    """A claim from two table figures, or None if it is not a performance figure."""
    if re.fullmatch(r"[\d\W_]*", metric):
        metric = ""  # a row labelled by a number (a batch size, a shape): the unit names the metric
    if rules.skip_re.search(metric):
        return None
    spelling = after[1] or before[1] or unit_hint
    b = _convert(rules, before[0], before[1] or unit_hint, spelling)
    if b is None:
        return None
    info = _unit(rules, spelling)
    canonical, cls = (info[0], info[1]) if info else ("", "")
    if cls not in ("time", "memory", "throughput") and (not metric or _metric_info(rules, metric) is None):
        return None
    metric = metric or cls
    return _make(rules, _display(rules, metric), b, after[0], canonical, cls, ratio or after[2], span, source)


def _column_pairs(rules: ClaimRules, header: list[str]) -> list[tuple[int, int, str, str | None]]:
    """(before col, after col, metric text, unit) for a table with state columns."""
    roles = [_role(rules, h) if i else "" for i, h in enumerate(header)]
    befores = [i for i, r in enumerate(roles) if r == "before"]
    afters = [i for i, r in enumerate(roles) if r == "after"]
    free = [i for i, r in enumerate(roles) if i and not r and _clean(header[i])]
    same = _same_metric_pair(rules, header, free) if not befores and not afters else None
    if same is not None:
        # "TTFT(baseline config) | TTFT(new config)": one metric measured in two states, in order
        name = _BRACKETS.sub("", _clean(header[same[0]])).strip()
        return [(same[0], same[1], name, _residual(rules, header[same[1]])[1] or _residual(rules, header[same[0]])[1])]
    elif len(befores) + len(afters) == 1 and len(free) == 1:
        # "Verl (s) | Verl Fix (s)", "enable_switch | baseline": the other value column
        befores, afters = (befores or free), (afters or free)
    elif not befores and not afters and len(free) == 2:
        # "DFlash | Dynamic DFlash": the longer name is the variant under test
        a, b = (_BRACKETS.sub("", _clean(header[i])).strip().lower() for i in free)
        if a == b or (a not in b and b not in a):
            return []
        befores, afters = ([free[0]], [free[1]]) if len(a) < len(b) else ([free[1]], [free[0]])
    if len(befores) == 1 and len(afters) == 1:
        (bname, bunit), (aname, aunit) = _residual(rules, header[befores[0]]), _residual(rules, header[afters[0]])
        return [(befores[0], afters[0], aname if aname.lower() == bname.lower() else "", aunit or bunit)]
    pairs = []
    for b in befores:
        name, unit = _residual(rules, header[b])
        match = [a for a in afters if _residual(rules, header[a])[0].lower() == name.lower()]
        if len(match) == 1:
            pairs.append((b, match[0], name, unit or _residual(rules, header[match[0]])[1]))
    return pairs


def _same_metric_pair(rules: ClaimRules, header: list[str], free: list[int]) -> tuple[int, int] | None:
    """The two columns naming the same known metric with different bracketed states, if exactly two."""
    groups: dict[str, list[int]] = {}
    for i in free:
        text = _clean(header[i])
        found = _BRACKETS.search(text)
        name = _BRACKETS.sub("", text).strip().lower()
        if found and name and _metric_info(rules, name) is not None:
            groups.setdefault(name, []).append(i)
    pairs = [cols for cols in groups.values() if len(cols) == 2]
    return (pairs[0][0], pairs[0][1]) if len(pairs) == 1 and len(groups) == 1 else None


def _label_context(header: list[str], cells: list[str], skip: set[int]) -> dict[str, str]:
    labels = [(_clean(header[i]), _clean(c)) for i, c in enumerate(cells) if i not in skip and i < len(header)]
    labels = [(h, c) for h, c in labels if c and not re.fullmatch(r"[+\-]?[\d.,]+\s*%|[x×][\d.]+|[\d.]+[x×]", c)]
    ctx: dict[str, str] = {}
    for h, c in labels:
        key = next((k for k in ("concurrency", "batch") if k in h.lower()), "case")
        ctx[key] = f"{ctx[key]}, {c}" if key in ctx else (c if key != "case" or not h else f"{h}: {c}")
    return ctx


def _claims_by_columns(rules: ClaimRules, table: _Table) -> list[PerfClaim]:
    """A table with before/after columns: one claim per row (per column pair)."""
    claims: list[PerfClaim] = []
    pairs = _column_pairs(rules, table.header)
    deltas = [i for i, h in enumerate(table.header) if i and _role(rules, h) == "delta"]
    for bcol, acol, name, unit in pairs:
        named = bool(name) and _metric_info(rules, name) is not None
        for row in table.rows:
            if max(bcol, acol) >= len(row.cells):
                continue
            before, after = _cell(rules, row.cells[bcol]), _cell(rules, row.cells[acol])
            if before is None or after is None:
                continue
            labels = [c for i, c in enumerate(row.cells[: len(table.header)]) if i not in (bcol, acol, *deltas)]
            metric, row_unit = (name, None) if named else _residual(rules, next((c for c in labels if _clean(c)), ""), states=False)
            claim = _table_claim(rules, metric, before, after, unit or row_unit,
                                 _stated_ratio(rules, row.cells, deltas),
                                 (row.start, row.end), row.raw)
            if claim is not None:
                skip = {bcol, acol, *deltas} | (set() if named else {row.cells.index(next(
                    (c for c in labels if _clean(c)), row.cells[0]))})
                claim.context.update(_label_context(table.header, row.cells, skip))
                claims.append(claim)
    return claims


def _claims_by_rows(rules: ClaimRules, table: _Table) -> list[PerfClaim]:
    """A table with one row per code state: first baseline row vs the last current/after row."""
    roles = [_role(rules, r.cells[0]) if r.cells else "" for r in table.rows]
    if "before" not in roles:
        return []
    first = roles.index("before")
    later = [i for i in range(first + 1, len(roles)) if roles[i] == "after"]
    if later:
        last = later[-1]
    elif len(roles) == 2 and first == 0:
        last = 1
    else:
        return []
    base, cur = table.rows[first], table.rows[last]
    claims: list[PerfClaim] = []
    for col in range(1, len(table.header)):
        if col >= len(base.cells) or col >= len(cur.cells):
            continue
        before, after = _cell(rules, base.cells[col]), _cell(rules, cur.cells[col])
        if before is None or after is None:
            continue
        name, unit = _residual(rules, table.header[col])
        claim = _table_claim(rules, name, before, after, unit, None, (base.start, cur.end),
                             f"{base.raw.strip()}\n{cur.raw.strip()}")
        if claim is not None:
            between = [r for r in table.rows[first + 1:last] if col < len(r.cells) and r.cells[0].strip()]
            if between:  # states the author measured in between stay visible beside the claim
                claim.context["states"] = "; ".join(f"{_clean(r.cells[0])} {_clean(r.cells[col])}" for r in between)
            claims.append(claim)
    return claims


def _claims_in_cells(rules: ClaimRules, table: _Table) -> list[PerfClaim]:
    """Cells written as `before -> after`: the column header names the metric."""
    claims: list[PerfClaim] = []
    for row in table.rows:
        for col, cell in enumerate(row.cells[: len(table.header)]):
            if not col or "->" not in cell and "→" not in cell:
                continue
            m = rules.pair_re.fullmatch(_clean(cell))
            if m is None:
                continue
            name, unit = _residual(rules, table.header[col])
            b, a = _value(m.group("n1")), _value(m.group("n2"))
            claim = _table_claim(rules, name, (b, m.group("u1"), None), (a, m.group("u2"), None), unit,
                                 None, (row.start, row.end), row.raw)
            if claim is not None:
                claim.context.update(_label_context(table.header, row.cells, set(range(1, len(row.cells)))))
                claims.append(claim)
    return claims


def _table_claims(rules: ClaimRules, text: str, budget: _Budget) -> tuple[list[PerfClaim], list[tuple[int, int]]]:
    claims: list[PerfClaim] = []
    spans: list[tuple[int, int]] = []
    for table in _tables(text, _lines(text), budget):
        spans.append((table.start, table.end))
        found = _claims_by_columns(rules, table) or _claims_by_rows(rules, table)
        claims.extend(found or _claims_in_cells(rules, table))
    return claims, spans
