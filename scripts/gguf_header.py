"""Check a GGUF file's header before it is used: magic, version, and metadata (architecture, name, chat template).

    python3 scripts/gguf_header.py FILE --arch qwen2 --name-contains Qwen2.5 --chat-template

Standard library only; reads the metadata key/value section once, in order (linear in its size), and
never the tensors. Exits 1 naming the first mismatch; prints the checked fields on success.
"""

from __future__ import annotations

import argparse
import struct
import sys
from typing import BinaryIO

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_MAX_STRING = 1 << 24  # a metadata string longer than 16 MiB is not a GGUF header we trust


def _read(fh: BinaryIO, n: int) -> bytes:
    data = fh.read(n)
    if len(data) != n:
        raise ValueError("truncated header")
    return data


def _string(fh: BinaryIO) -> str:
    (n,) = struct.unpack("<Q", _read(fh, 8))
    if n > _MAX_STRING:
        raise ValueError(f"metadata string of {n} bytes")
    return _read(fh, n).decode("utf-8", "replace")


def _value(fh: BinaryIO, kind: int, keep: bool):
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, _read(fh, struct.calcsize(fmt)))[0]
    if kind == 8:
        return _string(fh)
    if kind == 9:
        sub, n = struct.unpack("<IQ", _read(fh, 12))
        if n > 1 << 26:
            raise ValueError(f"metadata array of {n} items")
        for _ in range(n):
            _value(fh, sub, False)
        return None
    raise ValueError(f"unknown metadata type {kind}")


def header(path: str) -> dict[str, object]:
    """The scalar and string metadata of a GGUF file (arrays skipped)."""
    with open(path, "rb") as fh:
        if _read(fh, 4) != b"GGUF":
            raise ValueError("not a GGUF file (bad magic)")
        version, _tensors, count = struct.unpack("<IQQ", _read(fh, 20))
        if version not in (2, 3):
            raise ValueError(f"GGUF version {version} not supported")
        meta: dict[str, object] = {"gguf.version": version}
        for _ in range(min(count, 1 << 16)):
            key = _string(fh)
            (kind,) = struct.unpack("<I", _read(fh, 4))
            value = _value(fh, kind, True)
            if value is not None:
                meta[key] = value
        return meta


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--arch", help="required general.architecture")
    ap.add_argument("--name-contains", help="text general.name must hold")
    ap.add_argument("--chat-template", action="store_true", help="require tokenizer.chat_template")
    args = ap.parse_args()
    try:
        meta = header(args.path)
    except (OSError, ValueError, struct.error) as exc:
        print(f"{args.path}: {exc}", file=sys.stderr)
        return 1
    arch, name = str(meta.get("general.architecture", "")), str(meta.get("general.name", ""))
    problems = []
    if args.arch and arch != args.arch:
        problems.append(f"architecture is {arch!r}, not {args.arch!r}")
    if args.name_contains and args.name_contains.lower() not in name.lower():
        problems.append(f"name {name!r} lacks {args.name_contains!r}")
    if args.chat_template and not meta.get("tokenizer.chat_template"):
        problems.append("no tokenizer.chat_template (a base model, not an instruct one)")
    if problems:
        print(f"{args.path}: " + "; ".join(problems), file=sys.stderr)
        return 1
    print(f"{args.path}: GGUF v{meta['gguf.version']}, {arch}, {name!r}, chat template present")
    return 0


if __name__ == "__main__":
    sys.exit(main())
