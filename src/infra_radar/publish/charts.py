"""Trend charts of a repository as SVG, when matplotlib (the `charts` extra) is importable.

Without matplotlib every function returns None and the repository page shows the same numbers as
tables. The SVG is deterministic (fixed hash salt, no date) so an unchanged chart is not rewritten.
The caption is the page's (localised) figcaption; labels are codes and ISO weeks only: they need no CJK font and carry no text from GitHub.
"""

from __future__ import annotations

import io
from functools import lru_cache


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _figure():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.2), dpi=100)
    fig.subplots_adjust(left=0.06, right=0.99, top=0.96, bottom=0.22)  # fixed margins: tight_layout is slow
    return fig, fig.add_subplot(1, 1, 1)


def _svg(fig) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "infra-radar", "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def _ticks(ax, labels: list[str]) -> None:
    step = max(1, len(labels) // 12)  # at most ~12 readable week labels
    ax.set_xticks(range(0, len(labels), step))
    ax.set_xticklabels(labels[::step], rotation=45, ha="right", fontsize=7)


def bars(labels: list[str], values: list[int]) -> str | None:
    """A bar chart of one series (merged PRs per week)."""
    if not available() or not labels:
        return None
    fig, ax = _figure()
    ax.bar(range(len(values)), values, color="#3b6ea8")
    _ticks(ax, labels)
    return _svg(fig)


def stacked(labels: list[str], series: dict[str, list[int]]) -> str | None:
    """A stacked bar chart of several series (categories per week)."""
    if not available() or not labels or not series:
        return None
    fig, ax = _figure()
    bottom = [0] * len(labels)
    for name, values in series.items():
        ax.bar(range(len(labels)), values, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.legend(fontsize=7, ncol=4, loc="upper left")
    _ticks(ax, labels)
    return _svg(fig)


def lines(labels: list[str], series: dict[str, list[int]]) -> str | None:
    """One line per series (risk counts per week)."""
    if not available() or not labels or not series:
        return None
    fig, ax = _figure()
    for name, values in series.items():
        ax.plot(range(len(labels)), values, marker=".", linewidth=1, label=name)
    ax.legend(fontsize=7, ncol=3, loc="upper left")
    _ticks(ax, labels)
    return _svg(fig)
