"""The records passed between stages: sources produce Items, analysis produces Analyses.

Every source (git clone, JSON Lines export, GitHub API, pasted page) is normalised into these
records before anything else sees them; the store saves and loads them; analysis and rendering
read them. They are plain dataclasses with no behaviour beyond small derived properties (and
`format_number`, how a PerfClaim's figure is written everywhere).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .errors import RefError

# Item.kind values
PR, ISSUE, RELEASE, COMMIT = "pr", "issue", "release", "commit"
# Item.state values
OPEN, CLOSED, MERGED = "open", "closed", "merged"
PRIORITIES = ("P0", "P1", "P2", "none")
GRADES = ("S", "M", "L")
DECISIONS = ("adapt-now", "validate-first", "track-only")

# The largest PR/issue number (or line count) a record may carry: GitHub numbers are 32-bit. A larger
# "#N" in a text is not a reference; a larger number in a record makes the record invalid.
MAX_NUMBER = 2**31 - 1


def ref_number(digits: str) -> int | None:
    """`#N`'s digits as a number, or None when they are too many to be a real PR or issue, or not ASCII digits
    (`re`'s \\d and str.isdigit also take Arabic-Indic and other digits, which int() reads as another number)."""
    if not digits or len(digits) > 10 or not digits.isascii() or not digits.isdigit():
        return None
    value = int(digits)
    return value if 0 < value <= MAX_NUMBER else None


def github_url(repo: str, number: int | None, kind: str | None = None) -> str:
    """The GitHub page of `repo#number`: /pull/N for a pull request, /issues/N for an issue. A reference whose
    kind is unknown (a bare `#N` in a description) gets /issues/N, which GitHub forwards to the pull request
    when it is one. Every link to a PR or issue the radar builds comes from here."""
    base = f"https://github.com/{repo}"
    if number is None:
        return base
    return f"{base}/pull/{number}" if kind == PR else f"{base}/issues/{number}"


# OWNER/NAME as GitHub allows them: an owner of letters, digits and hyphens (at most 39, not starting with a
# hyphen), a name of letters, digits, ".", "_" and "-" (at most 100, not "." or "..").
_REPO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/(?!\.{1,2}$)[A-Za-z0-9._-]{1,100}")
REF_FORM = "OWNER/NAME#N (OWNER and NAME as GitHub allows them, N from 1 to 2147483647)"


def repo_problem(name: object) -> str | None:
    """What makes `name` not an OWNER/NAME GitHub could have, or None."""
    if not isinstance(name, str) or not _REPO_NAME.fullmatch(name):
        return "not OWNER/NAME of letters, digits, '.', '_' and '-' (as GitHub allows)"
    return None


def check_repo(name: str, what: str = "repository") -> str:
    """`name` (trimmed) when it is a repository name GitHub allows, else RefError naming it (cut to 80)."""
    name = name.strip() if isinstance(name, str) else name
    problem = repo_problem(name)
    if problem:
        base, sep, digits = name.rpartition("#") if isinstance(name, str) else ("", "", "")
        if sep and ref_number(digits) is not None and not repo_problem(base):  # an item given for a repository
            raise RefError(f"invalid {what} {name[:80]!r}: that is an item reference; give {base[:80]} (radar show "
                           f"{name[:80]} shows the item, radar watch add {name[:80]} watches it)")
        raise RefError(f"invalid {what} {str(name)[:80]!r}: {problem}")
    return name


def from_github_url(text: str) -> str:
    """A GitHub web address as the radar names it: https://github.com/OWNER/NAME/pull/N (or /issues/N, with
    anything after it) -> 'OWNER/NAME#N'; https://github.com/OWNER/NAME[.git][/...] -> 'OWNER/NAME'. Any other
    text is returned as it is. String operations only (linear)."""
    value = text.strip()
    low = value.lower()
    for prefix in ("https://", "http://"):
        if low.startswith(prefix):
            value, low = value[len(prefix):], low[len(prefix):]
            break
    if low.startswith("www."):
        value, low = value[4:], low[4:]
    if not low.startswith("github.com/"):
        return text
    parts = value[len("github.com/"):].split("?", 1)[0].split("#", 1)[0].split("/")
    if len(parts) < 2 or not parts[0] or not parts[1]:
        return text
    owner, name = parts[0], parts[1].removesuffix(".git")
    if len(parts) >= 4 and parts[2] in ("pull", "issues", "pulls") and parts[3].isascii() and parts[3].isdigit():
        return f"{owner}/{name}#{parts[3]}"
    return f"{owner}/{name}"


def repo_of(text: str) -> str:
    """The repository a command given a repository may also be given as an item or an address: 'OWNER/NAME#N',
    https://github.com/OWNER/NAME[/pull/N] -> 'OWNER/NAME'; any other text as it is (check_repo judges it)."""
    value = from_github_url(text) if isinstance(text, str) else text
    if isinstance(value, str):
        base, sep, digits = value.strip().rpartition("#")
        if sep and ref_number(digits) is not None and not repo_problem(base):
            return base
    return value


def parse_ref(ref: str) -> tuple[str, int]:
    """'owner/name#123' (or its GitHub address, https://github.com/owner/name/pull/123) -> ('owner/name', 123):
    the one parser of item references every command uses.

    OWNER/NAME must be a name GitHub allows and N a PR or issue number GitHub can give (1 to 2^31 - 1);
    anything else is a RefError (a ConfigError: one line, exit 1) that names the reference, cut to 80."""
    text = from_github_url(ref.strip()) if isinstance(ref, str) else ""
    repo, sep, digits = text.rpartition("#")
    number = ref_number(digits) if sep else None
    if number is None or repo_problem(repo):
        if not sep and not repo_problem(text):  # a repository given for an item
            raise RefError(f"invalid item reference {text[:80]!r}: that is a repository; use {text[:80]}#N for one "
                           f"of its items (radar repo add {text[:80]} watches the repository itself)")
        raise RefError(f"invalid item reference {str(ref)[:80]!r}: use {REF_FORM}")
    return repo, number


# What a one-line text from a person (a label's note, who labelled) may not hold: C0 and C1 controls, DEL, the
# line and paragraph separators, and lone surrogates (no UTF-8 encodes them: they stop any write or print).
_NOT_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_BREAKS = "\t\n\r\x0b\x0c\x85\u2028\u2029"


def one_line_text(value: str) -> tuple[str, bool]:
    """(`value` as one line of printable text, trimmed; whether anything had to change): tabs and line breaks
    become spaces, other control characters (NUL, BEL, ESC ...) and lone surrogates are dropped. Linear."""
    if not _NOT_TEXT.search(value):
        return value.strip(), False
    return _NOT_TEXT.sub(lambda m: " " if m.group() in _BREAKS else "", value).strip(), True


# A bilingual text: {"en": "...", "zh": "..."}; renderers pick the report language.
Text = dict[str, str]


@dataclass(slots=True)
class FileChange:
    """One changed file of an item; additions/deletions are None for binary files."""

    path: str
    additions: int | None = None
    deletions: int | None = None
    status: str | None = None  # added | modified | removed | renamed (live source only)


@dataclass(slots=True)
class Comment:
    """A human or bot comment or review on an item."""

    author: str
    body: str
    created_at: datetime | None = None
    is_bot: bool = False
    kind: str = "comment"  # comment | review


@dataclass(slots=True)
class Item:
    """A pull request, issue, release (tag) or direct commit of one repository."""

    repo: str  # "owner/name"
    kind: str  # pr | issue | release | commit
    key: str  # unique within (repo, kind): the number, the tag name or the commit sha
    title: str
    number: int | None = None
    body: str = ""
    author: str = ""
    state: str = MERGED
    draft: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None
    merged_at: datetime | None = None
    closed_at: datetime | None = None
    merge_commit: str | None = None
    branches: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    files: list[FileChange] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    source: str = ""  # git | jsonl | github | page
    id: int | None = None  # store row id once saved
    # paths the text names (review-thread headers, "Files changed" lists, the description), apart from the
    # real diffstat in `files`: evidence for text-only items, never line counts
    named_paths: list[str] = field(default_factory=list)
    time_source: str = ""  # "" = the item's own dates; "import" = none known, updated_at is the import time
    # the code facts read from the change's diff (analyse/code_facts.py: defaults, switches, version gates,
    # device checks, kernels, removed definitions, tests; with "source" and "complete"); None: no diff read
    code: dict | None = None

    @property
    def ref(self) -> str:
        """Human reference: `owner/name#N` for PRs and issues, `owner/name@key` otherwise."""
        if self.number is not None:
            return f"{self.repo}#{self.number}"
        return f"{self.repo}@{self.key[:12] if self.kind == COMMIT else self.key}"

    @property
    def url(self) -> str:
        base = f"https://github.com/{self.repo}"
        if self.kind in (PR, ISSUE):
            return github_url(self.repo, self.number, self.kind)
        if self.kind == RELEASE:
            return f"{base}/releases/tag/{self.key}"
        return f"{base}/commit/{self.key}"

    @property
    def when(self) -> datetime | None:
        """The time that places the item in a window: merge time if merged, else last update."""
        return self.merged_at if self.merged_at else (self.updated_at or self.created_at)

    @property
    def additions(self) -> int:
        return sum(f.additions or 0 for f in self.files)

    @property
    def deletions(self) -> int:
        return sum(f.deletions or 0 for f in self.files)


@dataclass(slots=True)
class PerfClaim:
    """A performance figure the author reported, with where it came from."""

    metric: str
    before: float | None = None
    after: float | None = None
    unit: str = ""
    change_pct: float | None = None  # (after - before) / before * 100, or as stated
    ratio: float | None = None  # speed-up factor as stated ("2.45x") or derived
    context: dict[str, str] = field(default_factory=dict)  # model, hardware, concurrency, config
    span: tuple[int, int] = (0, 0)  # character offsets in the item body
    source: str = ""  # the line or table row it came from


def format_number(x: float) -> str:
    """Shortest faithful text for a figure: 1048.64 -> "1048.64", 12.0 -> "12"."""
    if math.isnan(x) or math.isinf(x):
        return str(x)
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    text = repr(x)
    if "e" in text:
        text = f"{x:.12f}".rstrip("0").rstrip(".")
    return text


@dataclass(slots=True)
class Link:
    """A relation from one item to another item or URL."""

    kind: str  # references | url | cherry-pick | duplicate | follow-up | same-mechanism | adapted-in
    repo: str | None = None
    number: int | None = None
    url: str | None = None
    detail: str = ""

    @property
    def ref(self) -> str:
        if self.repo and self.number is not None:
            return f"{self.repo}#{self.number}"
        return self.url or ""


@dataclass(slots=True)
class Analysis:
    """Everything the rules concluded about one item."""

    item_kind: str  # feature | perf | bugfix | refactor | docs | ci | test | model-support | deps | ...
    topics: list[str] = field(default_factory=list)
    priority: str = "none"
    importance: int = 1
    insight: int = 1
    grade: str = "S"
    grade_reason: Text = field(default_factory=dict)
    native: bool = False  # already written for the target platform
    decision: str = "track-only"
    decision_reason: Text = field(default_factory=dict)
    risk_labels: list[str] = field(default_factory=list)
    perf_claims: list[PerfClaim] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    summary: Text = field(default_factory=dict)  # one-line conclusion
    checklist: list[Text] = field(default_factory=list)  # no longer filled (render/checklist.py chooses the steps); kept so older stored analyses load
    version: str = ""  # analyser version; a change triggers recomputation
    features: list[str] = field(default_factory=list)  # the rules' flags for this item (the calibration reads them)
    why: Text = field(default_factory=dict)  # the priority rule that decided, as reasons quote it
    # statements of the description its diff contradicts (analyse/code_claims.py): {"description", "code", "file"}
    contradictions: list[dict] = field(default_factory=list)
    # Set when the analysis is read, never stored (pipeline/judgment.py): the team's label of the item, the
    # rules' own priority/grade/decision when the label or the calibration changed them, and the calibration's
    # move with the flags that made it.
    label: dict | None = None
    rules: dict | None = None
    learned: dict | None = None


@dataclass(slots=True)
class AnalysedItem:
    """An item with its analysis: what renderers and the export consume."""

    item: Item
    analysis: Analysis
    # a state the item reached after the report's window that the store knows only without its time (a
    # page saved later says "closed"): shown beside the window's own state, never deciding anything
    later_state: str = ""
    # the author withdrew or superseded the change in a comment by the window's end (analyse/withdrawal.py);
    # None: not said
    withdrawn: object = None


@dataclass(frozen=True, slots=True)
class Window:
    """A half-open time window [since, until) in UTC."""

    since: datetime
    until: datetime

    def __contains__(self, when: datetime | None) -> bool:
        return when is not None and self.since <= when < self.until


def utc(dt: datetime) -> datetime:
    """Aware datetime in UTC (naive values are taken as UTC)."""
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
