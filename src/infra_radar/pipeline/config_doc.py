"""The options table of docs/configuration.md, generated from the packaged radar.toml (what `radar init` writes).

Each option's row is its key, its default and the comment lines right above it (or the comment after it on its
line). Top-level keys and [focus] show the packaged value as the default; [[repos]] keys, whose packaged values
are the packaged list rather than defaults, show the defaults of config.RepoSettings. tests/test_first_hour.py
keeps the docs equal to what this prints; after editing a comment in radar.toml run

    python -m infra_radar.pipeline.config_doc docs/configuration.md
"""

from __future__ import annotations

import dataclasses
import re
import sys
import tomllib
from pathlib import Path

BEGIN = "<!-- options: generated from src/infra_radar/defaults/radar.toml by `python -m infra_radar.pipeline.config_doc " \
        "docs/configuration.md`; edit the comments there -->"
END = "<!-- end of options -->"
_KEY = re.compile(r"^([a-z0-9_]+)\s*=\s*(.*?)\s*(?:#\s*(.*))?$")
_TABLE = re.compile(r"^\[(\[?)([a-z_]+)\]?\]$")


def _value(raw: str) -> str:
    """A TOML value as the table shows it: strings bare (empty: "empty"), lists and tables joined."""
    value = tomllib.loads(f"v = {raw}")["v"]
    if value == "":
        return "empty"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


def _repo_default(key: str) -> str:
    from ..config import RepoSettings

    field = RepoSettings.__dataclass_fields__[key]
    if field.default is not dataclasses.MISSING:
        return str(field.default)
    if field.default_factory is not dataclasses.MISSING:
        return ", ".join(field.default_factory()) or "none"
    return "required"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def options(text: str) -> list[tuple[str, str, str]]:
    """(option, default, description) for every option radar.toml sets, in file order (the [llm] table, which
    the file shows commented out, aside)."""
    rows: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    table, block = "", []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            block.append(stripped.lstrip("#").strip())
            continue
        if not stripped:
            block = []
            continue
        header = _TABLE.match(stripped)
        if header:
            table = f"[[{header[2]}]]" if header[1] else f"[{header[2]}]"
            block = []
            continue
        found = _KEY.match(stripped)
        if found is None:
            block = []
            continue
        key, raw, inline = found[1], found[2], found[3]
        name = f"{table} {key}" if table else key
        about = " ".join([*block, inline or ""]).strip()
        block = []
        if name in seen:
            continue
        if table == "[[repos]]":
            if not about:
                continue  # described by a later entry's comment
            default = _repo_default(key)
        else:
            default = _value(raw)
        seen.add(name)
        rows.append((name, default, about))
    return rows


def options_table(text: str) -> str:
    """The Markdown table of `options(text)`, between the markers the docs hold it in."""
    lines = [BEGIN, "", "| option | default | what it does |", "| --- | --- | --- |"]
    lines += [f"| `{name}` | {_cell(default) if default in ('empty', 'none', 'required') else f'`{_cell(default)}`'} "
              f"| {_cell(about)} |" for name, default, about in options(text)]
    return "\n".join([*lines, "", END])


def rewrite(doc: str, text: str) -> str:
    """`doc` with the part between the markers replaced by the table generated from `text`."""
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    return doc[:start] + options_table(text) + doc[end:]


def main(argv: list[str]) -> int:
    from ..config import default_config_text

    if len(argv) != 1:
        print("usage: python -m infra_radar.pipeline.config_doc docs/configuration.md", file=sys.stderr)
        return 2
    path = Path(argv[0])
    path.write_text(rewrite(path.read_text(encoding="utf-8"), default_config_text()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
