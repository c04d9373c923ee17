"""A Docker seccomp profile, applied to a process as Docker applies it to a container's.

`rules` picks the rules of a profile (Docker's JSON format, as docker/seccomp.json or
moby's default.json) that apply to a container with the given capabilities on this
machine's architecture and kernel, the way moby does: a rule's `includes` must all hold and
none of its `excludes`. Run by path, `python seccomp.py PROFILE -- ARGV...` (PROFILE `-`:
the profile on standard input, for a user who cannot read the file) loads those rules
with libseccomp (through ctypes: the library runc loads them with), which also sets
no_new_privs as `no-new-privileges:true` does, then execs ARGV under the filter. It
covers what Docker's profiles use (ALLOW and ERRNO actions, argument comparisons, caps,
arches, minKernel) and raises on anything else.

No Docker runs where the tests run: this is how a test sees what a container's seccomp
filter allows of the box. It imports nothing beyond the standard library, so that it can
run under any user's interpreter.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import platform
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Rule", "libseccomp_missing", "rules"]

# Docker's names of architectures, as the profile's `arches` write them.
_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
# libseccomp's enum scmp_compare.
_OPS = {
    "SCMP_CMP_NE": 1, "SCMP_CMP_LT": 2, "SCMP_CMP_LE": 3, "SCMP_CMP_EQ": 4,
    "SCMP_CMP_GE": 5, "SCMP_CMP_GT": 6, "SCMP_CMP_MASKED_EQ": 7,
}  # fmt: skip
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_UNKNOWN_SYSCALL = -1  # __NR_SCMP_ERROR


@dataclass(frozen=True)
class Rule:
    """One syscall's rule: its action and the comparisons that must all hold."""

    name: str
    action: int
    args: tuple[tuple[int, int, int, int], ...]  # (index, op, datum_a, datum_b)


def rules(
    profile: dict[str, Any], *, caps: Collection[str], machine: str | None = None
) -> tuple[int, list[Rule]]:
    """The profile's default action and the rules that apply to a container with `caps`."""
    arch = _ARCH[machine or platform.machine()]
    default = _action(profile["defaultAction"], profile.get("defaultErrnoRet"))
    picked: list[Rule] = []
    for rule in profile["syscalls"]:
        if not _applies(rule, caps=caps, arch=arch):
            continue
        action = _action(rule["action"], rule.get("errnoRet", profile.get("defaultErrnoRet")))
        if action == default:
            continue  # as runc does: libseccomp refuses a rule that changes nothing
        args = tuple(_comparison(arg) for arg in rule.get("args") or ())
        # libseccomp compares an argument once per rule: several comparisons of one
        # argument are alternatives, a rule each (runc's reading).
        indices = [index for index, *_ in args]
        alternatives = [(a,) for a in args] if len(set(indices)) < len(indices) else [args]
        for name in rule["names"]:
            picked += [Rule(name, action, alternative) for alternative in alternatives]
    return default, picked


def _applies(rule: dict[str, Any], *, caps: Collection[str], arch: str) -> bool:
    includes, excludes = rule.get("includes") or {}, rule.get("excludes") or {}
    unknown = (includes.keys() | excludes.keys()) - {"caps", "arches", "minKernel"}
    if unknown:
        raise ValueError(f"rule {rule['names']}: cannot read {sorted(unknown)}")
    if not set(includes.get("caps", ())) <= set(caps):
        return False
    if includes.get("arches") and arch not in includes["arches"]:
        return False
    if "minKernel" in includes and _kernel() < _version(includes["minKernel"]):
        return False
    if set(excludes.get("caps", ())) & set(caps) or arch in excludes.get("arches", ()):
        return False
    return not ("minKernel" in excludes and _kernel() >= _version(excludes["minKernel"]))


def _action(name: str, errno: int | None) -> int:
    if name == "SCMP_ACT_ALLOW":
        return _ALLOW
    if name == "SCMP_ACT_ERRNO":
        return _ERRNO | ((errno if errno is not None else 1) & 0xFFFF)
    raise ValueError(f"cannot apply action {name}")


def _comparison(arg: dict[str, Any]) -> tuple[int, int, int, int]:
    # For MASKED_EQ, `value` is the mask and `valueTwo` what the masked argument must be.
    return (arg["index"], _OPS[arg["op"]], arg["value"], arg.get("valueTwo", 0))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2])


def _kernel() -> tuple[int, ...]:
    release = platform.release().split("-")[0]
    return _version(release)


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


def _libseccomp() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("seccomp")
    if name is None:
        return None
    lib = ctypes.CDLL(name, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(_ArgCmp),
    ]  # fmt: skip
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    return lib


def libseccomp_missing() -> str:
    """Why a filter cannot be loaded here ("" when it can)."""
    return "" if _libseccomp() is not None else "no libseccomp on this machine"


def _load(default: int, picked: Sequence[Rule]) -> None:
    lib = _libseccomp()
    if lib is None:
        raise OSError("libseccomp is not installed")
    ctx = lib.seccomp_init(default)
    if not ctx:
        raise OSError("seccomp_init failed")
    for rule in picked:
        number = lib.seccomp_syscall_resolve_name(rule.name.encode())
        if number == _UNKNOWN_SYSCALL:
            continue  # unknown to this libseccomp: Docker skips it too
        compared = (_ArgCmp * len(rule.args))(*(_ArgCmp(*arg) for arg in rule.args))
        done = lib.seccomp_rule_add_array(ctx, rule.action, number, len(rule.args), compared)
        # A syscall this architecture lacks (a negative pseudo-number) cannot take a rule.
        if done < 0 and number >= 0:
            raise OSError(-done, f"seccomp_rule_add {rule.name}: {os.strerror(-done)}")
    done = lib.seccomp_load(ctx)
    if done < 0:
        raise OSError(-done, f"seccomp_load: {os.strerror(-done)}")


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: seccomp.py PROFILE -- ARGV...", file=sys.stderr)
        return 2
    # Docker gives the filter a container's capabilities, and the tests' containers have
    # none (cap_drop: ALL): so the rules for no capabilities.
    text = sys.stdin.read() if argv[1] == "-" else Path(argv[1]).read_text()
    default, picked = rules(json.loads(text), caps=())
    _load(default, picked)
    os.execvp(argv[3], argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
