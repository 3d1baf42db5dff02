"""Bad input meets one clear line on stderr, exit 1, and a store that lost nothing (extends test_cli.py)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.pipeline.demo import sample_files

from .conftest import commit


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 1, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err


def export_all() -> list:
    code, out, _ = invoke("export")
    assert code == 0
    return json.loads(out)


@pytest.fixture
def loaded():
    """The sample imported and analysed; yields its export so tests can check nothing was lost."""
    assert invoke("import-jsonl", *map(str, sample_files()))[0] == 0
    before = export_all()
    assert before
    yield before
    assert export_all() == before


@pytest.mark.parametrize("text, needles", [
    ('lang = "zh"\nrepos = [\n', ["invalid TOML", "line"]),
    ('deep_dive_limit = "many"\n', ["many"]),
    ('[[repos]]\nname = "acme/infer"\ncolour = "red"\n', ["unknown key(s) colour", "acme/infer"]),
    ('[[repos]]\nname = "acme"\n', ["is not OWNER/NAME"]),
    ("repos = 3\n", ["array of tables"]),
    ("deep_dive_limit = -1\n", ["deep_dive_limit must be a whole number from 0"]),
])
def test_bad_config_is_one_line_naming_the_file(tmp_path, loaded, text, needles):
    config = tmp_path / "radar.toml"
    config.write_text(text)
    code, _, err = invoke("--config", str(config), "daily")
    one_line_error(code, err, str(config), *needles)


@pytest.mark.parametrize("text", ["[[repos]]\nname = 5\n", "focus = 3\n", "[focus]\nweights = 3\n"])
def test_wrongly_typed_config_values_are_one_line(tmp_path, text):
    config = tmp_path / "radar.toml"
    config.write_text(text)
    code, _, err = invoke("--config", str(config), "daily")
    one_line_error(code, err, str(config))


@pytest.mark.parametrize("args, needles", [
    (("weekly", "--repo", "acme/infer", "--since", "2026-08-02", "--until", "2026-08-02"), ["must be before until"]),
    (("weekly", "--repo", "acme/infer", "--week", "W31-2026"), ["invalid week 'W31-2026'"]),
    (("weekly", "--repo", "acme/infer", "--week", "2026-W00"), ["has no week 0"]),
    (("daily", "--repo", "nobody/here"), ["unknown repository nobody/here", "acme/infer"]),
    (("export", "--repo", "nobody/here"), ["unknown repository nobody/here"]),
    (("export", "--since", "2026-13-01"), ["invalid time '2026-13-01'"]),
    (("weekly", "--repo", "../../x/y", "--week", "2026-W31", "--out", "out"), ["invalid repository '../../x/y'"]),
])
def test_bad_options_are_one_line(loaded, args, needles):
    one_line_error(*invoke(*args)[::2], *needles)


@pytest.mark.parametrize("name", ["../..", "a/..", "../x", "acme/in fer", 'a/"b', "a/b/c"])
def test_odd_repository_names_never_reach_the_store(tmp_path, loaded, name):
    source = sample_files()[0].read_text().splitlines()
    head = json.loads(source[0])
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join([json.dumps({**head, "full_name": name}), *source[1:]]) + "\n")
    code, _, err = invoke("import-jsonl", str(path))
    assert code == 1 and "Traceback" not in err and name in err, err


def test_weekly_out_stays_inside_dir(tmp_path, loaded):
    out = tmp_path / "deep" / "out"
    code, stdout, _ = invoke("weekly", "--repo", "ACME/INFER", "--week", "2026-W31", "--out", str(out))
    assert code == 0
    written = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_relative_to(tmp_path / "home")]
    assert [p.name for p in written] == ["2026-W31.md"]
    assert written[0].resolve().is_relative_to(out.resolve()) and str(written[0]) == stdout.strip()


def test_binary_page_is_refused_and_stores_nothing(tmp_path, loaded):
    page = tmp_path / "page.png"
    page.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    code, _, err = invoke("import-page", str(page), "--repo", "acme/infer", "--number", "77")
    one_line_error(code, err, str(page), "binary file")


def test_utf16_page_is_still_text(tmp_path):
    page = tmp_path / "page.txt"
    page.write_bytes("Fix the scheduler #42\nacme/infer\nMerged\n\nDescription.\n".encode("utf-16"))
    code, out, err = invoke("import-page", str(page), "--repo", "acme/infer", "--number", "42")
    assert code == 0 and "binary" not in err, err


def test_empty_repository_is_a_clear_message(make_repo):
    clone = make_repo()
    code, _, err = invoke("import-git", str(clone), "--repo", "acme/infer")
    one_line_error(code, err, "has no commits yet")


def test_git_repo_without_the_branch_names_it(make_repo):
    clone = make_repo()
    commit(clone, "Init (#1)", {"a.py": "x = 1\n"}, "2026-08-01T10:00:00+00:00")
    code, _, err = invoke("import-git", str(clone), "--repo", "acme/infer", "--branches", "release/*")
    one_line_error(code, err, "no branch matches release/*")


@pytest.mark.parametrize("cmd, says", [
    (("daily", "--since", "2020-01-01", "--until", "2020-01-02", "--lang", "en"), "no items"),
    (("weekly", "--repo", "acme/infer", "--week", "2020-W02", "--lang", "en"), "no merged prs"),
    (("daily", "--since", "2020-01-01", "--until", "2020-01-02"), "没有条目"),
])
def test_window_without_items_says_so(loaded, cmd, says):
    code, out, _ = invoke(*cmd)
    assert code == 0 and out.startswith("# ")
    assert says in out.lower(), out


def test_ten_megabyte_body_imports_and_analyses(tmp_path):
    # mostly log-like filler with a claim and references every 40 lines, like a pasted benchmark dump
    filler = "step 1200 loss 2.31 lr 3e-4 grad_norm 0.82 tokens/s 41000 rank 3 of 16 ok\n" * 39
    claim = "decode latency 12.3 ms -> 9.1 ms on 910B, see #123 and https://github.com/acme/infer/pull/77\n"
    block = filler + claim
    body = block * (10_000_000 // len(block))
    assert len(body) > 9_900_000
    head = {"kind": "repo", "full_name": "acme/big", "ref": "HEAD", "head": "a" * 40}
    rec = {"kind": "commit", "sha": "a" * 40, "parents": ["b" * 40], "author_name": "x", "author_email": "x@y.z",
           "authored_at": "2026-08-03T09:00:00+08:00", "committer_name": "GitHub", "committer_email": "n@g.com",
           "committed_at": "2026-08-03T09:00:00+08:00", "subject": "[Perf] Faster decode (#900)", "body": body,
           "files": [{"path": "a.py", "additions": 1, "deletions": 1}]}
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps(head) + "\n" + json.dumps(rec) + "\n")
    # that it finishes is the test; its linearity is proved in tests/test_linear.py (sizes, not seconds)
    assert invoke("import-jsonl", str(path))[0] == 0
    code, out, _ = invoke("analyze")
    assert code == 0 and "analysed 1 item" in out
    (item,) = export_all()
    assert item["number"] == 900
    assert any(claim["before"] == 12.3 for claim in item["perf_claims"]), item["perf_claims"]


def _row(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(name + " "))


def test_doctor_says_what_is_missing_and_how_to_fix_it(tmp_path, monkeypatch):
    for var in ("GITHUB_TOKEN", "GH_TOKEN", "RADAR_LLM_BASE_URL", "RADAR_SLACK_WEBHOOK"):
        monkeypatch.delenv(var, raising=False)
    code, out, err = invoke("doctor", "--offline")
    assert code == 1 and "required check(s) failed: store" in err
    assert "missing" in _row(out, "store") and "radar init" in _row(out, "store")
    assert "GITHUB_TOKEN" in _row(out, "github token")
    assert invoke("init")[0] == 0
    code, out, _ = invoke("doctor", "--offline")
    assert code == 0 and "OK" in _row(out, "store") and "0 items" in _row(out, "store")
    config = tmp_path / "radar.toml"
    config.write_text("colour = 1\n")
    code, out, _ = invoke("--config", str(config), "doctor", "--offline")
    assert code == 1 and "unknown key(s) colour" in _row(out, "config")


def test_doctor_checks_the_llm_endpoint_within_three_seconds(monkeypatch):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: nothing listens there
    monkeypatch.setenv("RADAR_LLM_BASE_URL", f"http://user:pw@127.0.0.1:{port}/v1")
    assert invoke("init")[0] == 0
    code, out, _ = invoke("doctor")  # a refused connection answers at once; doctor's own TIMEOUT bounds the rest
    row = _row(out, "llm")
    assert code == 0 and "FAIL" in row and "unreachable" in row and "pw" not in out


def _without_root_powers() -> list[str]:
    """A command prefix under which file permissions hold: as root, setpriv drops the capabilities that
    bypass them (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH); as another user nothing is needed."""
    import os
    import shutil
    import subprocess

    if os.geteuid() != 0:
        return []
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
    if not shutil.which("setpriv") or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("running as root and setpriv cannot drop CAP_DAC_OVERRIDE here: permissions do not hold")
    return prefix


@pytest.mark.parametrize("locked", ["file", "folder"])
def test_a_read_only_store_is_one_line_naming_it_and_loses_nothing(tmp_path, locked):
    """A SQLite store whose file (or folder) is read-only: a command that writes says so in one line naming
    the file, and the store is left as it was. (This test opens its own SQLite file, on both passes.)"""
    import hashlib
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    db = home / "radar.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RADAR_")}
    env.update(RADAR_HOME=str(home), RADAR_DB_URL=f"sqlite:///{db}")
    radar = [sys.executable, "-m", "infra_radar"]
    done = subprocess.run([*radar, "import-jsonl", *map(str, sample_files())], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    target = db if locked == "file" else home
    os.chmod(target, 0o444 if locked == "file" else 0o555)
    try:
        for args in (["import-jsonl", *map(str, sample_files())], ["daily", "--since", "2026-08-01"]):
            run = subprocess.run([*_without_root_powers(), *radar, *args], env=env, capture_output=True, text=True)
            one_line_error(run.returncode, run.stderr, str(db), "read-only")
    finally:
        os.chmod(target, 0o644 if locked == "file" else 0o755)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
