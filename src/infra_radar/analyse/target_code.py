"""What a change's diff means for the target, read from its device facts (`code.device`, analyse/device_facts.py):
was the diff read, does it hold device code of another platform, does it remove the target's own code, is every
code file it changes host-side. The grade (grading.py), the priority floor (rules.py), the conclusion's
consequence (render/conclusion.py) and the dive's boundary read this, never a word of the title or a path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .device_facts import load_device_rules


@dataclass(slots=True)
class TargetCode:
    read: bool = False  # the change's diff was read (its device facts are known)
    other: list[dict[str, Any]] = field(default_factory=list)  # libraries of another platform the diff uses
    own: list[dict[str, Any]] = field(default_factory=list)  # libraries of the target the diff uses or adds
    removed: list[str] = field(default_factory=list)  # the target's libraries whose code the change removes
    removed_guards: list[str] = field(default_factory=list)  # the target's device branches it removes
    kernels: list[dict[str, Any]] = field(default_factory=list)  # kernel sources added or changed
    guards: list[dict[str, Any]] = field(default_factory=list)  # device guards added or removed
    host_only: bool = False  # every code file it reads is host-side
    aux: list[dict[str, Any]] = field(default_factory=list)  # another platform's libraries in CI, examples, scripts
    other_guards: list[dict[str, Any]] = field(default_factory=list)  # another platform's guards it adds
    own_removed: list[str] = field(default_factory=list)  # in the target's own repository: its code removed

    @property
    def device_free(self) -> bool:
        """The diff was read and holds no device library, guard or kernel of any platform."""
        return self.read and not (self.other or self.own or self.kernels or self.guards)

    @property
    def removes_target(self) -> bool:
        return bool(self.removed or self.removed_guards)

    def other_labels(self, most: int = 3) -> list[str]:
        return list(dict.fromkeys(lib["label"] for lib in self.other))[:most]

    def primary(self) -> str:
        """The one reading a conclusion states: clean (read, no device code of any platform), device (another
        platform's libraries or kernels in the change's own code), target (the target's own libraries), guard
        (another platform's branch added), aux (another platform's libraries in CI, examples or scripts only),
        unread (no diff read), else read."""
        if not self.read:
            return "unread"
        if self.device_free:
            return "clean"
        if self.other or self.kernels:
            return "device"
        if [lib for lib in self.own if lib["change"] != "removed"]:
            return "target"
        if self.other_guards:
            return "guard"
        return "aux" if self.aux else "read"

    def other_files(self, most: int = 2) -> list[str]:
        return list(dict.fromkeys(f for lib in self.other for f in lib["files"]))[:most]


def host_only(device: dict[str, Any]) -> bool:
    """Every code file the diff changes is host-side (a config file runs nowhere and does not count)."""
    files = device.get("files", 0) - device.get("config_files", 0)
    return files > 0 and len(device.get("host", [])) >= files


def target_platform(topic: str) -> str:
    """The device platform whose code is the target's own ("npu" for the Ascend profile's topic)."""
    return load_device_rules().targets.get(topic, topic)


def read_target(code: dict[str, Any] | None, topic: str = "npu", native_repo: bool = False) -> TargetCode:
    """The target's reading of a change's code facts (`topic`: the target profile's topic). A change of the
    target's own repository (`native_repo`) never removes the target's code by these facts: it is all the
    target's code."""
    device = (code or {}).get("device")
    if device is None:
        return TargetCode()
    own_platform = target_platform(topic)
    found = TargetCode(read=True)
    for lib in device.get("libs", []):
        if lib["platform"] == own_platform:
            found.own.append(lib)
        elif lib["change"] != "removed" and lib.get("core", 1):
            found.other.append(lib)  # used outside CI, docs, examples and scripts
        elif lib["change"] != "removed":
            found.aux.append(lib)
    found.kernels = [k for k in device.get("kernels", []) if k["change"] != "removed"]
    found.guards = list(device.get("guards", []))
    found.other_guards = [g for g in found.guards if g["platform"] not in (own_platform, "other")
                          and g["change"] == "added"]
    found.host_only = host_only(device)
    removed, branches = _removed(device, own_platform)
    if native_repo:  # the target's own repository removing its own code: its own business, said apart
        found.own_removed = removed
    else:
        found.removed, found.removed_guards = removed, branches
    return found


_CI = (".github/", ".buildkite/", ".ci/")


def _removed(device: dict[str, Any], platform: str) -> tuple[list[str], list[str]]:
    """What of the target's own code the change removes: (its libraries whose lines are net removed, the lines of
    its device guards removed)."""
    rules = load_device_rules().removal
    libs = [lib for lib in device.get("libs", []) if lib["platform"] == platform]
    plus, minus = sum(lib["added"] for lib in libs), sum(lib["removed"] for lib in libs)
    out, branches = [], []
    # the target's code itself (outside examples, docs and scripts) or its CI jobs, not only a launch script
    own_code = sum(lib.get("core", lib["removed"]) for lib in libs) >= rules["min_lines"] or any(
        f.startswith(_CI) for lib in libs for f in lib["files"])
    if own_code and minus >= rules["min_lines"] and plus * rules["ratio"] <= minus:
        out += [lib["label"] for lib in libs if lib["removed"] > lib["added"]]
    guards = [g for g in device.get("guards", []) if g["platform"] == platform]
    # a guard removed where nothing of the target is added (a branch moved or rewritten adds its new form)
    if not plus and not any(g["added"] for g in guards) and any(g["removed"] for g in guards):
        branches += [g["line"] for g in guards if g["change"] == "removed"][:2]
    return list(dict.fromkeys(out)), list(dict.fromkeys(branches))


def for_target(item: Any, target: str) -> TargetCode:
    """The reading for a target profile by name ("ascend"), its topic and own repositories from grades.toml."""
    from .porting import _profiles

    profile = _profiles().get(target, {})  # grades.toml [profiles], read once
    native = item.repo.lower() in [r.lower() for r in profile.get("native_repos", [])]
    return read_target(item.code, profile.get("topic", target), native)
