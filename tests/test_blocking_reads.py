"""Every file the radar is given is opened without blocking, checked to be a regular file and read up to a cap
(guard/files.py): a FIFO nobody writes to, /dev/zero or a huge file is one line naming it, never a wait for ever
nor a read without end. Each command runs in a subprocess whose timeout is only a safety net: the assertions
are on what it said."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PAGES = Path(__file__).parent / "data" / "pages"


def _radar(home: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "RADAR_HOME": str(home), **(env or {})}
    return subprocess.run([sys.executable, "-m", "infra_radar", *args], capture_output=True, text=True, env=full,
                          timeout=600, stdin=subprocess.DEVNULL)


def _errors(done: subprocess.CompletedProcess) -> list[str]:
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr, done.stderr
    return [line for line in done.stderr.splitlines() if line.startswith("error:")]


def test_a_fifo_and_a_device_among_page_files_are_named_and_the_other_pages_imported(radar_home, tmp_path):
    fifo = tmp_path / "pasted.txt"
    os.mkfifo(fifo)  # nobody writes to it: the import waited on it for ever
    pages = [PAGES / "github_full.txt", fifo, Path("/dev/zero"), PAGES / "gitlab_mr.txt"]
    done = _radar(radar_home, "import-page", *map(str, pages), env={"RADAR_PIPE_WAIT": "0.5"})
    errors = _errors(done)
    assert done.returncode == 1 and len(errors) == 3, done.stderr
    assert errors[0].startswith(f"error: {fifo}: a pipe with nothing written to it for 0.5 s"), errors
    assert errors[1] == "error: /dev/zero: not a regular file (a device); give the path of a file", errors
    assert errors[2] == "error: 2 of 4 page(s) not imported; the others were"
    assert done.stdout.count(" new, ") == 2 and "github_full.txt" in done.stdout and "gitlab_mr.txt" in done.stdout


@pytest.mark.one_store
def test_a_page_written_through_a_fifo_is_still_read(radar_home, tmp_path):
    fifo = tmp_path / "pasted.txt"
    os.mkfifo(fifo)
    text = (PAGES / "github_full.txt").read_bytes()
    writer = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(1); open({str(fifo)!r}, 'wb').write("
                               f"open({str(PAGES / 'github_full.txt')!r}, 'rb').read())"])
    try:
        done = _radar(radar_home, "import-page", str(fifo), env={"RADAR_PIPE_WAIT": "120"})
    finally:
        writer.wait(timeout=600)
    assert done.returncode == 0 and not _errors(done) and "description:" in done.stdout, done.stderr
    assert len(text) > 1000


@pytest.mark.one_store
def test_a_fifo_nobody_writes_to_given_to_import_jsonl_is_named(radar_home, tmp_path):
    fifo = tmp_path / "export.jsonl"
    os.mkfifo(fifo)
    done = _radar(radar_home, "import-jsonl", str(fifo), env={"RADAR_PIPE_WAIT": "0.5"})
    errors = _errors(done)
    assert done.returncode == 1 and len(errors) == 1, done.stderr
    assert errors[0].startswith(f"error: {fifo}: a pipe with nothing written to it for 0.5 s"), errors
    done = _radar(radar_home, "import-jsonl", "/dev/zero")  # copied to a temporary file without end before
    assert _errors(done) == ["error: /dev/zero: not a regular file (a device); give the path of a file"], done.stderr


@pytest.mark.parametrize("kind", ["fifo", "zero", "huge"])
def test_a_rule_file_that_is_a_fifo_a_device_or_huge_makes_show_say_so(sample_store, radar_home, tmp_path, kind):
    rules = tmp_path / "rules"
    rules.mkdir()
    rule = rules / "kinds.toml"
    if kind == "fifo":
        os.mkfifo(rule)  # `radar show` waited on it for ever
    elif kind == "zero":
        rule.symlink_to("/dev/zero")  # `radar show` read it without end
    else:
        with open(rule, "wb") as fh:
            fh.write((b"#" * 31 + b"\n") * (17 << 20 >> 5))  # 17 MiB of comments: past the 16 MiB cap
    radar_home.mkdir(parents=True, exist_ok=True)  # on PostgreSQL the store leaves no file there
    (radar_home / "radar.toml").write_text(f'rules_dir = "{rules}"\n', encoding="utf-8")
    done = _radar(radar_home, "show", "acme/infer#1853")
    errors = _errors(done)
    assert done.returncode != 0 and len(errors) == 1, done.stderr
    assert errors[0].startswith(f"error: {rule}: "), errors
    assert {"fifo": "not a regular file (a pipe)", "zero": "not a regular file (a device)",
            "huge": "larger than 16 MiB"}[kind] in errors[0], errors


@pytest.mark.no_store
def test_a_labels_file_or_a_prompt_that_is_a_fifo_is_refused(tmp_path):
    fifo = tmp_path / "labels.jsonl"
    os.mkfifo(fifo)
    code = ("import sys\nfrom pathlib import Path\nfrom infra_radar.errors import RadarError\n"
            "from infra_radar.evaluate.labels import load_labels\nfrom infra_radar.llm.prompts import _user_prompt\n"
            "for call in (lambda: load_labels(Path(sys.argv[1])), lambda: _user_prompt(sys.argv[1], 'item', (0, 0))):\n"
            "    try:\n        call()\n    except RadarError as exc:\n        print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, timeout=600)
    assert done.stdout.splitlines() == [f"{fifo}: not a regular file (a pipe); give the path of a file"] * 2, \
        done.stdout + done.stderr
