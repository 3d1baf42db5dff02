"""`radar show` and `radar show --evidence` print author text (a description, a diff's file names) that may hold
terminal escapes: ESC colour and OSC title sequences, BEL, CR, C1 controls. None reaches the terminal raw; each is
shown as its escape, and the JSON output still reads back to the author's text."""

from __future__ import annotations

import gzip
import json
import re

from click.testing import CliRunner

from infra_radar.cli import main

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
OSC = "\x1b]0;owned\x07"
HOSTILE = f"{OSC}\x1b[31mred\x1b[0m \x9b2J\r\x08"


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.stdout


def test_show_and_its_evidence_neutralise_terminal_escapes(tmp_path):
    when = "2026-07-12T10:00:00+00:00"
    body = (f"## Motivation\nThe worker hangs when the queue is full {HOSTILE}.\n\n## Modifications\n"
            f"Throughput 1200 tok/s vs 1000 tok/s {HOSTILE} on 8 NPUs. Set `VLLM_FAST=1` to enable.\n")
    records = [{"kind": "repo", "full_name": "acme/term", "ref": "main", "range": "main", "head": "0" * 40},
               {"kind": "commit", "sha": "1" * 40, "parents": ["f" * 40], "author_name": f"a{OSC}",
                "author_email": "a@b.c", "authored_at": when, "committer_name": "GitHub",
                "committer_email": "noreply@github.com", "committed_at": when,
                "subject": f"Speed up the NPU decode {HOSTILE} (#101)", "body": body,
                "files": [{"path": f"vllm_ascend/x{OSC}.py", "additions": 10, "deletions": 1}]}]
    path = tmp_path / "acme+term.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    _cli("import-jsonl", str(path))
    shown = {args: _cli("show", "acme/term#101", *args) for args in ((), ("--evidence",), ("--json",),
                                                                      ("--evidence", "--json"))}
    for args, text in shown.items():
        assert not CONTROL.search(text), (args, CONTROL.findall(text)[:5])
        assert "\u2028" not in text and "\u2029" not in text
    assert "\\u001b]0;owned\\u0007" in shown[("--evidence",)]  # shown as escapes, not dropped
    read_back = json.loads(shown[("--evidence", "--json")])
    assert any("\x1b[31mred" in r["text"] or "\x1b[31mred" in r["statement"] for r in read_back)
    assert "\x9b2J" in json.loads(shown[("--json",)])["title"]
