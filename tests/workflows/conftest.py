"""Fixtures of the workflow tests: a server folder of workflow files, and a session's own."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from blitz.config import Settings


@pytest.fixture
def shared_dir(tmp_path: Path) -> Path:
    """The operator's --workflows-dir."""
    folder = tmp_path / "shared-workflows"
    folder.mkdir()
    return folder


@pytest.fixture
def settings(settings: Settings, shared_dir: Path) -> Settings:
    """The usual test server's settings (either engine), with `shared_dir` served."""
    return replace(settings, workflows_dir=str(shared_dir))


def write_workflow(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


def session_folder(settings: Settings, workspace: str) -> Path:
    """The `.blitz/workflows/` folder of a session's workspace."""
    return settings.workspace_root / workspace / ".blitz" / "workflows"
