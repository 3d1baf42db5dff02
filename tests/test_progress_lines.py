"""Progress off a terminal: a line every few seconds with what is done of the total, told by a fake clock."""

from __future__ import annotations

from infra_radar.cli.common import PROGRESS_EVERY, _Lines


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _run(capsys, total, steps, quiet_start=False, unit="item") -> list[str]:
    clock = Clock()
    lines = _Lines("importing", unit, total, clock=clock, quiet_start=quiet_start)
    for seconds in steps:  # one step after each of these waits
        clock.now += seconds
        lines.advance(1)
    lines.end()
    return capsys.readouterr().err.splitlines()


def test_a_line_every_few_seconds_with_done_of_total(capsys):
    # 30 steps of one second: a line at the first step, then one each PROGRESS_EVERY seconds, then the end
    said = _run(capsys, 30, [1.0] * 30)
    every = int(PROGRESS_EVERY)
    assert said[0] == "importing: 30 item(s) to do"
    assert said[1] == f"importing: {1 + every} of 30 item(s) done"
    assert said[2] == f"importing: {1 + 2 * every} of 30 item(s) done"
    assert said[-1] == "importing: 30 item(s) done in 30.0s"
    assert len(said) == 2 + 29 // every  # the first step, one line each `every` steps after it, the end


def test_without_a_total_the_lines_count_what_is_done(capsys):
    said = _run(capsys, None, [3.0] * 4, unit="page")
    assert said == ["importing: started", "importing: 3 page(s) done", "importing: 4 page(s) done in 12.0s"]


def test_fast_steps_say_only_the_start_and_end(capsys):
    said = _run(capsys, 1000, [0.001] * 1000)
    assert said == ["importing: 1,000 item(s) to do", "importing: 1,000 item(s) done in 1.0s"]


def test_quiet_start_says_nothing_for_a_short_stage_and_lines_for_a_long_one(capsys):
    assert _run(capsys, 20, [0.1] * 20, quiet_start=True) == []  # an export piped into a file: its stdout alone
    said = _run(capsys, 20, [1.0] * 20, quiet_start=True)
    assert said[0] == f"importing: {int(PROGRESS_EVERY)} of 20 item(s) done"
    assert said[-1] == "importing: 20 item(s) done in 20.0s"
