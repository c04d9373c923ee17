"""Run a command under Landlock: `python -I landlocked.py SPEC -- ARGV...`.

Where namespaces are refused, this is the command's box (sandbox.py, `landlock`): it
restricts itself with the kernel's Landlock, then execs the command, which inherits the
restriction and cannot lift it. SPEC is JSON: the hierarchies it may read and execute
(`read`), the devices it may read and write (`devices`), the hierarchies it may also
write (`write`), a private temporary folder made here (`tmp`), and whether its network
was approved (`network`). Landlock only adds rights below a folder, never takes one
away, so a folder inside the workspace (`.git`) cannot be kept read-only here as the box
keeps it (docs/security.md). Without it, every TCP bind and connect is refused where the kernel has
Landlock's network rules (ABI 4); signals and abstract UNIX sockets beyond its own
processes are refused where it has scopes (ABI 6). Anything the kernel does not support
is left out (best effort); a kernel without Landlock at all makes it exit 126.

It is run by path by the server's interpreter and imports nothing of Blitz, so that it
starts quickly; it must never run the command unrestricted.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from landlockpy import AccessFS, AccessNet, Ruleset, Scope, abi_version

_READ = AccessFS.EXECUTE | AccessFS.READ_FILE | AccessFS.READ_DIR
_DEVICE = AccessFS.READ_FILE | AccessFS.WRITE_FILE | AccessFS.IOCTL_DEV
# The rights a rule on a file (not a folder) may carry; the kernel refuses others.
_FILE = (
    AccessFS.EXECUTE | AccessFS.READ_FILE | AccessFS.WRITE_FILE | AccessFS.TRUNCATE
    | AccessFS.IOCTL_DEV
)  # fmt: skip


def _restrict(spec: dict[str, object]) -> None:
    network = bool(spec.get("network"))
    with Ruleset(
        handled_net=AccessNet.NONE if network else AccessNet.BIND_TCP | AccessNet.CONNECT_TCP,
        scoped=Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL,
    ) as ruleset:
        everything = ruleset.handled_fs
        tmp = str(spec.get("tmp") or "")
        if tmp:
            os.makedirs(tmp, mode=0o700, exist_ok=True)
        for path in _strings(spec, "read"):
            _allow(ruleset, path, _READ)
        for path in _strings(spec, "devices"):
            _allow(ruleset, path, _DEVICE)
        for path in [*_strings(spec, "write"), *([tmp] if tmp else [])]:
            _allow(ruleset, path, everything)
        ruleset.restrict()


def _allow(ruleset: Ruleset, path: str, access: AccessFS) -> None:
    if not os.path.exists(path):
        return
    if not os.path.isdir(path):
        access &= _FILE
    ruleset.allow_path(path, access)


def _strings(spec: dict[str, object], key: str) -> list[str]:
    value = spec.get(key) or []
    return [str(item) for item in value] if isinstance(value, list) else []


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: landlocked.py SPEC -- ARGV...", file=sys.stderr)
        return 2
    if abi_version() < 1:
        print("landlock is not available on this kernel", file=sys.stderr)
        return 126
    _restrict(json.loads(argv[1]))
    # Python ignores these; the command gets them as any process does (subprocess's
    # restore_signals, which this exec skips).
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    command = argv[3:]
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv))
