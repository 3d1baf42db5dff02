"""How a figure's metric is named in a report: the author's name, said with Chinese joints in zh where English
grammar words hold it together. Shared by the conclusion and the checklist (neither imports the other for it)."""

from __future__ import annotations

from .escape import text
from .zh_words import function_words


def metric_name(metric: str, lang: str) -> str:
    """A figure's metric as the author named it; in zh, a name held together by English grammar words ("wall
    clock for 150 steps") said with Chinese joints (the metric names stay)."""
    if lang == "zh" and function_words(metric):
        from .mechanism import _TOKEN
        from .saying import phrase

        return str(phrase(_TOKEN.findall(metric), 12, "zh"))
    return text(metric)
