"""`radar show` reads a ready SQLite store through stdlib sqlite3, never importing SQLAlchemy (pipeline/card.py), and
gives exactly the card the SQLAlchemy path gives; anything not ready falls back to that path, which analyses
first. Counted and compared, never timed (bench/show_card.py prints the times)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.config import load_settings
from infra_radar.errors import NotFoundError
from infra_radar.pipeline.analysis import work_left
from infra_radar.pipeline.card import fast_card, parse_ref, read_card
from infra_radar.pipeline.demo import sample_files
from infra_radar.pipeline.home import open_store
from infra_radar.render.markdown import card_json, render_card
from infra_radar.store.ledger import adapted_by_upstream
from infra_radar.store.reader import open_sqlite

from .conftest import SHARED, TEST_DB_URL
from .test_badinput import _without_root_powers

sqlite_only = pytest.mark.skipif(bool(TEST_DB_URL), reason="the stdlib read path is for SQLite stores")

# `radar ARGS` in a fresh interpreter that says on its last stderr line whether SQLAlchemy was imported
PROBE = """
import sys
from infra_radar.cli import main
try:
    main(sys.argv[1:], prog_name="radar")
finally:
    print("sqlalchemy imported:", "sqlalchemy" in sys.modules, file=sys.stderr)
"""


def probe(*args: str, prefix: tuple[str, ...] = (), **env: str) -> tuple[int, str, str, bool]:
    """(exit code, stdout, stderr without the probe's line, whether SQLAlchemy was imported) of `radar args`."""
    run = subprocess.run([*prefix, sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                         timeout=300, env={**os.environ, **env})
    *err, last = run.stderr.splitlines() or [""]
    assert last.startswith("sqlalchemy imported:"), run.stderr
    return run.returncode, run.stdout, "\n".join(err), last.endswith("True")


def cli(*args: str) -> None:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output


@pytest.fixture
def sample_store(tmp_path) -> str:
    """A SQLite store holding the bundled sample, analysed (whichever store the suite runs on)."""
    url = f"sqlite:///{tmp_path / 'sample' / 'radar.db'}"
    cli("--db", url, "import-jsonl", *map(str, sample_files()))
    cli("--db", url, "analyze")
    return url


def all_refs(url: str) -> list[str]:
    """Every item that has a number, every upstream PR known only from the ledger, and one unknown ref."""
    engine = open_store(load_settings(db_url=url))
    with engine.connect() as conn:
        import sqlalchemy as sa

        rows = conn.execute(sa.text("SELECT repos.name, items.number FROM items JOIN repos ON repos.id = "
                                    "items.repo_id WHERE items.number IS NOT NULL")).all()
    upstream = [f"{repo}#{n}" for repo, n in adapted_by_upstream(engine)]
    engine.dispose()
    return sorted({f"{name}#{n}" for name, n in rows} | set(upstream)) + ["nobody/nothing#1"]


RELATIONS = ("unknown upstream", "referenced_by", "duplicates", "chain", "related", "adapted")


def cards(settings, db, refs: list[str], seen: Counter, rendered: bool) -> dict[str, tuple]:
    """Each ref's card (zh and en Markdown) and export object (JSON text), or with `rendered` False the card's
    input itself (what both are rendered from, purely), or its not-found line; `seen` counts the cards showing
    each kind of relation."""
    out: dict[str, tuple] = {}
    for ref in refs:
        try:
            inp = read_card(settings, db, *parse_ref(ref))
        except NotFoundError as exc:
            out[ref] = (str(exc),)
            continue
        seen.update(kind for kind in RELATIONS[1:] if getattr(inp, kind))
        seen["unknown upstream"] += not inp.known
        out[ref] = (render_card(inp, "zh"), render_card(inp, "en"),
                    json.dumps(card_json(inp), ensure_ascii=False, indent=2)) if rendered else (inp,)
    return out


def assert_same_cards(url: str, rendered: bool = True) -> Counter:
    """The stdlib sqlite3 reader and the SQLAlchemy engine give identical cards for every ref of the store
    (`rendered` False: identical card inputs, every field equal, which the renderers turn into identical text);
    how many refs, and how many cards show each kind of relation."""
    settings = load_settings(db_url=url)
    refs = all_refs(url)
    assert fast_card(settings, refs[0], False, None) is not None  # the store is ready: `show` reads it fast
    seen: Counter = Counter(refs=len(refs))
    db = open_sqlite(url.removeprefix("sqlite:///"))
    try:
        fast = cards(settings, db, refs, seen, rendered)
    finally:
        db.close()
    engine = open_store(settings)
    slow = cards(settings, engine, refs, Counter(), rendered)
    engine.dispose()
    assert fast.keys() == slow.keys()
    differ = [ref for ref in refs if fast[ref] != slow[ref]]
    assert not differ, (differ[:5], fast[differ[0]], slow[differ[0]])
    return seen


@sqlite_only
def test_every_card_of_the_sample_is_the_same_on_both_paths(sample_store):
    assert assert_same_cards(sample_store)["refs"] > 80


@pytest.fixture(scope="module")
def real_store(tmp_path_factory) -> str:
    """A SQLite store of real history: the smaller exports (a release branch of vllm-ascend, whose main2main
    PRs fill the ledger, one of verl, verl-omni, vllm-omni) and every pasted page, analysed."""
    if not (SHARED / "git").is_dir() or TEST_DB_URL:
        pytest.skip("needs ../shared/data and the SQLite pass")
    url = f"sqlite:///{tmp_path_factory.mktemp('real') / 'radar.db'}"
    names = ["vllm-project+vllm-ascend@releases+v0.23.0", "verl-project+verl@release+v0.8.0",
             "verl-project+verl-omni", "vllm-project+vllm-omni"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(tmp_path_factory.mktemp("real-home")))
        cli("--db", url, "import-jsonl", *(str(SHARED / "git" / f"{n}.jsonl.gz") for n in names))
        cli("--db", url, "import-page", *(str(page) for page in sorted((SHARED / "pages").rglob("*.txt"))))
        cli("--db", url, "analyze")
    return url


def test_every_card_of_real_history_is_the_same_on_both_paths(real_store):
    seen = assert_same_cards(real_store, rendered=False)  # the sample's test compares the rendered text too
    assert seen["refs"] > 700 and all(seen[kind] for kind in RELATIONS), seen


@sqlite_only
def test_show_on_a_ready_store_never_imports_sqlalchemy_and_prints_the_same(sample_store):
    for args in (["show", "acme/infer-npu#814"], ["show", "--json", "acme/infer-npu#814"],
                 ["show", "--lang", "en", "acme/infer#1849"]):
        code, out, err, imported = probe("--db", sample_store, *args)
        assert (code, err, imported) == (0, "", False), err
        code, slow, err, imported = probe("--db", sample_store, *args, RADAR_SHOW_SQLALCHEMY="1")
        assert (code, err, imported) == (0, "", True), err
        assert out == slow and out.strip()
    code, out, err, imported = probe("--db", sample_store, "show", "nobody/nothing#1")
    assert (code, out, imported) == (1, "", False)
    assert err == "error: nobody/nothing#1 is not in the store (import its repository first)"
    code, _, err, imported = probe("--db", sample_store, "show", "acme/infer#x")
    assert code == 1 and "invalid item reference" in err and not imported


# `radar ARGS` in a fresh interpreter that says, on its last stderr line, the modules it imported, the rule files
# it read and whether it compiled the claim rules (JSON)
COUNT = """
import json, sys
import infra_radar.config as config
from infra_radar.analyse import claim_rules
read, compiled = [], []
real_read, real_compile = config.load_rules_in, claim_rules.compile_claim_rules
config.load_rules_in = lambda name, d: read.append(name) or real_read(name, d)
claim_rules.compile_claim_rules = lambda data: compiled.append(1) or real_compile(data)
from infra_radar.cli import main
try:
    main(sys.argv[1:], prog_name="radar")
finally:
    mods = sorted(m for m in sys.modules if m.startswith("infra_radar."))
    print(json.dumps({"modules": mods, "read": read, "claims": len(compiled)}), file=sys.stderr)
"""

# what a card never needs: the daily's and the weekly's renderers, the judge and the calibration (no labels),
# the model client, the site, the evaluation and the analysis rules (the store is analysed)
NOT_FOR_A_CARD = ("infra_radar.render.daily", "infra_radar.render.weekly", "infra_radar.render.weekly_story",
                  "infra_radar.render.clusters", "infra_radar.render.recheck", "infra_radar.analyse.judge",
                  "infra_radar.analyse.learn", "infra_radar.analyse.stories", "infra_radar.llm.client",
                  "infra_radar.llm.stage", "infra_radar.publish.site", "infra_radar.evaluate.score",
                  "infra_radar.analyse.rules")


@sqlite_only
def test_a_card_imports_and_compiles_only_what_it_shows(sample_store):
    """Counted, not timed: `radar show` on a ready store imports none of the modules a card does not use, reads
    no rule file twice but the two the readiness check also reads, and compiles no claim rule (it extracts no
    figures: the flat-phrase test compiles its one pattern)."""
    import json as json_

    for args in (["show", "acme/infer-npu#814"], ["show", "--lang", "en", "acme/infer#1849"]):
        run = subprocess.run([sys.executable, "-c", COUNT, "--db", sample_store, *args], capture_output=True,
                             text=True, timeout=300)
        assert run.returncode == 0 and run.stdout.strip(), run.stderr
        seen = json_.loads(run.stderr.splitlines()[-1])
        assert not [m for m in NOT_FOR_A_CARD if m in seen["modules"]], seen["modules"]
        assert seen["claims"] == 0
        twice = sorted({name for name in seen["read"] if seen["read"].count(name) > 1})
        assert twice in ([], ["links"]), seen["read"]  # links: the relation scan's version, then the card's links
        assert not {"kinds", "topics", "priority", "bots"} & set(seen["read"])  # the analysis' rules: none


def test_a_missing_store_or_one_at_a_directory_is_the_sqlalchemy_paths_one_line(tmp_path):
    code, out, err, imported = probe("show", "acme/infer#1")  # no store yet: created, migrated, then not found
    assert (code, out, imported) == (1, "", True)
    assert err == "error: acme/infer#1 is not in the store (import its repository first)"
    if not TEST_DB_URL:
        (tmp_path / "adir.db").mkdir()
        code, out, err, imported = probe("--db", f"sqlite:///{tmp_path}/adir.db", "show", "acme/infer#1")
        assert code == 1 and "is a directory" in err and len(err.splitlines()) == 1 and imported


@sqlite_only
def test_show_falls_back_and_analyses_when_an_item_is_pending(tmp_path):
    url = f"sqlite:///{tmp_path / 'radar.db'}"
    first, *rest = map(str, sample_files())  # acme/infer-npu first
    cli("--db", url, "import-jsonl", first)
    cli("--db", url, "analyze")
    cli("--db", url, "import-jsonl", *rest)  # imported, not analysed
    settings = load_settings(db_url=url)
    engine = open_store(settings)
    assert work_left(settings, engine) > 0
    code, out, err, imported = probe("--db", url, "show", "acme/infer-npu#814")
    assert code == 0 and imported and out.strip(), err  # the SQLAlchemy path, which analysed every item
    assert work_left(settings, engine) == 0
    engine.dispose()
    code, again, _, imported = probe("--db", url, "show", "acme/infer-npu#814")
    assert (code, again, imported) == (0, out, False)  # now ready: the stdlib path, the same card


@pytest.mark.skipif(not TEST_DB_URL, reason="a PostgreSQL store")
def test_show_on_postgresql_takes_the_sqlalchemy_path():
    cli("import-jsonl", *map(str, sample_files()))
    code, out, err, imported = probe("show", "acme/infer-npu#814")
    assert code == 0 and imported and out.startswith("# [acme/infer-npu#814]"), err


@sqlite_only
@pytest.mark.parametrize("locked", ["file", "folder", "folder after a reader"])
def test_show_reads_a_read_only_store(sample_store, locked):
    """A read-only database file, or a read-only folder: with no -wal/-shm files left there (the last writer
    removed them) the file is opened immutable; with the empty ones an earlier read-only reader left, through
    them. The card is read and nothing is written, not even a lock file."""
    db = Path(sample_store.removeprefix("sqlite:///"))
    expected = probe("--db", sample_store, "show", "acme/infer-npu#814", RADAR_SHOW_SQLALCHEMY="1")[1]
    assert not db.with_name("radar.db-wal").exists()  # the SQLAlchemy path's connection checkpointed and removed it
    if locked == "folder after a reader":
        assert probe("--db", sample_store, "show", "acme/infer-npu#814")[1] == expected
        assert db.with_name("radar.db-wal").exists()  # a read-only connection cannot remove the files it made
    before = sorted(p.name for p in db.parent.iterdir()), hashlib.sha256(db.read_bytes()).hexdigest()
    target = db if locked == "file" else db.parent
    os.chmod(target, 0o444 if locked == "file" else 0o555)
    try:
        code, out, err, imported = probe("--db", sample_store, "show", "acme/infer-npu#814",
                                         prefix=tuple(_without_root_powers()))
    finally:
        os.chmod(target, 0o644 if locked == "file" else 0o755)
    assert (code, err, imported) == (0, "", False) and out == expected
    if locked != "file":
        assert sorted(p.name for p in db.parent.iterdir()) == before[0]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before[1]


HOLD_WRITING = """
import sys
import sqlalchemy as sa
from infra_radar.config import load_settings
from infra_radar.pipeline.home import open_store
from infra_radar.store import lock
lock.COMMAND = "radar test-writer"
engine = open_store(load_settings(db_url=sys.argv[1]), writer=True)
with engine.connect() as conn:
    conn.execute(sa.text("UPDATE items SET title = 'half-written' WHERE id = 1"))  # not committed
    print("writing", flush=True)
    sys.stdin.read()  # hold the lock and the transaction until the test closes our stdin
"""


@sqlite_only
def test_show_reads_while_another_process_holds_the_lock_mid_write(sample_store):
    expected = probe("--db", sample_store, "show", "--json", "acme/infer-npu#814")[1]
    writer = subprocess.Popen([sys.executable, "-c", HOLD_WRITING, sample_store], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "writing"
        code, out, err, imported = probe("--db", sample_store, "show", "--json", "acme/infer-npu#814")
        assert writer.poll() is None  # answered while the writer still held the lock and its transaction
    finally:
        writer.stdin.close()
        writer.wait(timeout=30)
    assert (code, err, imported) == (0, "", False) and out == expected  # the last committed state


# --- `radar analyze` with nothing to do (pipeline.analysis.nothing_to_analyse) ------------------------------


@sqlite_only
def test_analyze_with_nothing_to_do_never_imports_sqlalchemy_and_says_what_the_slow_path_says(tmp_path):
    url = f"sqlite:///{tmp_path / 'radar.db'}"
    first, *rest = map(str, sample_files())
    cli("--db", url, "import-jsonl", first)
    code, slow, err, imported = probe("--db", url, "analyze")  # work left: the SQLAlchemy path analyses it
    assert code == 0 and imported and not slow.startswith("analysed 0 "), err
    code, out, err, imported = probe("--db", url, "analyze")
    assert (code, err, imported) == (0, "", False)
    version = slow.rsplit("(rules ", 1)[1]
    assert out == f"analysed 0 item(s) in 0.0s (rules {version}"  # the same rules version as the slow path
    cli("--db", url, "import-jsonl", *rest)  # new items: the slow path again, which analyses them
    code, out, err, imported = probe("--db", url, "analyze")
    assert code == 0 and imported and not out.startswith("analysed 0 "), err
    settings = load_settings(db_url=url)
    engine = open_store(settings)
    assert work_left(settings, engine) == 0
    engine.dispose()


@sqlite_only
def test_analyze_waits_for_a_writer_even_with_nothing_to_do(sample_store):
    writer = subprocess.Popen([sys.executable, "-c", HOLD_WRITING, sample_store], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "writing"
        code, out, err, imported = probe("--db", sample_store, "--wait", "0", "analyze")
    finally:
        writer.stdin.close()
        writer.wait(timeout=30)
    # the lock was not free: not the stdlib answer, but the writer path, which (with --wait 0) names the holder
    assert code == 1 and imported and "radar test-writer" in err and out == "", err
