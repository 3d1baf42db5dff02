"""Checks a rendered report must pass, independent of how it was produced (used on fixtures and on the
team's real windows): conclusions that only echo their title, text cut inside a word or sentence, one
checklist step on too many items, HTML entities, local or token links, oversized weekly themes."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|nbsp|#\d+|#x[0-9a-fA-F]+);")
URL = re.compile(r"\]\((https?://[^)\s]+)\)|<(https?://[^>\s]+)>|(?<![(<\w])(https?://[^\s)>|]+)")
LOCAL_HOSTS = re.compile(r"^(localhost|0\.0\.0\.0|127\.\d+\.\d+\.\d+|10\.\d+\.\d+\.\d+|192\.168\.\d+\.\d+|"
                         r"[\w.-]*example\.(com|org))$")
TOKEN_KEYS = {"token", "link_token", "access_token", "api_key", "apikey", "key", "secret", "sig", "signature", "invite"}
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{2,}")
CODE = re.compile(r"`[^`]*`|“[^”]*”|\([^)]*\)|（[^）]*）|[\d.]+")


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The body rows of the first table under `## heading`, as cells."""
    part = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in part.splitlines() if ln.startswith("|")][2:]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", r)[1:-1]] for r in rows]


def title_of(cell: str) -> str:
    """The title part of an item cell: "[ref](url) title"."""
    return cell.split(") ", 1)[1] if ") " in cell else cell


def echoes_title(conclusion: str, title: str, boilerplate: set[str]) -> bool:
    """A conclusion only echoes its title when it repeats most of the title's words and names fewer than
    three words of its own (our fixed wording aside): `kind(topics): <title>`."""
    said = {w.lower() for w in WORD.findall(conclusion)}
    heard = {w.lower() for w in WORD.findall(title)} - boilerplate
    own = said - {w.lower() for w in WORD.findall(title)} - boilerplate
    return len(own) < 3 and (not heard or len(said & heard) >= 0.5 * len(heard))


def echo_share(text: str, top: str, short: str, boilerplate: set[str]) -> tuple[int, int]:
    """(echoing rows, rows) over the P0/P1 conclusions and the short-table notes."""
    rows = [(r[1], r[4]) for r in table_rows(text, top)] + [(r[1], r[3]) for r in table_rows(text, short)]
    bad = sum(1 for cell, note in rows if echoes_title(note, title_of(cell), boilerplate))
    return bad, len(rows)


def cut_words(text: str, corpus: str) -> list[str]:
    """Places where "…" follows a fragment that the source only ever continues inside a word: the 16
    characters before it occur in the source, and every occurrence is followed by a letter or digit."""
    bad = []
    plain = " ".join(corpus.split())
    for m in re.finditer(r"(.{16})…", text):
        tail = m[1].replace("`", "")
        if len(tail.strip()) < 8:
            continue
        follows = []
        start = plain.find(tail)
        while start >= 0 and len(follows) < 50:
            follows.append(plain[start + len(tail): start + len(tail) + 1])
            start = plain.find(tail, start + 1)
        if follows and all(ch.isalnum() for ch in follows):
            bad.append(m[0])
    return bad


def _step_patterns() -> list[tuple[str, re.Pattern[str], bool]]:
    """The packaged checklist steps as patterns capturing their placeholders, with whether the values they
    name make another step: a fallback (it names a module) or a step of a group is one step for any item; a
    step naming the item's own switches, env vars, kernels or versions differs by them."""
    import tomllib
    from importlib import resources

    data = tomllib.loads((resources.files("infra_radar") / "defaults" / "rules" / "checklists.toml")
                         .read_text(encoding="utf-8"))
    out = []
    for group in ("step", "fallback", "spare"):
        for i, step in enumerate(data.get(group, [])):
            for text in step["text"].values():
                parts = re.split(r"\{\w+\}", text)
                key = step.get("group") or f"{group}:{i}"  # wordings of one step share its group
                out.append((key, re.compile("(.+?)".join(re.escape(p) for p in parts), re.S),
                            group == "step" and not step.get("group")))
    return out


def step_shape(step: str) -> str:
    """The rule a checklist step was built from (with the values that make it the item's own), else the step
    without its item-specific parts."""
    step = step.strip().rstrip("。.")
    for key, pattern, by_value in _step_patterns():
        found = pattern.fullmatch(step)
        if found:
            return f"{key}|{'|'.join(found.groups())}" if by_value else key
    return " ".join(CODE.sub(" ", step).split())


def checklist_share(text: str, heading: str) -> tuple[float, str]:
    """The largest share of a report's checklist items carrying one step shape, and that shape."""
    part = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    items = [ln for ln in part.splitlines() if ln.startswith("- [")]
    if len(items) < 4:
        return 0.0, ""
    counts: dict[str, int] = {}
    for ln in items:
        steps = re.split(r"[；;] ?", ln.split("：", 1)[-1] if "：" in ln else ln.split(": ", 1)[-1])
        for shape in {step_shape(s) for s in steps if s.strip()}:
            counts[shape] = counts.get(shape, 0) + 1
    shape, n = max(counts.items(), key=lambda kv: kv[1])
    return n / len(items), shape


def bad_links(text: str) -> list[str]:
    """Links to local or placeholder hosts, or carrying a token."""
    bad = []
    for m in URL.finditer(text):
        url = next(g for g in m.groups() if g)
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        keys = {k.lower() for k, _ in parse_qsl(parts.query, keep_blank_values=True)}
        if LOCAL_HOSTS.match(host) or keys & TOKEN_KEYS or "shared_invite" in parts.path:
            bad.append(url)
    return bad


def theme_shares(text: str, heading: str, merged: int) -> list[float]:
    """Each weekly theme's item count as a share of the week's merged PRs."""
    part = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    counts = [int(m[1]) for m in re.finditer(r"^### \d+\. .*?[（(](\d+)[^）)]*[）)]\s*$", part, re.M)]
    return [n / merged for n in counts] if merged else []
