"""References in a PR title/description: `#N`, `owner/repo#N`, GitHub URLs, other URLs, relations.

A relation phrase just before a reference gives its kind (links.toml): "Fixes #12" -> fixes,
"follow-up of #3" -> follow-up, "backport of" / "cherry-picked from" -> backport, "supersedes" ->
supersedes; everything else is a plain "references" (GitHub items) or "url" (other addresses).
A squash subject's trailing `(#N)` groups are the PR's own number, not references, except that in
`title (#6814) (#6873)` the earlier number is the original PR of a cherry-pick (kind "cherry-pick").
`#N` inside code spans/blocks, Markdown headings, HTML entities and link texts (`[vllm #1](url)`,
where the URL says which repository) is skipped.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from ..config import rule_data, rules_cache
from ..models import Link, ref_number

__all__ = ["LinkRules", "compile_link_rules", "default_link_rules", "extract_refs", "pr_number_from_subject",
           "strip_pr_suffix"]

_SUFFIX = re.compile(r"(?:\s*+\(#(\d+)\))+\s*+$")
_SUFFIX_NUM = re.compile(r"\(#(\d+)\)")
# Literal-prefix patterns (`re` scans those fast); the owner/repo before a `#` is parsed backwards.
_URL = re.compile(r"https?://[^\s<>\"'`\]]+")
_GH_ITEM = re.compile(r"https?://github\.com/([\w.-]+)/([\w.-]+)/(?:pull|issues)/(\d+)")
_HASH = re.compile(r"#([1-9]\d*)\b(?![\w-])")
_OWNER_REPO = re.compile(r"(?<![\w/.@-])([A-Za-z0-9][\w.-]*)/([A-Za-z0-9][\w.-]*)$")
_NOT_REF_BEFORE = set("&#/=:\"'") | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]+`", re.S)
_LINK_TEXT = re.compile(r"\[[^\[\]]{0,300}\]\(")
_TRAILING = ".,;:!?)'\"*_>]}"
_LIST_GAP = re.compile(r"[\s,&/]*(?:(?:and|or)[\s,&/]*)?")


@dataclass(slots=True)
class LinkRules:
    """links.toml compiled."""

    phrase_re: re.Pattern[str]
    kinds: dict[str, str]  # phrase (lower) -> kind
    rank: dict[str, int]  # kind -> strength (lower is stronger)
    max_urls: int
    noise_url: re.Pattern[str] | None = None  # template boilerplate addresses, never links
    max_matches: int = 500  # URL, `#N` and code/link-text matches examined per text (links.toml)
    stems: tuple[str, ...] = ()  # casefolded starts of the phrases: a window holding none has no phrase


def compile_link_rules(data: dict[str, Any]) -> LinkRules:
    """Compile a links.toml table into the rules `extract_refs` applies."""
    kinds = {p.lower(): r["kind"] for r in data["relation"] for p in r["phrases"]}
    alts = "|".join(re.escape(p).replace(r"\ ", r"\s++") for p in sorted(kinds, key=len, reverse=True))
    fill = "|".join(re.escape(f).replace(r"\ ", r"\s++") for f in sorted(data["fillers"], key=len, reverse=True))
    phrase_re = re.compile(
        rf"(?<![\w-])(?P<phrase>{alts})(?:\s*+:)?(?:\s++(?:{fill})(?![\w-]))*+\s*+[:(\[]?\s*+$", re.I)
    rank = {kind: i for i, kind in enumerate(data["strength"])}
    noise = data.get("noise_urls", [])
    noise_url = re.compile("|".join(f"(?:{p})" for p in noise), re.I) if noise else None
    stems = tuple(sorted({p.split()[0].casefold()[:4] for p in kinds}))
    return LinkRules(phrase_re, kinds, rank, int(data.get("max_urls", 10)), noise_url,
                     int(data.get("max_matches", 500)), stems)


@rules_cache
def default_link_rules() -> LinkRules:
    """links.toml (the active rules directory's tables over the packaged ones), compiled once."""
    return compile_link_rules(rule_data("links"))


_SUFFIX_SPAN = 400  # characters at the end of a subject searched for its (#N) groups: keeps the search linear


def _suffix(subject: str) -> re.Match[str] | None:
    """The trailing `(#N)` groups of a line, searched in its last _SUFFIX_SPAN characters only (a search over a
    whole line of "(#1)" would rescan the rest of it from every position)."""
    return _SUFFIX.search(subject, max(0, len(subject) - _SUFFIX_SPAN))


def pr_number_from_subject(subject: str) -> tuple[int | None, list[int]]:
    """(the PR number: the last trailing `(#N)`, the earlier trailing numbers) of a squash subject."""
    m = _suffix(subject)
    if m is None:
        return None, []
    numbers = [ref_number(n) for n in _SUFFIX_NUM.findall(m.group(0))]
    if numbers[-1] is None:  # "(#99999999999999999999)" is too large to be a PR: not a number at all
        return None, []
    return numbers[-1], [n for n in numbers[:-1] if n is not None]


def strip_pr_suffix(subject: str) -> str:
    """The subject without its trailing `(#N)` groups."""
    m = _suffix(subject)
    return (subject[:m.start()] if m else subject).rstrip()


def _first(matches: Iterator[re.Match[str]], limit: int) -> tuple[list[re.Match[str]], int]:
    """At most `limit` matches, and where the text stops being examined: the end of the last one taken when
    the limit cut the rest off, else the end of the text (-1)."""
    taken = list(islice(matches, limit))
    return taken, (taken[-1].end() if len(taken) >= limit else -1)


def _skipped(text: str, limit: int) -> tuple[list[tuple[int, int]], int]:
    """Spans where a bare `#N` is not a reference (code, and Markdown link texts), and where the text stops
    being examined (-1: nowhere) when there were more than `limit` of either."""
    stop = -1
    spans: list[tuple[int, int]] = []
    for pattern, cue in ((_CODE, "`"), (_LINK_TEXT, "](")):
        if cue in text:
            found, cut = _first(pattern.finditer(text), limit)
            spans += [m.span() for m in found]
            stop = cut if stop < 0 else min(stop, cut) if cut >= 0 else stop
    return spans, stop


class _Spans:
    """Half-open spans answering `pos in spans` by bisection: a long body holds thousands of URLs and `#N`s."""

    __slots__ = ("starts", "ends")

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        spans = sorted(spans)
        self.starts = [lo for lo, _ in spans]
        self.ends, reach = [], -1
        for _, hi in spans:  # the furthest end among spans starting at or before each one (they may overlap)
            reach = max(reach, hi)
            self.ends.append(reach)

    def __contains__(self, pos: int) -> bool:
        i = bisect_right(self.starts, pos) - 1
        return i >= 0 and self.ends[i] > pos


@dataclass(slots=True)
class _Hit:
    start: int
    end: int
    repo: str | None
    number: int | None
    url: str | None
    bare: bool  # a `#N` / `owner/repo#N` (skipped in code), not a URL


def _hits(text: str, repo: str, limit: int) -> tuple[list[_Hit], int]:
    """Every URL and `#N` / `owner/repo#N` reference, in text order, and where the text stops being examined
    (-1: nowhere): at most `limit` URL and `limit` `#N` matches are examined, however many repeat."""
    hits = []
    urls = []
    stop = -1
    if "http" in text:
        found, stop = _first(_URL.finditer(text), limit)
        for m in found:
            url = m.group(0).rstrip(_TRAILING)
            gh = _GH_ITEM.match(url)
            urls.append((m.start(), m.end()))
            if gh and ref_number(gh.group(3)) is not None:
                hits.append(_Hit(m.start(), m.end(), f"{gh.group(1)}/{gh.group(2)}", int(gh.group(3)), url, False))
            else:
                hits.append(_Hit(m.start(), m.end(), None, None, url, False))
    url_spans = _Spans(urls)
    found, cut = _first(_HASH.finditer(text), limit)
    stop = cut if stop < 0 else min(stop, cut) if cut >= 0 else stop
    for m in found:
        start = m.start()
        if start in url_spans or ref_number(m.group(1)) is None:  # too many digits to be a PR: not a reference
            continue
        if start and text[start - 1] in _NOT_REF_BEFORE:
            owner = _OWNER_REPO.search(text, max(0, start - 100), start)
            if owner is None:
                continue
            hits.append(_Hit(owner.start(), m.end(), f"{owner.group(1)}/{owner.group(2)}", int(m.group(1)),
                             None, True))
        else:
            hits.append(_Hit(start, m.end(), repo, int(m.group(1)), None, True))
    return sorted(hits, key=lambda h: h.start), stop


def _relation(rules: LinkRules, text: str, m: _Hit, prev: tuple[int, str, str] | None) -> tuple[str, str]:
    """(kind, phrase) given by the words right before a reference, or inherited along a list."""
    window = max(0, m.start - 60)  # only the 60 characters before count: never rescan a long line per reference
    line_start = text.rfind("\n", window, m.start) + 1
    before = text[max(line_start, window): m.start]
    folded = _fold(before)  # substring tests are far cheaper than the phrase search at every position
    hit = rules.phrase_re.search(before) if any(stem in folded for stem in rules.stems) else None
    if hit:
        phrase = hit.group("phrase")
        # re.I also matches "ſ", "K", "ı", "İ": the phrase is looked up folded the same way (was a KeyError)
        return rules.kinds.get(_SPACE.sub(" ", _fold(phrase)), "references"), phrase
    if prev and prev[1] != "references" and _LIST_GAP.fullmatch(text, prev[0], m.start):
        return prev[1], prev[2]
    return "references", ""


_SPACE = re.compile(r"\s+")


def _fold(text: str) -> str:
    """`text` casefolded, dotless and dotted i as i: what a phrase matched case-insensitively (re.I) reads as."""
    return text.casefold().replace("ı", "i").replace("\u0307", "")


def _subject_links(text: str, repo: str) -> tuple[list[Link], int]:
    """Cherry-pick links from the first line's trailing `(#N)` groups, and where that suffix starts."""
    first = text.split("\n", 1)[0]
    m = _suffix(first)
    if m is None:
        return [], -1
    _, earlier = pr_number_from_subject(first)
    return [Link("cherry-pick", repo, n, detail="subject") for n in earlier], m.start()


def _keep(links: list[Link], rules: LinkRules, own: int | None, repo: str) -> list[Link]:
    """Dedupe: one link per target, with its strongest kind; self-references and extra URLs dropped."""
    best: dict[str, Link] = {}
    for link in links:
        if link.number is not None and link.number == own and (link.repo or "").lower() == repo.lower():
            continue
        key = f"{(link.repo or '').lower()}#{link.number}" if link.number is not None else (link.url or "")
        old = best.get(key)
        if old is None:
            best[key] = link
        elif rules.rank.get(link.kind, 99) < rules.rank.get(old.kind, 99):
            best[key] = Link(link.kind, link.repo, link.number, link.url or old.url, link.detail)
        elif old.url is None and link.url:
            old.url = link.url
    urls = [k for k, v in best.items() if v.kind == "url"]
    for key in urls[rules.max_urls:]:
        del best[key]
    return list(best.values())


def extract_refs(text: str, repo: str, own: int | None = None, rules: LinkRules | None = None) -> list[Link]:
    """Links from a PR/issue title and description to other items and URLs, deduplicated, in text order."""
    if not text or ("#" not in text and "http" not in text):
        return []
    rules = rules or default_link_rules()
    links, suffix_at = _subject_links(text, repo)
    # The work per text is bounded by the matches examined (links.toml max_matches), not by what they find: a
    # text repeating `#1` 20,000 times stops after the budget, and nothing past where it stopped is a link.
    spans, stop = _skipped(text, rules.max_matches)
    skipped = _Spans(spans)
    hits, cut = _hits(text, repo, rules.max_matches)
    stop = cut if stop < 0 else min(stop, cut) if cut >= 0 else stop
    first_end = text.find("\n") if "\n" in text else len(text)
    prev: tuple[int, str, str] | None = None
    for hit in hits:
        if 0 <= stop < hit.end:
            break
        if 0 <= suffix_at <= hit.start < first_end or (hit.bare and hit.start in skipped):
            continue  # the subject's own (#N) suffix, or a number in code / a link text
        if hit.number is None:
            if not (rules.noise_url and hit.url and rules.noise_url.search(hit.url)):
                links.append(Link("url", url=hit.url))
            continue
        kind, phrase = _relation(rules, text, hit, prev)
        links.append(Link(kind, hit.repo, hit.number, hit.url, phrase))
        prev = (hit.end, kind, phrase)
    return _keep(links, rules, own, repo)
