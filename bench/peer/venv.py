"""The peer's own virtual environment: LangGraph's Agent Server and SDK, pinned, kept apart
from Blitz's.

`ensure_peer_venv()` makes `bench/.peer-venv` from `requirements.txt` beside this file the
first time (pip, from the package index: some 25 s), and again only when that file
changes; a stamp inside the environment holds the hash of the requirements it was made
from. Nothing of LangGraph's is ever installed into Blitz's environment, and Blitz is never
installed into this one: the driver (`drive.py`) runs here with the repository on its path
for the harness's stdlib-only modules (`procfs`, `stats`).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["PEER_VENV", "REQUIREMENTS", "ensure_peer_venv", "peer_python"]

_HERE = Path(__file__).resolve().parent
REQUIREMENTS = _HERE / "requirements.txt"
PEER_VENV = _HERE.parent / ".peer-venv"
_STAMP = PEER_VENV / "blitz-bench-requirements.sha256"


def peer_python() -> Path:
    return PEER_VENV / "bin" / "python"


def _wanted() -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()


def ensure_peer_venv() -> Path:
    """The peer environment's python, made (or made again) first if need be."""
    wanted = _wanted()
    if _STAMP.exists() and _STAMP.read_text().strip() == wanted and peer_python().exists():
        return peer_python()
    print(f"peer: making {PEER_VENV} from {REQUIREMENTS.name} (once)", flush=True)
    shutil.rmtree(PEER_VENV, ignore_errors=True)
    # The base interpreter, not Blitz's venv: the peer's environment must see none of it.
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(PEER_VENV)], check=True)
    subprocess.run(
        [
            str(peer_python()),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(REQUIREMENTS),
        ],
        check=True,
    )
    _STAMP.write_text(wanted + "\n")
    return peer_python()
