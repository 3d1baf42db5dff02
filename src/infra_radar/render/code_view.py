"""What a change's code says, as report text: the card's code section and the one clause a deep dive, a P0/P1
row and the card give where the description says one thing and the diff another. Built only from the stored
code facts (Item.code) and the analysis's contradictions; wording in i18n.toml [code]."""

from __future__ import annotations

from typing import Any

from ..models import AnalysedItem, Item
from .escape import Md, code, fmt, join, text

_SHOWN = 4  # facts of each kind the card lists


def _files(paths: list[str], t: dict[str, Any]) -> Md:
    return join([code(p) for p in dict.fromkeys(paths)], t["code"]["file_sep"])


def contradiction_clause(ai: AnalysedItem, t: dict[str, Any]) -> Md:
    """"The code differs from the description: …" with both sides and the files, or "" when they agree (or
    no diff was read). One clause per report line: the first contradiction, all of its files."""
    found = ai.analysis.contradictions
    if not found:
        return Md("")
    k = t["code"]
    first = found[0]
    same = [c for c in found if c.get("kind") == first.get("kind") and c.get("name") == first.get("name")]
    said = join([fmt(k["quote"], text=s) for s in first.get("said") or [first["description"]]],
                t["common"]["sep"])
    files = _files([c["file"] for c in same], t)
    if first.get("kind") == "api":
        kind = k["removed_kinds"].get(first.get("value", ""), first.get("value", ""))
        return fmt(k["contradiction_api"], said=said, kind=kind, name=first.get("name", ""), files=files)
    return fmt(k["contradiction_default"], name=first.get("name", ""), said=said, value=first.get("value", ""),
               files=files)


def with_contradiction(sentence: Md, ai: AnalysedItem, t: dict[str, Any]) -> Md:
    """`sentence` followed by the contradiction clause, when there is one."""
    clause = contradiction_clause(ai, t)
    if not clause:
        return sentence
    sep = " " if t["lang"] == "en" and sentence else ""
    end = "" if str(sentence).rstrip().endswith(("。", ".", "！", "!")) or not sentence else t["code"]["end"]
    return Md(f"{sentence}{end}{sep}{clause}{t['code']['end']}")


def code_boundary(item: Item, t: dict[str, Any]) -> Md:
    """What the diff says of the target boundary, before any keyword: a GPU-only guard it adds, a kernel for
    another device it touches (code_facts.toml [boundary]); "" when it says neither or no diff was read."""
    facts = item.code
    if not facts:
        return Md("")
    from ..analyse.code_facts import load_code_rules

    k, sep = t["code"], t["common"]["sep"]
    rules = load_code_rules().boundary
    guards = [d["check"] for d in facts.get("device_checks", []) if d.get("change") == "added"
              and any(w in d["check"].lower() for w in rules.get("gpu_checks", []))]
    kernels = [x for x in facts.get("kernels", []) if x.get("kind") in rules.get("other_device_kernels", [])]
    parts = []
    if guards:
        parts.append(fmt(k["boundary_guard"], checks=join([code(c) for c in dict.fromkeys(guards)][:2], sep)))
    if kernels:
        parts.append(fmt(k["boundary_kernel"], kind=kernels[0]["kind"],
                         files=join([code(x["file"].rsplit("/", 1)[-1]) for x in kernels[:2]], sep)))
    # a version gate the change adds: which versions take the new path ("vllm >= 0.19.0"), and where
    gates = [g for g in facts.get("version_gates", []) if g.get("after") and not g.get("before")]
    if gates:
        from ..analyse.code_facts import gate_said

        first = gate_said(gates[0])
        files = [g["file"].rsplit("/", 1)[-1] for g in gates if gate_said(g) == first and g.get("file")]
        parts.append(fmt(k["boundary_gate"], gate=code(first),
                         files=join([code(f) for f in dict.fromkeys(files)][:2], sep)))
    return join(parts, t["common"]["comma"]) if parts else Md("")


def _listed(lines: list[Md], facts: list, t: dict[str, Any]) -> list[Md]:
    more = len(facts) - _SHOWN
    return lines + ([fmt(t["code"]["more"], n=more)] if more > 0 else [])


def code_lines(item: Item, t: dict[str, Any]) -> list[Md]:
    """The card's code section: where the facts were read, then each kind of fact (a few of each)."""
    facts = item.code
    if not facts:
        return []
    k, sep = t["code"], t["common"]["sep"]
    head = k.get(f"source_{facts.get('source', '')}", "")
    if not facts.get("complete"):
        head += k["partial"].format(why=k["partial_caps"]) if facts.get("source") != "page" else ""
    skipped = sum((facts.get("skipped") or {}).values())
    out: list[Md] = [Md(text(head) + (t["common"]["sep"] + text(k["skipped"].format(n=skipped)) if skipped else ""))]
    defaults = facts.get("defaults", [])
    out += _listed([fmt(k["default_new"] if d.get("previous") is None else k["default_changed"], name=d["name"],
                        value=d["value"], previous=d.get("previous") or "", file=d["file"])
                    for d in defaults[:_SHOWN]], defaults, t)
    switches = facts.get("switches", [])
    out += _listed([fmt(k["switch"], kind=k["switch_kinds"].get(s["kind"], s["kind"]), name=s["name"],
                        change=k["changes"].get(s["change"], s["change"]), file=s["file"])
                    for s in switches[:_SHOWN]], switches, t)
    gates = facts.get("version_gates", [])
    out += _listed([fmt(k["gate"], package=g["package"], before=g.get("before") or k["gate_none"],
                        after=g.get("after") or k["gate_none"], file=g["file"]) for g in gates[:_SHOWN]], gates, t)
    devices = facts.get("device_checks", [])
    out += _listed([fmt(k["device"], check=d["check"], change=k["changes"].get(d["change"], d["change"]),
                        file=d["file"]) for d in devices[:_SHOWN]], devices, t)
    by_kind: dict[str, list[str]] = {}
    for x in facts.get("kernels", []):
        by_kind.setdefault(x["kind"], []).append(x["file"])
    out += [fmt(k["kernel"], kind=kind, n=len(files), files=join([code(f) for f in files[:3]], sep))
            for kind, files in by_kind.items()]
    removed = facts.get("removed", [])
    out += _listed([fmt(k["removed"], kind=k["removed_kinds"].get(r["kind"], r["kind"]), name=r["name"],
                        file=r["file"]) for r in removed[:_SHOWN]], removed, t)
    casts = facts.get("casts", [])
    out += [fmt(k["cast"], change=k["changes"].get(c["change"], c["change"]), line=c["line"], file=c["file"])
            for c in casts[:2]]
    if len(out) == 1:  # what was read holds none: said of what was read, never of the whole change
        said = "nothing_page" if facts.get("source") == "page" else "nothing" if facts.get("complete") \
            else "nothing_partial"
        out.append(Md(text(k[said])))
    out += [line for line, _, _ in device_lines(item, t)[:_SHOWN + 2] if facts.get("device") is not None]
    tests = facts.get("tests", [])
    if tests:
        out.append(fmt(k["tests"], n=len(tests), paths=join([code(p) for p in tests[:3]], t["common"]["sep"])))
    elif facts.get("source") != "page":  # a page's hunks are not the change's whole file list
        out.append(Md(text(k["no_tests"])))
    return out


def device_lines(item: Item, t: dict[str, Any]) -> list[tuple[Md, str, str]]:
    """What the diff's device facts say (analyse/device_facts.py), as (statement, the line or file it rests on,
    the rule): the libraries it uses, the device branches it adds or removes, the kernel sources it touches, a
    change all on the host; "no device-specific code" only when a diff was read and holds none."""
    k, sep = t["code"], t["common"]["sep"]
    device = (item.code or {}).get("device")
    if device is None:
        return [(Md(text(k["device_unread"])), "", "device_facts.toml")]
    from ..analyse.device_facts import kernel_label
    from ..analyse.target_code import host_only

    changes, platforms = k["device_changes"], k["device_platforms"]
    out = [(fmt(k["device_lib"], label=lib["label"], change=changes.get(lib["change"], lib["change"]),
                n=lib["added"] + lib["removed"], files=join([code(f) for f in lib["files"][:2]], sep)),
            lib["line"], f"device_facts.toml [[lib]] {lib['id']}") for lib in device.get("libs", [])]
    out += [(fmt(k["device_guard"], platform=platforms.get(g["platform"], g["platform"]),
                 change=changes.get(g["change"], g["change"]), line=g["line"], file=g["file"]),
             g["line"], f"device_facts.toml [[guard]] {g['id']}") for g in device.get("guards", [])]
    out += [(fmt(k["device_kernel"], lang=kernel_label(x["lang"]), change=changes.get(x["change"], x["change"]), file=x["file"]),
             x["file"], "device_facts.toml [kernels]") for x in device.get("kernels", [])]
    files = device.get("files", 0)
    if host_only(device):
        out.append((fmt(k["device_host"], files=join([code(f) for f in device["host"][:3]], sep)),
                    ", ".join(device["host"][:3]), "device_facts.toml [host]"))
    if not out:
        read = files + device.get("aux_files", 0)
        out.append((fmt(k["device_none"], n=read), f"{read} file(s) read", "device_facts.toml"))
    return out
