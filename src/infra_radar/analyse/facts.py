"""What the rules look at in one item (title words, cleaned description, phrases found, changed files),
extracted once per item by rules.py and read by its kind, topic, grade and summary steps."""

from __future__ import annotations

from dataclasses import dataclass, field

_NO_HITS: frozenset[int] = frozenset()


@dataclass(slots=True)
class Facts:
    """What the rules look at, extracted once per item."""

    title: str  # the title without tags, type and trailing (#N)
    type_word: str
    tag_words: list[str]
    title_words: list[str]
    body: str  # cleaned description
    design_chars: int
    found: dict[str, set[int]]  # region (title, tags, body, labels) -> ids of the phrases found there
    pids: dict[str, frozenset[int]]  # the index's owner -> phrase ids
    files: list[tuple[str, frozenset[str], int]]  # path, glob classes, changed lines
    counts: dict[str, int] = field(default_factory=dict)  # glob class -> number of files in it
    deleted: set[str] = field(default_factory=set)  # paths whose change only removes lines
    code_lines: int = 0
    lines: int = 0
    has_code: bool = False
    has_tests: bool = False
    diffstat: bool = True  # False: `files` are paths the text names (no line counts known)

    def hit(self, region: str, owner: str) -> set[int] | frozenset[int]:
        return self.found[region] & self.pids.get(owner, _NO_HITS)

    def share(self, cls: str) -> float:
        """The share of changed files in glob class `cls` (0 without files)."""
        return self.counts.get(cls, 0) / len(self.files) if self.files else 0.0
