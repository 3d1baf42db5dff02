"""The team's three mornings written in sequence with the team's own windows (a 20 s gap between the first two, a
93 s overlap between the last two, as windows taken from "the last run's time" are) on the store of all shared
history: a page's date counts in one window only, and what 07-03 tabled is not tabled again on 07-04 unless it
changed (issue 42)."""

from __future__ import annotations

import re

import pytest

from .test_memory_real import _forget, publish_mornings, section

WINDOWS = {"2026-07-02": ("2026-06-29T02:00:00Z", "2026-07-02T02:12:00Z"),
           "2026-07-03": ("2026-07-02T02:12:20Z", "2026-07-03T02:10:00Z"),
           "2026-07-04": ("2026-07-03T02:08:30Z", "2026-07-04T02:10:00Z")}
_ROW = re.compile(r"^\| P[012] \| \[([\w.-]+/[\w.-]+#\d+)\]", re.M)


@pytest.fixture(scope="module")
def mornings(full_store, tmp_path_factory):
    home, url = full_store
    out = tmp_path_factory.mktemp("one-window") / "out"
    _forget(url)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(home))
        mp.setenv("RADAR_DB_URL", url)
        yield publish_mornings(WINDOWS, out)
    _forget(url)


def _tabled(text: str) -> set[str]:
    upstream = text.split("\n## 下游进展", 1)[0]
    return set(_ROW.findall(upstream))


def test_what_07_03_tabled_is_not_tabled_again_on_07_04_unless_it_changed(mornings):
    again = _tabled(mornings["2026-07-03"]) & _tabled(mornings["2026-07-04"])
    assert not again, again
    recheck = section(mornings["2026-07-04"], "跟踪项复核")
    top = set(_ROW.findall(section(mornings["2026-07-04"], "P0 / P1")))
    assert not {ref for ref in top if f"[{ref}]" in recheck}, top


def test_no_item_is_open_where_no_source_dates_its_close(mornings):
    for day, text in mornings.items():
        assert "进行中（页面保存时" not in text, day


def test_verl_6912_withdrawn_by_its_author_and_a_lightweight_tag_without_a_release_date(mornings):
    row = next(ln for ln in mornings["2026-07-04"].splitlines()
               if ln.startswith("| ") and "[verl-project/verl#6912]" in ln)
    assert "作者已在评论中撤回此变更" in row and "可复用" not in row, row
    for text in mornings.values():
        assert "v0.1.0（2026" not in text
    assert "verl-project/verl-omni 标签 v0.1.0 指向 2026-07-02 的提交" in "".join(mornings.values())
