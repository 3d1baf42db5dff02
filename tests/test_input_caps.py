"""Hostile inputs cost bounded memory: a history export line is read through a bounded reader (an over-long
line is passed over in pieces and skipped with file:line and the cap), a saved page is read only up to its size
cap, and every text a model prompt shows of an item is clipped to its budget whatever its punctuation.
Memory is proved by the peak RSS of a subprocess against a generous bound, never by time."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main

pytestmark = pytest.mark.one_store  # caps on lines, pages and prompts: applied before any store

RADAR = [sys.executable, "-c", "from infra_radar.cli import main; main()"]
HEADER = json.dumps({"kind": "repo", "full_name": "acme/infer"}) + "\n"


def commit_line(i: int, subject: str = "") -> str:
    return json.dumps({"kind": "commit", "sha": f"{i:040x}", "subject": subject or f"Fuse the rope kernel, part {i}",
                       "committed_at": "2026-07-01T10:00:00Z", "files": []}) + "\n"


_MEASURE = ("import json, resource, subprocess, sys\n"
            "done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=600)\n"
            "print(json.dumps([resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode,"
            " done.stdout, done.stderr]))\n")


def peak_rss_mb(args: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    """Run the radar in a child process; its own peak resident set in MB. The child runs under a fresh
    intermediate process, whose waited-for children are the radar alone (this test process's ru_maxrss of
    children would be the largest child of the whole test session)."""
    measured = subprocess.run([sys.executable, "-c", _MEASURE, *RADAR, *args], env={**os.environ, **env},
                              capture_output=True, text=True, timeout=660)
    assert measured.returncode == 0, measured.stderr
    peak_kib, code, out, err = json.loads(measured.stdout)
    return peak_kib / 1024, subprocess.CompletedProcess(args, code, out, err)  # ru_maxrss is in KiB on Linux


def huge_line_export(path: Path, size: int) -> Path:
    """A gzip export whose second line is `size` bytes long (a few MB compressed), then a normal line."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"a" * (1 << 20)
    with open(path, "wb") as fh:
        fh.write(squeeze.compress((HEADER + commit_line(1)).encode() + b'{"kind": "commit", "subject": "'))
        for _ in range(size >> 20):
            fh.write(squeeze.compress(chunk))
        fh.write(squeeze.compress(b'"}\n' + commit_line(3).encode()))
        fh.write(squeeze.flush())
    return path


def test_a_huge_history_line_costs_a_chunk_of_memory_not_the_line(tmp_path):
    export = huge_line_export(tmp_path / "h.jsonl.gz", 512 << 20)  # 512 MiB in ~0.5 MB
    assert export.stat().st_size < 2 << 20
    peak, done = peak_rss_mb(["import-jsonl", str(export)], {"RADAR_HOME": str(tmp_path / "home")})
    # reading the line whole took 1.2 GB (the text, its decoding, json); the bounded reader holds one cap
    assert peak < 400, (peak, done.stderr)
    assert done.returncode == 1  # a line was skipped: said, and the rest imported
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert errors[0] == (f"error: skipped {export}:3: line longer than 33,554,432 bytes (the line cap, "
                         "RADAR_MAX_LINE_BYTES): skipped"), done.stderr
    assert "2 new" in done.stdout


def test_an_over_long_line_is_skipped_by_file_line_and_cap_and_the_rest_imported(tmp_path, monkeypatch):
    monkeypatch.setenv("RADAR_MAX_LINE_BYTES", "4096")
    export = tmp_path / "h.jsonl"
    export.write_text(HEADER + commit_line(1) + commit_line(2, "x" * 10_000) + commit_line(3)
                      + commit_line(4, "y" * 3900) + commit_line(5, "z" * 5000), encoding="utf-8")
    result = CliRunner().invoke(main, ["import-jsonl", str(export)])
    assert result.exit_code == 1 and "3 new" in result.output, result.output
    skipped = [ln for ln in result.output.splitlines() if ln.startswith("error: skipped")]
    assert [ln.split(": ")[1].rsplit(":", 1)[1] for ln in skipped] == ["3", "6"], skipped
    assert all("4,096 bytes (the line cap, RADAR_MAX_LINE_BYTES)" in ln for ln in skipped)


def test_an_over_long_first_line_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("RADAR_MAX_LINE_BYTES", "2048")
    export = tmp_path / "h.jsonl.gz"
    with gzip.open(export, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"kind": "repo", "full_name": "acme/infer", "pad": "p" * 5000}) + "\n")
    result = CliRunner().invoke(main, ["import-jsonl", str(export)])
    errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert result.exit_code == 1 and len(errors) == 1 and f"{export}:1: line longer than 2,048 bytes" in errors[0]


@pytest.mark.no_store
@pytest.mark.parametrize("value", ["abc", "0", "-5", "inf", "1e99"])
def test_a_bad_line_or_page_cap_names_its_variable(value):
    for name in ("RADAR_MAX_LINE_BYTES", "RADAR_MAX_PAGE_BYTES", "RADAR_PIPE_WAIT"):
        result = CliRunner().invoke(main, ["show", "acme/infer#1"], env={name: value})
        assert result.exit_code == 1 and name in result.output and "Traceback" not in result.output


def test_a_huge_page_is_refused_naming_the_file_and_the_cap_within_bounded_memory(tmp_path):
    page = tmp_path / "page.txt"
    with open(page, "wb") as fh:
        fh.write(b"Fix the rope kernel #12\nOpen\n")
        line = b"a comment that goes on " * 40 + b"\n"
        for _ in range((96 << 20) // len(line)):
            fh.write(line)
    peak, done = peak_rss_mb(["import-page", str(page), "--repo", "acme/infer"],
                             {"RADAR_HOME": str(tmp_path / "home")})
    assert peak < 300, (peak, done.stderr)  # the whole page and its parse took over a gigabyte
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert done.returncode == 1 and len(errors) == 1, done.stderr
    assert errors[0] == (f"error: {page}: larger than 16,777,216 bytes, the page size cap (RADAR_MAX_PAGE_BYTES): "
                         "not a page copied from a browser; split it or raise the cap")


def test_a_page_from_a_pipe_is_read_only_up_to_the_cap(tmp_path, monkeypatch):
    monkeypatch.setenv("RADAR_MAX_PAGE_BYTES", "1024")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", f"open({str(fifo)!r}, 'wb').write(b'x' * 100_000)"])
    result = CliRunner().invoke(main, ["import-page", str(fifo), "--repo", "acme/infer", "--number", "3"])
    writer.kill()
    writer.wait()
    assert result.exit_code == 1 and "larger than 1,024 bytes, the page size cap" in result.output


def _dry_run_prompts(tmp_path: Path, body: str, name: str) -> str:
    export = tmp_path / f"{name}.jsonl"
    rows = [{"kind": "repo", "full_name": "acme/infer"},
            {"kind": "commit", "sha": "a" * 40, "subject": "[Perf] Fuse the rope kernel into attention (#7)",
             "committed_at": "2026-07-01T10:00:00Z", "body": body,
             "files": [{"path": "infer/ops/rope.py", "additions": 300, "deletions": 20}]}]
    export.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    env = {"RADAR_HOME": str(tmp_path / name), "RADAR_LLM_BASE_URL": "http://127.0.0.1:9/v1", "RADAR_LLM_MODEL": "m"}
    runner = CliRunner()
    assert runner.invoke(main, ["import-jsonl", str(export)], env=env).exit_code == 0
    result = runner.invoke(main, ["daily", "--dry-run", "--since", "2026-07-01", "--until", "2026-07-02"], env=env)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("unit", ["decode faster with fused rope ", "融合旋转位置编码以加速解码", "x"])
def test_a_description_without_clause_punctuation_costs_its_budget_in_every_prompt(tmp_path, unit, monkeypatch):
    monkeypatch.delenv("RADAR_DB_URL", raising=False)  # two homes: each its own SQLite store
    small = _dry_run_prompts(tmp_path, "Cuts decode latency by 12%. " + unit * (20_000 // len(unit)), "small")
    big = _dry_run_prompts(tmp_path, "Cuts decode latency by 12%. " + unit * (200_000 // len(unit)), "big")
    assert "acme/infer#7" in big and len(big) < 60_000, len(big)  # headline, row and item prompts together
    assert len(big) <= len(small) + 100  # ten times the description, the same prompts
