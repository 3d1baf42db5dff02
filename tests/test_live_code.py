"""Code facts read from live code only: commented-out code, docstrings and string literals that read as code say
nothing; the live line beside them is read as before (Python, C, YAML, shell; a clone's diff, an API patch)."""

from __future__ import annotations

import re
import time

import pytest

from infra_radar.analyse.code_claims import contradictions
from infra_radar.analyse.code_facts import ChangeFacts, load_code_rules
from infra_radar.analyse.live_code import LiveCode, syntaxes
from infra_radar.sources.diffs import facts_of_diff, feed_patch

from .conftest import commit

pytestmark = pytest.mark.no_store


def _patch(path: str, patch: str) -> dict:
    facts = ChangeFacts(load_code_rules())
    feed_patch(facts, path, patch)
    return facts.facts("api")


def test_a_commented_out_fallback_is_no_default_and_no_contradiction():
    patch = ("@@ -1,2 +1,3 @@\n"
             '+    # fast = os.getenv("ACME_FAST_PATH", "1")  # the old default\n'
             '+    fast = os.getenv("ACME_FAST_PATH", "0")\n'
             "     return fast")
    out = _patch("acme/envs_util.py", patch)
    assert [(d["name"], d["value"]) for d in out["defaults"]] == [("ACME_FAST_PATH", '"0"')]
    body = "Adds ACME_FAST_PATH. The fast path is off by default."
    assert contradictions(body, out, load_code_rules()) == []


def test_commented_out_checks_and_a_docstring_example_say_nothing():
    patch = ("@@ -1,3 +1,14 @@\n"
             "+# if vllm_version_is(\"0.9.0\"):\n"
             "+#     import old_path\n"
             "+    # if is_310p():\n"
             "+class Cfg:\n"
             '+    """Settings.\n'
             "+\n"
             "+    Example:\n"
             "+    fast_path: bool = True\n"
             "+    if is_310p(): ...\n"
             '+    """\n'
             "+    block: int = 128\n"
             '+    note: str = "x"  # is_310p() is checked elsewhere\n'
             "+    raise ValueError(\"call os.getenv('ACME_X', '1') first\")\n")
    out = _patch("acme/config.py", patch)
    assert out["version_gates"] == [] and out["device_checks"] == []
    assert [(d["name"], d["value"]) for d in out["defaults"]] == [("block", "128"), ("note", '"x"')]
    assert out["switches"] == []


def test_a_line_inside_a_docstring_opened_by_a_context_line():
    patch = ('@@ -10,4 +10,5 @@ class Cfg:\n     """Settings, for example:\n\n'
             "-    fast_path: bool = False\n+    fast_path: bool = True\n"
             '     """\n+    block: int = 128\n')
    out = _patch("acme/config.py", patch)
    assert [(d["name"], d["value"]) for d in out["defaults"]] == [("block", "128")]


def test_live_code_is_read_as_before():
    patch = ("@@ -1,6 +1,6 @@\n"
             '-    level = os.getenv("ACME_LEVEL", "1")\n'
             '+    level = os.getenv("ACME_LEVEL", "2")  # see #123\n'
             '+    if device == "npu" and is_310p():\n'
             '+        parser.add_argument("--fast-path", default=False, help="turn on (default: off)")\n'
             '+    if vllm_version_is("0.9.0"):  # "quoted" in a comment\n')
    out = _patch("acme/run.py", patch)
    assert {(d["name"], d["value"], d["previous"]) for d in out["defaults"]} == {
        ("ACME_LEVEL", '"2"', '"1"'), ("--fast-path", "False", None)}
    assert {d["check"] for d in out["device_checks"]} == {'device == "npu"', "is_310p"}
    assert [g["after"] for g in out["version_gates"]] == ["0.9.0"]
    assert {(s["name"], s["kind"]) for s in out["switches"]} == {("ACME_LEVEL", "env"), ("--fast-path", "cli")}


def test_c_comments_yaml_and_shell():
    c = _patch("csrc/ops.cpp", '@@ -1 +1,5 @@\n+// if (getenv("ACME_OLD")) {\n+/* const char* v = getenv("ACME_X");\n'
                               '+   getenv("ACME_Y") */ auto z = getenv("ACME_Z");\n+__global__ void k() {}\n')
    assert [s["name"] for s in c["switches"]] == ["ACME_Z"]
    yaml = _patch("acme/conf.yaml", "@@ -1 +1,3 @@\n+# fast: true\n+slow: false  # fast: true\n")
    assert {(d["name"], d["value"]) for d in yaml["defaults"]} == {("slow", "false")}
    sh = _patch("run.sh", '@@ -1 +1,2 @@\n+# export A=${ACME_OLD:-1}\n+echo ${#x} ${ACME_NEW:-2}\n')
    assert [(d["name"], d["value"]) for d in sh["defaults"]] == [("ACME_NEW", "2")]


def test_marks_inside_strings_and_words_are_kept():
    live = syntaxes({"hash": ["python"], "hash_word": ["yaml", "shell"], "slash": ["cpp"], "triple": ["python"],
                     "mask": ["python", "cpp"]})
    py = LiveCode(live["python"], re.compile("getenv"))
    assert py.line("+", '    color: str = "#fff"  # a colour') == '    color: str = "#fff"'
    assert py.line("+", "    s = 'it\\'s # not a comment'  # one") == "    s = 'it\\'s # not a comment'"
    assert py.line("+", '    m = "call getenv(X) first"  # one') == '    m = ""'
    assert LiveCode(live["yaml"], None).line("+", "url: a#b # c") == "url: a#b"
    assert LiveCode(live["shell"], None).line("+", "echo ${#x} # c") == "echo ${#x}"
    assert LiveCode(live["cpp"], None).line("+", 'auto u = "http://x"; // c') == 'auto u = "http://x";'


def test_a_clone_diff_reads_live_code(make_repo):
    from infra_radar.sources.diffs import facts_of_commit

    repo = make_repo()
    commit(repo, "init", {"acme/config.py": 'class C:\n    """Doc.\n\n    Example\n    """\n    a: int = 1\n'},
           "2026-07-01T10:00:00+00:00")
    sha = commit(repo, "doc", {"acme/config.py": 'class C:\n    """Doc.\n\n    Example\n    fast: bool = True\n'
                                                 '    """\n    a: int = 1\n    # b: int = 2\n'},
                 "2026-07-02T10:00:00+00:00")
    out = facts_of_commit(repo, sha, load_code_rules())
    assert out["defaults"] == []
    page = facts_of_diff(load_code_rules(), ["diff --git a/x.py b/x.py", "--- a/x.py", "+++ b/x.py",
                                             "@@ -1,2 +1,3 @@", '     """Doc', "+    fast: bool = True",
                                             '     """'], "page")
    assert page["defaults"] == []


def test_live_code_is_linear_on_hostile_lines():
    live = LiveCode(syntaxes({"hash": ["python"], "triple": ["python"], "mask": ["python"]})["python"], None)

    def cost(n: int) -> float:
        lines = ['"' + "\\" * n + '"', "'\\'" * n, '"""' * n, "x = '" + "\\'" * n + "#", "#" * n, "/*" * n]
        start = time.perf_counter()
        for _ in range(5):
            for line in lines:
                live.reset()
                live.line("+", line)
        return time.perf_counter() - start

    cost(1000)
    small, big = cost(4000), cost(32000)
    assert big < 24 * small, (small, big)  # linear: ~8x; a quadratic scan: ~64x


def test_a_hunk_starting_inside_a_docstring_reads_the_code_after_it():
    # the hunk opens on a docstring's last lines: its closing quote is no opening one
    gumbel = ('@@ -60,7 +62,9 @@ def apply_temperature(\n         temperature: one value per request.\n     """\n'
              "     num_tokens = 1\n-    BLOCK = 44032\n+    # 32768 fits the UB limit since vllm_version_is(\"0.26.0\")\n"
              '+    if vllm_version_is("0.26.0"):\n+        BLOCK = 32768\n')
    assert [g["after"] for g in _patch("acme/gumbel.py", gumbel)["version_gates"]] == ["0.26.0"]
    lone = ('@@ -39,6 +39,9 @@ from x import y\n class Runner:\n+    """\n+    Example: if vllm_version_is("0.1.0"): ...\n'
            '+    """\n+    fast: bool = False\n')
    out = _patch("acme/runner.py", lone)
    assert out["version_gates"] == [] and [d["name"] for d in out["defaults"]] == ["fast"]
    # a module's docstring after its licence header, the hunk starting in the header
    header = ('@@ -5,9 +5,3 @@\n # You may obtain a copy of the License at\n-# limitations under the License.\n-"""\n'
              '-Usage: is_310p() picks the path.\n-"""\n-def run():\n-    pass\n')
    out = _patch("acme/tool.py", header)
    assert out["device_checks"] == [] and [r["name"] for r in out["removed"]] == ["run"]
