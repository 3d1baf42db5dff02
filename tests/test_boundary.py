"""Records are checked at the boundary, one by one: hostile input is skipped with its place, never stored.

Through import-jsonl and through the GitHub stand-in, on whichever store the suite runs on (SQLite, or
PostgreSQL with RADAR_TEST_DB_URL): each bad record is reported and skipped, the rest of the batch is kept,
the run ends "ok", and every command works afterwards.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.models import FileChange, Item
from infra_radar.pipeline.home import open_store
from infra_radar.sources.records import RecordError, check_item, clean_text
from infra_radar.store import schema

from .github_stub import GitHubStub, load_repos

HUGE20 = "9" * 20
HUGE5000 = "9" * 5000
WHEN = "2026-07-01T10:00:00+00:00"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def commit(sha: str, subject: str, **over) -> dict:
    rec = {"kind": "commit", "sha": sha, "parents": ["0" * 40], "author_name": "Alice",
           "author_email": "alice@example.com", "authored_at": WHEN, "committer_name": "Alice",
           "committer_email": "alice@example.com", "committed_at": WHEN, "subject": subject,
           "body": "A body.", "files": [{"path": "engine/core/a.py", "additions": 3, "deletions": 1}]}
    rec.update(over)
    return rec


# every field of a commit record with a value of the wrong type (or out of range)
WRONG = {
    "sha": [123, None, ["x"]], "subject": [None, 5, {"a": 1}], "body": [7, ["x"]],
    "author_name": [["Alice", "Bob"], 3], "author_email": [{"x": 1}], "committer_name": [True],
    "committer_email": [1.5], "authored_at": ["yesterday", 12], "committed_at": [None, "2026-13-45", 3],
    "files": ["engine/a.py", [1], [{"path": None}], [{"path": "a.py", "additions": "-"}],
              [{"path": "a.py", "additions": "12"}], [{"path": "a.py", "deletions": -4}],
              [{"path": "a.py", "additions": 2**63}], [{"path": "a.py", "additions": True}]],
}


def hostile_export(tmp_path):
    good = [
        commit("a" * 40, "Fix scheduler (#101)", body=f"Refs #{HUGE20} and #{HUGE5000} and #7."),
        commit("b" * 40, f"Huge subject number (#{HUGE5000})", body=f"see https://github.com/acme/x/pull/{HUGE20}"),
        commit("c" * 40, "NUL in the body (#102)", body="before\x00after"),
        commit("d" * 40, "Lone surrogate \ud800 in the title (#103)", body="tail \udfff end"),
        commit("e" * 40, "Binary file (#104)", files=[{"path": "logo.png", "additions": None, "deletions": None}]),
        commit("f" * 40, f"[{HUGE20}/2] part marker of a giant (#105)", body=f"#{HUGE20} " * 50),
        commit("9" * 40, "Figures too large for a float (#106)",
               body=f"| State | TTFT | TPS |\n|---|---|---|\n| baseline | {'9' * 400} ms | 1 |\n| new | 5 ms | 2 |\n"),
    ]
    bad = []
    for field, values in WRONG.items():
        for i, value in enumerate(values):
            rec = commit(f"{len(bad):040x}", f"bad {field} {i} (#{200 + len(bad)})")
            rec[field] = value
            bad.append(rec)
    bad += [{"kind": "tag", "name": ["v1"], "target": "a" * 40}, {"kind": "tag", "name": "v2", "created_at": 5},
            {"kind": "nonsense"}, ["not", "an", "object"], {"kind": "commit"}]
    lines = [json.dumps({"kind": "repo", "full_name": "acme/hostile", "ref": "HEAD"})]
    order = []
    for i in range(max(len(good), len(bad))):  # interleaved: bad records sit inside the batch of good ones
        for group, rec in (("good", good[i] if i < len(good) else None), ("bad", bad[i] if i < len(bad) else None)):
            if rec is not None:
                lines.append(json.dumps(rec))
                order.append(group)
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    bad_lines = {i + 2 for i, group in enumerate(order) if group == "bad"}
    return path, len(good), bad_lines


def check_every_command(tmp_path, repo: str, number: int) -> None:
    since, until = "2026-06-01", "2026-09-01"
    for args in (["daily", "--since", since, "--until", until], ["weekly", "--repo", repo, "--since", since,
                 "--until", until], ["show", f"{repo}#{number}"], ["export"],
                 ["site", "build", str(tmp_path / "site")],
                 ["push", "daily", "--to", "slack", "--dry-run", "--since", since, "--until", until],
                 ["push", "weekly", "--to", "feishu", "--dry-run"]):
        code, out, err = invoke(*args)
        assert code == 0, (args, err[-2000:])
        assert "Traceback" not in out + err


def stored_numbers(settings) -> set[int]:
    engine = open_store(settings)
    with engine.connect() as conn:
        found = {n for n in conn.execute(sa.select(schema.items.c.number)).scalars() if n is not None}
        link_numbers = set(conn.execute(sa.select(schema.links.c.dst_number)).scalars())
    engine.dispose()
    assert all(n < 2**31 for n in found | {n for n in link_numbers if n is not None})
    return found


def test_hostile_jsonl_records_are_skipped_by_line_and_the_rest_kept(settings, tmp_path, monkeypatch):
    monkeypatch.setenv("RADAR_SAVE_BATCH", "500")
    path, n_good, bad_lines = hostile_export(tmp_path)
    code, out, err = invoke("import-jsonl", str(path))
    assert code == 1 and "Traceback" not in err  # exit 1 says lines were skipped
    prefix = f"error: skipped {path}:"
    reported = {int(line[len(prefix):].split(":")[0]) for line in err.splitlines() if line.startswith(prefix)}
    assert f"{len(bad_lines)} malformed line(s) skipped" in err
    assert reported <= bad_lines and len(reported) == min(10, len(bad_lines))  # the CLI shows the first ten
    from infra_radar.sources.history import BodyCleaner
    from infra_radar.sources.jsonl import JsonlReport, read_jsonl

    report = JsonlReport(str(path))
    items = list(read_jsonl(path, BodyCleaner([]), report))
    assert {int(s[len(str(path)) + 1:].split(":")[0]) for s in report.skipped} == bad_lines  # every bad line, by its line number
    assert any("additions: expected an integer or null, got str '-'" in s for s in report.skipped)
    assert any("author_name: expected a string, got list" in s for s in report.skipped)
    assert len(items) == n_good
    numbers = stored_numbers(settings)
    assert {101, 102, 103, 104, 105, 106} <= numbers and not numbers & set(range(200, 300))
    engine = open_store(settings)
    with engine.connect() as conn:
        runs = conn.execute(sa.select(schema.runs.c.status)).scalars().all()
        texts = conn.execute(sa.select(schema.items.c.title, schema.items.c.body)).all()
    engine.dispose()
    assert runs == ["ok"]
    assert all("\x00" not in t + b and not any("\ud800" <= ch <= "\udfff" for ch in t + b) for t, b in texts)
    check_every_command(tmp_path, "acme/hostile", 101)
    code, out, _ = invoke("export")
    refs = {link["ref"] for item in json.loads(out) for link in item["links"]}
    assert "acme/hostile#7" in refs and not any("#" + HUGE20 in r for r in refs)  # a URL stays a URL


def hostile_nodes(pulls: list[dict]) -> tuple[list[dict], list[int]]:
    """Copies of a fixture PR node with one field made hostile each; returns them and the good numbers."""
    base = next(p for p in pulls if p.get("state") == "MERGED")
    made, good = [], []

    def node(number, **over):
        n = copy.deepcopy(base)
        # distinct times: the stand-in orders by (updatedAt, number) and must not compare a str number
        n.update({"number": number, "updatedAt": f"2026-07-30T00:00:{len(made):02d}Z", **over})
        made.append(n)
        return n

    good.append(node(9001, body=f"Refs #{HUGE20} and #{HUGE5000} and https://github.com/acme/x/pull/{HUGE20}")["number"])
    good.append(node(9002, title="NUL \x00 and lone \ud800 surrogate", body="x\x00y")["number"])
    node(2**63 + 5)
    node(9004, title=["a", "list"])
    node(9005, body={"not": "text"})
    node(9006, createdAt="not a time")
    node("9007")
    node(9008, author={"__typename": "User", "login": ["x"]})
    files = copy.deepcopy(base.get("files") or {"nodes": [], "pageInfo": {"hasNextPage": False}})
    if files.get("nodes"):
        files["nodes"][0] = {**files["nodes"][0], "additions": "-"}
        # a malformed file entry drops that entry, not the pull request (the change is marked incomplete)
        good.append(node(9009, files=files)["number"])
    return made, good


def test_hostile_github_records_are_skipped_and_the_rest_kept(settings, tmp_path):
    from infra_radar.pipeline.fetch import fetch
    from infra_radar.sources.github import Endpoints, GitHubClient

    repos = load_repos("acme/infer")
    extra, good = hostile_nodes(repos["acme/infer"].pulls)
    repos["acme/infer"].pulls = extra + repos["acme/infer"].pulls
    token = "ghp_MARKERtoken0123456789abcdefSECRET"
    engine = open_store(settings)
    with GitHubStub(repos, token=token) as stub, \
            GitHubClient(Endpoints(stub.url, stub.url + "/graphql", token), wait=lambda s, r: None) as client:
        result = fetch(settings, engine, client, ["acme/infer"], datetime(2026, 7, 1, tzinfo=UTC))
    engine.dispose()
    assert not result.errors, result.errors
    skipped = result.stats.skipped
    print("\n".join(skipped))
    assert len(skipped) == len(extra) - len(good), skipped
    assert any("#9004" in s and "title" in s for s in skipped)
    numbers = stored_numbers(settings)
    assert set(good) <= numbers and not numbers & {9004, 9005, 9006, 9007, 9008}
    assert len(numbers) > len(good)  # the fixture's own PRs are stored too
    check_every_command(tmp_path, "acme/infer", 9001)


def test_check_item_cleans_text_and_refuses_wrong_types():
    item = Item(repo="acme/x", kind="pr", key="1", number=1, title="a\x00b", body="c\ud800d")
    assert (check_item(item).title, item.body) == ("ab", "cd")
    for bad in (dict(number=2**40), dict(number=True), dict(title=["x"]), dict(state="weird"),
                dict(created_at="2026-01-01"), dict(files=[FileChange("a.py", "-", None)]), dict(labels="bug"),
                dict(repo="../etc")):
        with pytest.raises(RecordError):
            check_item(Item(**{"repo": "acme/x", "kind": "pr", "key": "1", "title": "t", **bad}))
    assert clean_text("plain") == "plain" and clean_text("\U0001F600") == "\U0001F600"
