"""render/escape.py, the one Markdown escaping: each class of construct an author can type is text after
`text`/`cell`, whatever the string; `code` and `fmt` fence any backtick run; `link` keeps its label inside;
`plain` gives back what a reader sees. Read back with markdown-it (raw HTML on, as a permissive viewer)."""

from __future__ import annotations

import html
import random
import re
import time

import pytest
from markdown_it import MarkdownIt

from infra_radar.render.escape import Md, cell, code, fmt, href, join, link, plain, plain_line, start, text

pytestmark = pytest.mark.no_store

MD = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
TAG = re.compile(r"<(/?)([a-z0-9]+)([^>]*)>")


def inline_html(markdown: str) -> str:
    return MD.renderInline(markdown)


def tags(rendered: str) -> set[str]:
    return {m.group(2) for m in TAG.finditer(rendered)}


def visible(rendered: str) -> str:
    return html.unescape(TAG.sub("", rendered))


def as_block(markdown: str) -> str:
    """`markdown` alone on a line, as a paragraph of its own (where line-start constructs would apply)."""
    return MD.render(f"intro\n\n{markdown}\n\nafter")


CASES = {
    "inline links": ["[SECURITY: rotate your tokens here](https://evil.example)", "[a]( https://e.x 'title' )",
                     "[a](<https://e.x/a b>)", "[a](javascript:alert(1))", "x [a] (b) [c](d)", "[[a](b)](c)",
                     "[Feat](sfa,dcp) support", "text](https://e.x)"],
    "images": ["![x](https://evil.example/p.png)", "![](https://e.x)", "!![x](u)", "![a\n](u)"],
    "reference definitions": ["[x]: https://evil.example", "[Bug]: crash", "[x]:\n  https://e.x", "[^1]: evil",
                              "[x]: <https://e.x> \"t\""],
    "autolinks and raw HTML": ["<https://evil.example>", "<mailto:a@b.c>", "v2<img src=x onerror=alert(1)><!--",
                               "<script>alert(1)</script>", "<?php x ?>", "<![CDATA[x]]>", "<a href=x>y</a>",
                               "</p><img src=x>", "&lt;img src=x onerror=alert(2)&gt;", "&#x3C;b&#x3E;bold"],
    "emphasis": ["**bold**", "*a*", "_a_", "__init__.py", "a * b * c", "~~gone~~", "***x***", "_x_y_"],
    "line starts": ["# heading", "###### h6", "> quote", "- item", "+ item", "* item", "1. first", "7) seventh",
                    "===", "---", "- - -", "***", "___", "```python", "~~~", "    indented", "#hashtag"],
    "backslashes": ["a\\", "\\*not\\*", "\\\\", "C:\\path\\file", "x\\`y`"],
    "entities": ["&amp;", "&lt;", "&#60;", "AT&T", "&copy; &nbsp;"],
}


@pytest.mark.parametrize("kind", CASES)
def test_each_class_of_markup_in_author_text_is_text_inline_and_at_a_line_start(kind):
    for raw in CASES[kind]:
        shown = text(raw)
        seen = " ".join(html.unescape(raw).split())
        rendered = inline_html(shown)
        assert not tags(rendered) - {"code"}, (raw, shown, rendered)
        if "`" not in raw:
            assert visible(rendered) == seen, (raw, shown, rendered)
        block = as_block(shown)
        assert tags(block) <= {"p", "code"} and block.count("<p>") == 3, (raw, shown, block)


def test_gfm_bare_autolinks_are_broken_up():
    shown = text("see https://evil.example/x, www.evil.example and me@evil.example")
    assert "https\\://evil" in shown and "www\\.evil" in shown and "me\\@evil" in shown
    assert visible(inline_html(shown)) == "see https://evil.example/x, www.evil.example and me@evil.example"


def test_ordinary_titles_read_as_they_are():
    for title in ("[Bugfix][Ops] Fix forced_max_seqlen in MLA", "Support W8A8 on 310P (#1234)",
                  "[Perf] 1.3x faster decode via `fused_moe`", "Bump torch_npu to 2.5.1.post1", "[RFC]: a long title"):
        assert text(title) == title


def test_a_code_span_the_author_closed_stays_code_and_an_unclosed_one_is_escaped():
    assert inline_html(text("use `a_b*c` now")) == "use <code>a_b*c</code> now"
    assert inline_html(text("``a`b`` and `x")) == "<code>a`b</code> and `x"
    assert inline_html(text("`a`` b")) == "`a`` b"


# --- random strings from the characters Markdown reads ------------------------------------------------

ALPHABET = list("[]()!<>*_~`#-+=:|\\&;/.@ ") + ["http", "www", "1.", "a", "b", "img", "\n", "&lt;", "x", "й"]


def _random_strings(seed: int, n: int, length: int = 24) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, length))) for _ in range(n)]


def test_random_markup_strings_never_render_as_markup():
    for raw in _random_strings(28, 3000):
        shown = text(raw)
        rendered = inline_html(shown)
        assert not tags(rendered) - {"code"}, (raw, shown, rendered)
        if "`" not in raw:
            assert visible(rendered) == " ".join(html.unescape(raw).split()), (raw, shown)
        assert tags(as_block(shown)) <= {"p", "code"}, (raw, shown)
        assert not tags(inline_html(shown + "[x](https://e.x)")) - {"code", "a"}  # our link after it: still ours
        after = inline_html(f"{shown}{link('#1', 'https://github.com/acme/x/pull/1')}")
        assert after.count("<a ") == 1 and 'href="https://github.com/acme/x/pull/1"' in after, (raw, shown, after)


def test_a_cell_keeps_its_row_whatever_pipes_backslashes_and_code_spans_it_holds():
    for raw in _random_strings(7, 1500) + ["a|b", "`x|y`", "a\\|b", "`a\\|b`", "\\\\|", "``|``"]:
        row = f"| {cell(raw)} | end |"
        table = MD.render(f"| h | k |\n|---|---|\n{row}\n")
        assert table.count("<td>") == 2 and "<td>end</td>" in table, (raw, row, table)
        assert not tags(table) - {"table", "thead", "tbody", "tr", "th", "td", "code"}, (raw, row)


@pytest.mark.parametrize("path", ["a`b.py", "x``y`z", "`lead", "trail`", "sp ace/`q`", "p|ipe`.py", "a|[x](https://e.x)",
                                  "plain|pipe.py"])
def test_a_path_with_backticks_is_one_code_span(path):
    assert inline_html(code(path)) == f"<code>{html.escape(path, quote=False)}</code>"
    assert inline_html(code(text(path))) == f"<code>{html.escape(path, quote=False)}</code>"
    for made in (code(cell(path)), code(cell(text(path)))):
        table = MD.render(f"| h |\n|---|\n| {made} |\n")
        assert f"<td><code>{html.escape(path, quote=False)}</code></td>" in table, made


def test_fmt_makes_a_backticked_field_a_code_span_and_any_other_field_text():
    line = fmt("changes `{file}` by {who} ({n})", file="a`b`c.py", who="**x** [y](https://e.x)", n=3)
    assert inline_html(line) == "changes <code>a`b`c.py</code> by **x** [y](https://e.x) (3)"
    assert plain(line) == "changes ``a`b`c.py`` by **x** [y](https://e.x) (3)"
    assert plain(fmt("in `{m}`: {t}", m="vllm_ascend/ops/", t="x_y")) == "in `vllm_ascend/ops/`: x_y"
    assert fmt("{a}", a=Md("`ours`")) == "`ours`"  # our own Markdown goes in as it is


def test_join_escapes_pieces_that_are_not_ours():
    assert join([Md("`a`"), "*b*"], "、") == "`a`、\\*b\\*"


def test_link_keeps_its_label_inside_and_its_destination_whole():
    rendered = inline_html(link("acme/x@v2]<img>](evil", "https://github.com/acme/x/releases/tag/v2]<img> (x)"))
    assert rendered.count("<a ") == 1 and "<img" not in rendered
    assert 'href="https://github.com/acme/x/releases/tag/v2%5D%3Cimg%3E%20%28x%29"' in rendered
    assert visible(rendered) == "acme/x@v2]<img>](evil"
    assert link("x", "javascript:alert(1)") == "x" and href("ftp://e.x") == "" and href("HTTPS://e.x/a b") == "HTTPS://e.x/a%20b"


def test_plain_is_what_the_reader_sees():
    for raw in _random_strings(11, 500):
        assert plain(text(raw)) == " ".join(html.unescape(raw).split())
    built = fmt("作者：“{q}”；涉及 {ids}", q="a*b_", ids=join([code("x`y"), code("z")], "、"))
    assert plain(built) == "作者：“a*b_”；涉及 ``x`y``、`z`"
    assert plain("not ours \\*") == "not ours \\*"


def test_a_word_inside_our_sentence_keeps_what_only_a_line_start_makes_markup():
    # "ep > 1" in a conclusion: a '>' inside a line is no quote, so it needs no backslash
    assert text("> 1", inside=True) == "> 1" and text("-", inside=True) == "-" and text("1.", inside=True) == "1."
    assert text("> 1") == "\\> 1"
    sentence = Md(f"修复 ep {text('>', inside=True)} 1 时的 NaN")
    assert "\\" not in sentence and start(sentence) == sentence
    # a sentence that opens with such a word is guarded where it may open a line; inline markup is escaped
    # inside a sentence all the same
    for opener in ("> q", "# h", "- l", "+ l", "1. n", "3) n", "[r]: https://evil.example/d"):
        built = start(Md(join([text(w, inside=True) for w in opener.split(" ")], " ") + " and more"))
        rendered = as_block(built)
        assert tags(rendered) == {"p"}, (opener, rendered)
        assert plain(built) == opener + " and more"
    assert "<em>" not in inline_html(Md(f"a {text('*b*', inside=True)} c"))


def test_plain_line_reads_our_links_by_their_label_and_leaves_author_text_alone():
    built = Md(f"see {link('a [b] c', 'https://github.com/acme/x/pull/1')} and **bold** {text('[e](https://e) *x*')}")
    assert plain_line(built) == "see a [b] c and bold [e](https://e) *x*"
    assert plain_line("[e](https://e) **x**") == "[e](https://e) **x**"  # not ours: as it is


def test_escaping_is_linear_in_the_text():
    def cost(n: int) -> float:
        rng = random.Random(n)
        body = "".join(rng.choice(["`" * rng.randint(1, 9), "[a](", "_x", "\\", "<", "a@b.c ", "www.", "&x;"])
                       for _ in range(n))
        start = time.perf_counter()
        plain(Md(text(body)))
        cell(body)
        return time.perf_counter() - start

    cost(2000)
    small, large = min(cost(20_000) for _ in range(2)), min(cost(80_000) for _ in range(2))
    assert large < small * 12  # 4x the text: linear is ~4x, quadratic 16x


def test_a_relation_links_the_page_the_radar_builds_never_the_authors_address():
    from infra_radar.models import Link
    from infra_radar.render.base import shown_url

    def shown(url, kind="references", number=5):
        return shown_url(Link(kind=kind, repo="acme/x", number=number, url=url))

    assert shown("https://github.com/acme/x/pull/5") == "https://github.com/acme/x/pull/5"
    # an address of the author's that names a pull request: that PR's page, built from repository and number
    assert shown("https://github.com/acme/x/pull/5/files#diff-1\")](https://evil.example)") == \
        "https://github.com/acme/x/pull/5"
    assert shown("https://github.com/acme/x/pull/5#issuecomment-1") == "https://github.com/acme/x/pull/5"
    assert shown("https://github.com/acme/x/pull/5%EF%BC%89") == "https://github.com/acme/x/pull/5"  # "…/pull/5）"
    assert shown("https://github.com/acme/x/pull/55") == "https://github.com/acme/x/issues/5"  # not this one
    assert shown(None) == "https://github.com/acme/x/issues/5"  # kind unknown: GitHub forwards /issues/N
    assert shown(None, "duplicate") == "https://github.com/acme/x/pull/5"  # a relation between PRs
    assert shown("https://evil.example/acme/x/pull/5") == "https://github.com/acme/x/issues/5"
    assert shown_url(Link(kind="url", url="https://evil.example/rotate")) == ""  # an address: shown as text
