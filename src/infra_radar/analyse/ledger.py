"""The downstream adaptation ledger: which upstream PRs a downstream PR adapted to, with files and how.

A downstream PR (e.g. a vllm-ascend "main2main" upgrade) cites the upstream PRs that forced an
adaptation, in a table (`files | upstream change | adaptation`), under per-file headings, in bullet
lists of URLs or in prose. `parse_adaptations` reads one PR's title and description and returns one
`Adaptation` per upstream PR cited as adapted; the pairs and every phrase come from ledger.toml.

The parsing is pure; pipeline/relations.py joins it and the cross-item link finders (analyse/links.py) with
the store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..config import Settings, load_rule_file
from ..models import ref_number
from .versions import ledger_version

__all__ = ["Adaptation", "LedgerRules", "Pair", "compile_ledger_rules", "load_ledger_rules", "parse_adaptations"]


@dataclass(frozen=True, slots=True)
class Pair:
    """One upstream -> downstream pair and the patterns that find upstream references downstream."""

    upstream: str
    downstream: str
    ref_re: re.Pattern[str]  # an explicit upstream reference; group "u" or "n" is the number
    title_re: re.Pattern[str] | None  # an adaptation PR's title
    url_re: re.Pattern[str]  # an upstream PR/issue URL; group 1 is the number
    short: str  # how entries name the upstream: "vllm" in "vllm#123"


@dataclass(slots=True)
class LedgerRules:
    """ledger.toml compiled."""

    version: str
    pairs: list[Pair]
    header_re: re.Pattern[str]
    sentence_re: re.Pattern[str]
    files_words: list[str]
    how_words: list[str]
    path_re: re.Pattern[str]
    max_how: int

    def pair_for(self, downstream: str) -> Pair | None:
        """The pair whose downstream repository is `downstream`, if any."""
        return next((p for p in self.pairs if p.downstream.lower() == downstream.lower()), None)


@dataclass(slots=True)
class Adaptation:
    """Upstream PR `upstream#number` was adapted to by a downstream PR: in these files, this way."""

    upstream: str
    number: int
    files: list[str] = field(default_factory=list)
    how: str = ""


def _words(phrases: list[str]) -> str:
    return "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in sorted(phrases, key=len, reverse=True))


def _pair(raw: dict[str, Any], title_phrases: list[str]) -> Pair:
    up = raw["upstream"]
    aliases = _words([*raw.get("aliases", []), up])
    # "vllm#12", "vLLM #12", "vLLM PR #12", "vLLM `#12`", and the upstream's own GitHub URLs
    url = rf"https?://github\.com/{re.escape(up)}/(?:pull|issues)/(?P<u>\d+)"
    short = rf"(?<![\w/.-])(?:{aliases})(?:\s+(?:pr|pull\s+request))?\s*`?#(?P<n>\d+)"
    ref_re = re.compile(rf"{url}|{short}", re.I)
    phrases = [p.replace("{alias}", a) for p in title_phrases for a in [*raw.get("aliases", []), up]]
    title_re = re.compile(rf"(?<![\w-])(?:{_words(sorted(set(phrases)))})(?![\w-])", re.I) if phrases else None
    url_re = re.compile(rf"https?://github\.com/{re.escape(up)}/(?:pull|issues)/(\d+)[^\s)\]]*", re.I)
    return Pair(up, raw["downstream"], ref_re, title_re, url_re, up.rsplit("/", 1)[-1])


def compile_ledger_rules(data: dict[str, Any]) -> LedgerRules:
    """Compile a ledger.toml table."""
    detect, table, text = data.get("detect", {}), data.get("table", {}), data.get("text", {})
    pairs = [_pair(raw, detect.get("title_phrases", [])) for raw in data.get("pair", [])]
    exts = "|".join(re.escape(e) for e in text.get("path_extensions", ["py"]))
    names = "|".join(re.escape(n) for n in text.get("path_names", []))
    path_re = re.compile(rf"(?<![\w/.{{}}-])((?:[\w.{{}},*-]+/)*(?:[\w{{}},*-][\w.{{}},*-]*\.(?:{exts})"
                         rf"{'|' + names if names else ''}))(?![\w/-])")
    return LedgerRules(
        version=ledger_version(data), pairs=pairs,
        header_re=re.compile(rf"(?<![\w-])(?:{_words(detect.get('header_words', ['upstream']))})", re.I),
        sentence_re=re.compile(rf"(?<![\w-])(?:{_words(detect.get('sentence_phrases', ['adapt']))})(?![\w-])",
                               re.I),
        files_words=[w.lower() for w in table.get("files_words", ["file"])],
        how_words=[w.lower() for w in table.get("how_words", ["adaptation"])],
        path_re=path_re, max_how=int(text.get("max_how", 280)))


def load_ledger_rules(settings: Settings) -> LedgerRules:
    """The packaged ledger.toml, its tables replaced by the user's rules_dir copy."""
    return compile_ledger_rules(load_rule_file("ledger", settings))


# --- text helpers ----------------------------------------------------------------------------------

_MD_LINK = re.compile(r"\[([^\[\]]*)\]\([^()\s]*\)")
_BR = re.compile(r"<br\s*/?>", re.I)
_SPACE = re.compile(r"\s+")
_SEPARATOR = re.compile(r"^\s*+\|?\s*+:?-{3,}")
_ROW_BREAK = re.compile(r"\|[ \t]*\n[ \t]*\|")
# A wrapped row whose opening "|" stood alone on its line, when that line was dropped as noise: the
# table goes on after a blank line with a paragraph whose last line ends in "|".
_LOST_ROW = re.compile(r"\|[ \t]*\n[ \t]*\n(?=[^|\s][^\n]*(?:\n[^\n]+)*?\|[ \t]*$)", re.M)
_HEADING = re.compile(r"^\s*+#{1,6}\s")
_BARE_HEADING = re.compile(r"^\s*+#{1,6}\s++[\d.)]*+\s*+$")  # "##### 1." whose text wrapped to the next line
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_BARE = re.compile(r"(?<![\w/&])`?#(\d+)\b")
_LIST_GAP = re.compile(r"[\s,/&`()]*(?:and[\s,/&`()]*)?")
_NEXT = re.compile(r"`?#(\d+)\b")


def _clean(text: str, limit: int, pair: Pair | None = None) -> str:
    """Markdown cell or sentence as one plain line: links as their text, <br> as commas, upstream URLs
    as short references."""
    if pair is not None:
        text = pair.url_re.sub(lambda m: f"{pair.short}#{m.group(1)}", text)
    flat = _SPACE.sub(" ", _BR.sub(", ", _MD_LINK.sub(r"\1", text))).strip(" |,:;-")
    if len(flat) <= limit:
        return flat
    # whole clauses that fit, never a cut one (no "…"): nothing when even the first does not
    cuts = [m.start() for m in re.finditer(r"[,;]\s|\.\s", flat) if m.start() <= limit]
    return flat[: cuts[-1]].rstrip(" ,;") if cuts else ""


def _cells(row: str) -> list[str]:
    """Cells of one table row; a `|` inside a code span does not split."""
    cells, cur, in_code = [], [], False
    for ch in row.strip().strip("|"):
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    cells.append("".join(cur))
    return [c.strip() for c in cells]


@dataclass(slots=True)
class _Block:
    kind: str  # table | text
    text: str
    heading: str = ""  # the nearest heading above


def _blocks(body: str) -> list[_Block]:
    """Tables (header and rows, wrapped lines joined back) and text segments (paragraphs, list items)."""
    blocks: list[_Block] = []
    heading, cur, in_table, in_heading = "", [], False, False

    def flush() -> None:
        if cur:
            blocks.append(_Block("table" if in_table else "text", "\n".join(cur), heading))
        cur.clear()

    for line in _LOST_ROW.sub("|\n|\n", body.replace("\r\n", "\n")).split("\n"):
        if not line.strip():
            flush()
            in_table = in_heading = False
        elif _HEADING.match(line) and not in_table:
            flush()
            heading, in_heading = line, bool(_BARE_HEADING.match(line))
        elif in_heading:  # a heading wrapped onto the next line ("##### 1.\n[`path`](url)")
            heading += " " + line
        elif line.lstrip().startswith("|") and not in_table:
            flush()
            in_table = True
            cur.append(line)
        elif _BULLET.match(line) and not in_table:
            flush()
            cur.append(line)
        else:
            cur.append(line)
    flush()
    return blocks


# --- references ------------------------------------------------------------------------------------

def _explicit(pair: Pair, text: str) -> list[tuple[int, int, int]]:
    """(start, end, number) of every explicit upstream reference."""
    found = [(m.start(), m.end(), ref_number(m.group("u") or m.group("n"))) for m in pair.ref_re.finditer(text)]
    return [(start, end, n) for start, end, n in found if n is not None]  # too many digits: not a PR


def _listed(pair: Pair, text: str) -> list[int]:
    """Explicit references plus bare `#N` right after one ("vllm#1 / #2", "vLLM #1, #2 and #3")."""
    found = _explicit(pair, text)
    numbers = [n for _, _, n in found]
    for _, end, _ in found:
        nxt = _NEXT.match(text, _LIST_GAP.match(text, end).end())
        while nxt is not None:
            if ref_number(nxt.group(1)) is not None:
                numbers.append(int(nxt.group(1)))
            nxt = _NEXT.match(text, _LIST_GAP.match(text, nxt.end()).end())
    return list(dict.fromkeys(numbers))


def _in_row(pair: Pair, row: str) -> list[int]:
    """In an adaptation table row that names the upstream once, every bare `#N` is upstream too."""
    numbers = _listed(pair, row)
    if numbers:
        numbers += [n for m in _BARE.finditer(_MD_LINK.sub(" ", row)) if (n := ref_number(m.group(1))) is not None]
    return list(dict.fromkeys(numbers))


# --- paths -----------------------------------------------------------------------------------------

def _paths(rules: LedgerRules, text: str) -> list[str]:
    plain = _BR.sub(" ", _MD_LINK.sub(r" \1 ", text))
    return list(dict.fromkeys(m.group(1).strip(".,") for m in rules.path_re.finditer(plain)
                              if "://" not in plain[max(0, m.start() - 8): m.start()]))


def _resolve(paths: list[str], changed: list[str]) -> list[str]:
    """Paths as the PR changed them: a bare name or an abbreviated path (`tests/.../x.py`) is completed
    when exactly one changed file ends with it."""
    have = set(changed)
    out = []
    for path in paths:
        if path in have or not changed:
            out.append(path)
            continue
        tail = path.rsplit("/", 1)[-1]
        hits = [c for c in changed if c == tail or c.endswith("/" + tail)]
        out.append(hits[0] if len(hits) == 1 else path)
    return list(dict.fromkeys(out))


# --- tables ----------------------------------------------------------------------------------------

def _column(header: list[str], words: list[str], skip: set[int]) -> int | None:
    for word in words:
        for i, cell in enumerate(header):
            if i not in skip and re.search(rf"(?<![\w-]){re.escape(word)}", cell.lower()):
                return i
    return None


def _table(rules: LedgerRules, pair: Pair, block: _Block, always: bool) -> list[Adaptation]:
    lines = block.text.split("\n")
    sep = next((i for i, ln in enumerate(lines) if _SEPARATOR.match(ln) and "-" in ln), None)
    if sep is None:
        return []
    header = _cells(" ".join(lines[:sep]))
    up_col = _column(header, ["upstream"], set())
    if not (always or rules.header_re.search(" ".join(header))):
        return []
    files_col = _column(header, rules.files_words, {up_col} if up_col is not None else set())
    how_col = _column(header, rules.how_words, {c for c in (up_col, files_col) if c is not None})
    heading_paths = _paths(rules, block.heading)
    found = []
    for row in _ROW_BREAK.split("\n".join(lines[sep + 1:])):
        cells = _cells(row.replace("\n", " "))
        aligned = len(cells) == len(header)
        numbers = _in_row(pair, row)
        if not numbers:
            continue
        files = _paths(rules, cells[files_col]) if aligned and files_col is not None else []
        files = files or heading_paths or ([] if aligned else _paths(rules, row))
        how_text = cells[how_col] if aligned and how_col is not None else row
        found += [Adaptation(pair.upstream, n, files, _clean(how_text, rules.max_how, pair)) for n in numbers]
    return found


# --- text ------------------------------------------------------------------------------------------

def _text(rules: LedgerRules, pair: Pair, block: _Block, always: bool) -> list[Adaptation]:
    numbers = _listed(pair, block.text)
    if not numbers or not (always or rules.sentence_re.search(_clean(block.text, 10_000))):
        return []
    files = _paths(rules, block.text) or _paths(rules, block.heading)
    how = _clean(_BULLET.sub("", block.text), rules.max_how, pair)
    if re.fullmatch(rf"{re.escape(pair.short)}#\d+", how):
        how = ""  # a bare reference says nothing about how
    return [Adaptation(pair.upstream, n, files, how) for n in numbers]


def _merge(found: list[Adaptation], limit: int) -> list[Adaptation]:
    """One entry per upstream PR: files united, distinct hows joined."""
    by: dict[int, Adaptation] = {}
    for a in found:
        old = by.get(a.number)
        if old is None:
            by[a.number] = Adaptation(a.upstream, a.number, list(a.files), a.how)
            continue
        old.files = list(dict.fromkeys([*old.files, *a.files]))
        if a.how and a.how not in old.how and len(old.how) < limit:
            joined = f"{old.how}; {a.how}" if old.how else a.how
            old.how = joined if len(joined) <= limit else old.how  # a how that does not fit is left out
    return list(by.values())


def parse_adaptations(title: str, body: str, repo: str, rules: LedgerRules,
                      changed: list[str] | None = None) -> list[Adaptation]:
    """The upstream PRs that downstream PR (`repo`, title, body) adapted to, with files and how."""
    pair = rules.pair_for(repo)
    if pair is None or not body or not pair.ref_re.search(body):
        return []
    always = bool(pair.title_re and pair.title_re.search(title))
    found: list[Adaptation] = []
    for block in _blocks(body):
        parse = _table if block.kind == "table" else _text
        found += parse(rules, pair, block, always)
    merged = _merge(found, rules.max_how)
    if len(merged) == 1 and not merged[0].files:  # one upstream PR: the paths the body names are its files
        merged[0].files = _paths(rules, body)
    for a in merged:
        a.files = _resolve(a.files, changed or [])
    return merged
