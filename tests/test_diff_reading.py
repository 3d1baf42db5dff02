"""How a clone's diff is read into code facts: renames (no content change, no facts), symbolic links (their target
is no code), paths holding spaces and " b/", and a line of any length read in bounded memory."""

from __future__ import annotations

import os
import tracemalloc

import pytest

from infra_radar.analyse.code_facts import load_code_rules
from infra_radar.sources.diffs import DiffLog, facts_of_commit, facts_of_diff

from .conftest import commit, git

pytestmark = pytest.mark.no_store

CFG = "import os\n\n\nclass Cfg:\n    fast_path: bool = True\n    block: int = 128\n\n\n" \
      "def level():\n    return os.getenv(\"ACME_LEVEL\", \"2\")\n"


def _nothing_said(facts: dict) -> None:
    for kind in ("defaults", "switches", "version_gates", "device_checks", "removed"):
        assert facts[kind] == [], (kind, facts[kind])


def test_a_pure_rename_is_no_change_of_defaults_switches_or_files(make_repo):
    repo = make_repo()
    commit(repo, "init", {"acme/config.py": CFG}, "2026-07-01T10:00:00+00:00")
    git(repo, "mv", "acme/config.py", "acme/settings.py")
    sha = commit(repo, "move config (no functional change)", {}, "2026-07-02T10:00:00+00:00")
    facts = facts_of_commit(repo, sha, load_code_rules())
    _nothing_said(facts)
    # a rename with one line changed says that line only
    git(repo, "mv", "acme/settings.py", "acme/cfg.py")
    sha = commit(repo, "move and turn the fast path off", {"acme/cfg.py": CFG.replace("= True", "= False")},
                 "2026-07-03T10:00:00+00:00")
    facts = facts_of_commit(repo, sha, load_code_rules())
    assert facts["defaults"] == [{"name": "fast_path", "value": "False", "previous": "True", "file": "acme/cfg.py"}]
    assert facts["switches"] == [] and facts["removed"] == []


def test_a_symlinks_target_is_not_a_setting(make_repo):
    repo = make_repo()
    commit(repo, "init", {"README.md": "x\n"}, "2026-07-01T10:00:00+00:00")
    os.symlink("use_fast: true", repo / "fast.yaml")
    os.symlink('os.getenv("ACME_MODE", "1")', repo / "mode.py")
    sha = commit(repo, "link the configs", {}, "2026-07-02T10:00:00+00:00")
    _nothing_said(facts_of_commit(repo, sha, load_code_rules()))


def test_a_path_with_spaces_and_b_slash_keeps_its_facts_and_its_name(make_repo):
    repo = make_repo()
    name = "dir/a b/c.py"
    commit(repo, "init", {"README.md": "x\n"}, "2026-07-01T10:00:00+00:00")
    sha = commit(repo, "add", {name: "class C:\n    fast: bool = True\n"}, "2026-07-02T10:00:00+00:00")
    facts = facts_of_commit(repo, sha, load_code_rules())
    assert facts["defaults"] == [{"name": "fast", "value": "True", "previous": None, "file": name}]
    sha = commit(repo, "remove", {name: None}, "2026-07-03T10:00:00+00:00")
    facts = facts_of_commit(repo, sha, load_code_rules())
    assert {"name": name, "kind": "file", "file": name} in facts["removed"]
    assert [r for r in facts["removed"] if r["kind"] == "file"] == [{"name": name, "kind": "file", "file": name}]


def test_a_renamed_header_without_a_rename_line_and_a_bare_patch():
    rules = load_code_rules()
    lines = ["diff --git a/x b/old.py b/x b/new.py", "similarity index 90%", "rename from x b/old.py",
             "rename to x b/new.py", "--- a/x b/old.py", "+++ b/x b/new.py", "@@ -1 +1 @@",
             "-    fast: bool = True", "+    fast: bool = False"]
    facts = facts_of_diff(rules, lines, "page")
    assert facts["defaults"] == [{"name": "fast", "value": "False", "previous": "True", "file": "x b/new.py"}]


def _peak(repo, size: int, when: str) -> int:
    sha = commit(repo, f"minified {size}", {"acme/blob.py": "x = '" + "a" * size + "'\n"}, when)
    tracemalloc.start()
    try:
        for _sha, _facts in DiffLog(repo, ["-1", sha], load_code_rules()).commits():
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_huge_one_line_file_is_read_in_bounded_memory(make_repo):
    repo = make_repo()
    commit(repo, "init", {"README.md": "x\n"}, "2026-07-01T10:00:00+00:00")
    small = _peak(repo, 1 << 20, "2026-07-02T10:00:00+00:00")
    big = _peak(repo, 8 << 20, "2026-07-03T10:00:00+00:00")
    # read whole, the line costs its size (8 MB against 1 MB); read in chunks, the same few chunks either way
    assert big < 2 * small and big < 1 << 20, (small, big)
