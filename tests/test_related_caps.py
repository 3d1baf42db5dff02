"""Related items are capped per kind, so output stays linear in hostile history: an item lists at most
links.toml [related] max_per_kind items of one kind (duplicates, parts of a split change, items referencing it,
story members), the nearest by number, with the count of the rest. Proved by counting (output bytes, links
per item, comparisons made) for N and 4N items in one run, with a wide margin; never by time."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.analyse import related as related_module
from infra_radar.analyse.links import Change, compile_relation_rules
from infra_radar.analyse.related import ChangeIndex, cap_links, nearest
from infra_radar.cli import main
from infra_radar.config import load_rule_file, load_settings
from infra_radar.models import Link

K = 16  # links.toml [related] max_per_kind
N = 100  # and 4N: both past max_per_kind and max_compared (64), where quadratic output would show

TITLES = {
    "one title": lambda i: "[Bugfix] Fix the scheduler deadlock in the decode loop",
    "one word apart": lambda i: f"[Bugfix] Fix the scheduler deadlock in the decode loop number {i}",
    "parts of a split change": lambda i: f"[{i % 9 + 1}/9] Refactor the scheduler deadlock handling in decode",
    "picks of one change": lambda i: "[Cherry-pick][releases/v0.9] Fix the scheduler deadlock in the decode loop"
                                     + (" (from #1)" if i > 1 else ""),
}


def history(path: Path, n: int, title) -> Path:
    rows = [{"kind": "repo", "full_name": "acme/infer"}]
    rows += [{"kind": "commit", "sha": f"{i:040x}", "subject": f"{title(i)} (#{i})",
              "committed_at": f"2026-07-01T{(i // 60) % 24:02d}:{i % 60:02d}:00Z",
              "body": "Fixes a deadlock when the decode loop waits on the scheduler lock; refs #1.",
              "branches": ["main"],
              "files": [{"path": "infer/sched/loop.py", "additions": 3, "deletions": 1}]} for i in range(1, n + 1)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def store(tmp_path: Path, n: int, title, monkeypatch) -> dict[str, str]:
    """A store of n PRs titled by `title`, in its own home (in the PostgreSQL pass, its own schema)."""
    home = tmp_path / f"home{n}"
    env = {"RADAR_HOME": str(home), "RADAR_DB_URL": _db(home, load_settings().db_url, n)}
    result = CliRunner().invoke(main, ["import-jsonl", str(history(tmp_path / f"h{n}.jsonl", n, title))], env=env)
    assert result.exit_code == 0, result.output
    return env


def _db(home: Path, url: str, n: int) -> str:
    if not url.startswith("postgresql"):
        return f"sqlite:///{home / 'radar.db'}"
    import sqlalchemy as sa

    base, _, schema = url.rpartition("search_path%3D")
    mine = f"{schema}_n{n}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {mine} CASCADE"))
        conn.execute(sa.text(f"CREATE SCHEMA {mine}"))
    engine.dispose()
    return f"{base}search_path%3D{mine}"


def run(args: list[str], env: dict[str, str]) -> str:
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    return result.stdout if args[0] == "export" else result.output  # an export's data is its stdout (a long one says its progress on stderr)


@pytest.mark.parametrize("case", TITLES, ids=TITLES.keys())
def test_export_is_linear_in_items_sharing_a_title(tmp_path, monkeypatch, case):
    sizes, per_item = {}, {}
    for n in (N, 4 * N):
        exported = run(["export"], store(tmp_path, n, TITLES[case], monkeypatch))
        objects = json.loads(exported)
        assert len(objects) == n
        sizes[n] = len(exported.encode())
        related = [[lk for lk in o["links"] if lk["kind"] in ("duplicate", "follow-up")] for o in objects]
        per_item[n] = max(len(r) for r in related)
        assert per_item[n] <= 2 * K  # at most K of each of the two kinds
        for o in objects:
            kinds = {}
            for lk in o["links"]:
                kinds[lk["kind"]] = kinds.get(lk["kind"], 0) + 1
            assert all(count <= K for kind, count in kinds.items() if kind != "references"), kinds
    assert sizes[4 * N] < 5 * sizes[N], sizes  # 4x the items: ~4x the bytes (16x when every copy listed all)
    assert per_item[4 * N] == per_item[N]


def test_the_rest_is_counted_and_the_nearest_are_listed(tmp_path, monkeypatch):
    env = store(tmp_path, 4 * N, TITLES["one title"], monkeypatch)
    card = json.loads(run(["show", "--json", f"acme/infer#{2 * N}"], env))
    listed = sorted(int(lk["ref"].rsplit("#", 1)[1]) for lk in card["links"] if lk["kind"] == "duplicate")
    assert len(listed) == K and card["links_omitted"] == {"duplicate": 4 * N - 1 - K}
    assert max(abs(n - 2 * N) for n in listed) <= K // 2 + 1  # the nearest, by number
    text = run(["show", "--lang", "en", f"acme/infer#{2 * N}"], env)
    assert f"and {4 * N - 1 - K} more PRs with a similar title not listed" in text
    # the one they all reference: K of those referencing it, the rest counted
    first = json.loads(run(["show", "--json", "acme/infer#1"], env))
    back = [lk for lk in first["links"] if lk["kind"].startswith("referenced-by")]
    assert len(back) == K and sum(v for k, v in first["links_omitted"].items() if k.startswith("referenced-by")) \
        == 4 * N - 1 - K


def test_comparisons_per_item_are_bounded(tmp_path, monkeypatch):
    calls = {"n": 0}
    similarity = related_module.title_similarity

    def counted(a: str, b: str) -> float:
        calls["n"] += 1
        return similarity(a, b)

    monkeypatch.setattr(related_module, "title_similarity", counted)
    rules = compile_relation_rules(load_rule_file("links", load_settings()))
    made = {}
    for n in (N, 4 * N):
        env = store(tmp_path, n, TITLES["one word apart"], monkeypatch)
        calls["n"] = 0
        run(["export"], env)
        made[n] = calls["n"]
        assert made[n] <= n * rules.max_compared
    assert made[4 * N] <= 5 * made[N], made


def test_site_and_daily_are_linear_in_items_sharing_a_title(tmp_path, monkeypatch):
    pages, lines = {}, {}
    for n in (N, 4 * N):
        env = store(tmp_path, n, TITLES["picks of one change"], monkeypatch)
        out = tmp_path / f"site{n}"
        run(["site", "build", str(out)], env)
        item_pages = [p.stat().st_size for p in (out / "items").rglob("*.html")]
        pages[n] = max(item_pages)
        daily = run(["daily", "--since", "2026-07-01", "--until", "2026-07-02"], env)
        lines[n] = max(len(ln) for ln in daily.splitlines())
        assert re.search(r"另有 \d+ 项", daily), "a story of hundreds names a few and counts the rest"
    assert pages[4 * N] <= pages[N] * 1.2, pages  # the largest page does not grow with the copies
    assert lines[4 * N] <= lines[N] + 20, lines  # nor the longest daily line (a story's row)


# --- the pieces --------------------------------------------------------------------------------------

@pytest.mark.no_store
def test_nearest_takes_the_closest_numbers_by_bisection():
    assert nearest([1, 2, 3, 10, 11, 50], 9, 3) == [10, 11, 3]
    assert nearest([1, 2, 3], 2, 5) == [1, 3]
    assert nearest(list(range(0, 10**6, 2)), 500_001, 2) == [500_000, 500_002]


@pytest.mark.no_store
def test_cap_links_keeps_the_nearest_of_each_kind_in_order_and_counts_the_rest():
    links = [Link("referenced-by:references", "acme/infer", n) for n in range(1, 41) if n != 20]
    links += [Link("referenced-by:fixes", "acme/infer", 7)]
    kept, rest = cap_links(links, 20, 4)
    assert [lk.number for lk in kept if lk.kind.endswith("references")] == [18, 19, 21, 22]
    assert rest == {"referenced-by:references": 35}
    assert any(lk.kind.endswith("fixes") for lk in kept)


@pytest.mark.no_store
def test_one_title_repeated_is_one_group_and_counted_from_its_size():
    rules = compile_relation_rules(load_rule_file("links", load_settings()))
    index = ChangeIndex("acme/infer", [Change(n, "Fix the scheduler deadlock in decode") for n in range(1, 5001)],
                        rules)
    assert len(index.members) == 1
    found = index.candidates(Change(2500, "Fix the scheduler deadlock in decode"), rules.max_compared)
    assert found.total == 4999 and len(found.nearest) == rules.max_compared
    assert max(abs(n - 2500) for n in found.nearest) == rules.max_compared // 2
