"""The server's own files stay out of every command's sight, and no bind shows them.

The one list (`blitz.config.hidden_paths`) is built from the table's marks: every setting
that names a file or folder of the server's own is marked, the others are named here with
why they are not. The box covers each listed path and Landlock leaves it out wherever it
lies, /etc included, and through a link (the real server's configuration file is in the
box matrix, test_box.py); `--command-binds` refuses a folder that is one of them, holds
one or lies inside one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from blitz.agent.box import BoxSpec
from blitz.agent.sandbox import CommandSandbox, Isolation, available
from blitz.agent.shell import run_shell
from blitz.assembly import open_core
from blitz.auth import ServeRefused
from blitz.config import SETTINGS, Settings, SettingsError, hidden_paths, resolve

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
MECHANISMS = [how for how in (Isolation.BOX, Isolation.LANDLOCK) if available(how)]
MARKER = "server-file-secret-81c4"

# Settings that name a file or folder, by the metavar their flag shows.
_PATH_METAVARS = {"PATH", "DIR", "PATH_OR_URL", "DIR[,DIR…]"}
# Those that name a file or folder of the server's own, hidden from commands.
HIDDEN = {
    "data_dir",
    "database",
    "workspace_root",
    "repo_dir",
    "tokens_file",
    "tls_key",
    "mcp_config",
}
# Those that do not, and why.
SHOWN = {
    "tls_cert": "a certificate chain is public: every client is sent it",
    "workflows_dir": "every principal's sessions run its workflows; they hold no secret",
    "command_binds": "the folders commands are meant to see",
}


def test_every_setting_naming_a_file_is_hidden_or_said_to_be_public():
    naming_paths = {spec.name for spec in SETTINGS if spec.metavar in _PATH_METAVARS}
    assert naming_paths == HIDDEN | SHOWN.keys(), "a new path setting: mark it or say why not"
    assert {spec.name for spec in SETTINGS if spec.hidden_from_commands} == HIDDEN


def test_the_one_list_holds_the_config_file_and_every_marked_setting(tmp_path: Path):
    config = tmp_path / "blitz.toml"
    config.write_text(f'tokens_file = "{tmp_path}/tokens"\n')
    link = tmp_path / "link.pem"
    link.symlink_to(tmp_path / "real-key.pem")
    flags = {
        "data_dir": str(tmp_path / "data"),
        "database": f"sqlite:///{tmp_path}/elsewhere.db",
        "workspace_root": str(tmp_path / "ws"),
        "tls_cert": str(tmp_path / "cert.pem"),
        "tls_key": str(link),
        "mcp_config": str(tmp_path / "mcp.json"),
        "workflows_dir": str(tmp_path / "flows"),
    }

    hidden = hidden_paths(resolve(flags, {}, config=str(config)).settings)

    assert hidden[str(config)] == "--config"
    assert hidden[str(tmp_path / "tokens")] == "--tokens-file"
    assert hidden[str(tmp_path / "data")] == "--data-dir"
    assert hidden[str(tmp_path / "ws")] == "--workspace-root"
    assert hidden[str(tmp_path / "mcp.json")] == "--mcp-config"
    # A link is listed as given and as what it leads to.
    assert hidden[str(link)] == hidden[str(tmp_path / "real-key.pem")] == "--tls-key"
    # SQLite writes beside its file.
    for side in ("", "-wal", "-shm", "-journal"):
        assert hidden[f"{tmp_path}/elsewhere.db{side}"] == "--database"
    assert str(tmp_path / "cert.pem") not in hidden
    assert str(tmp_path / "flows") not in hidden


def test_a_database_server_names_no_file():
    settings = Settings(database="postgresql://blitz:pw@db/blitz", data_dir=Path("/srv/d"))
    assert not [path for path in hidden_paths(settings) if "postgresql" in path]


@pytest.fixture
def under_etc() -> Iterator[Path]:
    """A folder of this test's own in /etc, where the box and Landlock show the system."""
    if not os.access("/etc", os.W_OK):
        pytest.skip("this user cannot write /etc")
    folder = Path(f"/etc/blitz-test-{uuid.uuid4().hex[:12]}")
    folder.mkdir()
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("how", MECHANISMS, ids=lambda i: i.value)
async def test_hidden_files_under_etc_cannot_be_read_by_any_reader(
    how: Isolation, under_etc: Path, workspace: Path
):
    """Deep in /etc, by a link beside them, a folder of them: every reader is refused, and
    the files beside them are still there."""
    config = under_etc / "deep" / "blitz.toml"
    data = under_etc / "data"
    for secret in (config, data / "blitz.db"):
        secret.parent.mkdir(parents=True, exist_ok=True)
        secret.write_text(f"# {MARKER}\n")
    (under_etc / "deep" / "beside.txt").write_text("beside\n")
    (under_etc / "link.toml").symlink_to(config)
    settings = Settings(config_file=str(config), data_dir=data, workspace_root=workspace.parent)
    sandbox = CommandSandbox(isolation=how, box=BoxSpec(hidden=tuple(hidden_paths(settings))))
    readers = []
    for path in (config, under_etc / "link.toml", data / "blitz.db"):
        readers += [
            f"cat {path}",
            f"base64 -w0 {path}",
            f"dd if={path} status=none",
            f"python3 -c \"print(open('{path}').read())\"",
        ]
    command = "; ".join([*readers, f"ls {data}", f"cat {under_etc}/deep/beside.txt"])

    outcome = await run_shell(
        command, cwd=workspace, env=ENV, time_limit=20, output_cap=65536, sandbox=sandbox
    )

    assert MARKER not in outcome.output
    assert "IyBzZXJ2ZXItZmlsZS1zZWNyZXQ" not in outcome.output  # the marker in base64
    assert "blitz.db" not in outcome.output.replace(f"{data}/blitz.db", "")
    assert "beside" in outcome.output


@pytest.mark.parametrize(
    ("what", "relation"),
    [
        *((folder, relation) for folder in ("data_dir", "workspace_root")
          for relation in ("equal", "parent", "inside", "link")),
        *(("config", relation) for relation in ("equal", "parent", "link")),
    ],
)  # fmt: skip
def test_a_bind_that_would_show_a_server_file_is_refused(tmp_path: Path, what: str, relation: str):
    config = tmp_path / "etc" / "blitz.toml"
    config.parent.mkdir()
    config.write_text("")
    places = {
        "data_dir": tmp_path / "srv" / "data",
        "workspace_root": tmp_path / "work" / "workspaces",
        "config": config,
    }
    target = places[what]
    target.parent.mkdir(parents=True, exist_ok=True)
    if what != "config":
        target.mkdir()
    (tmp_path / "to-it").symlink_to(target)
    bind = {
        "equal": target,
        "parent": target.parent,
        "inside": target / "sub",
        "link": tmp_path / "to-it",
    }[relation]
    flags = {
        "data_dir": str(places["data_dir"]),
        "workspace_root": str(places["workspace_root"]),
        "command_binds": str(bind),
    }

    with pytest.raises(SettingsError, match=r"--command-binds: .* no command may see") as refused:
        resolve(flags, {}, config=str(config))

    assert str(target) in str(refused.value)


def test_a_bind_refusal_names_where_the_bind_came_from(tmp_path: Path):
    data = tmp_path / "data"
    with pytest.raises(SettingsError, match=r"^BLITZ_COMMAND_BINDS: .*\(--data-dir\)"):
        resolve({"data_dir": str(data)}, {"BLITZ_COMMAND_BINDS": str(tmp_path)})


def test_an_unrelated_bind_is_accepted(tmp_path: Path):
    tools = tmp_path / "opt" / "tools"
    tools.mkdir(parents=True)
    config = tmp_path / "etc" / "blitz.toml"
    config.parent.mkdir()
    config.write_text("")
    flags = {"data_dir": str(tmp_path / "data"), "command_binds": str(tools)}

    settings = resolve(flags, {}, config=str(config)).settings

    assert settings.command_binds == (str(tools),)


async def test_settings_made_in_code_are_refused_at_start_too(tmp_path: Path):
    """`resolve` refuses first; a server assembled from settings made in code still does."""
    settings = Settings(
        data_dir=tmp_path / "data",
        database=str(tmp_path / "data" / "blitz.db"),
        workspace_root=tmp_path / "data" / "workspaces",
        command_binds=(str(tmp_path),),
    )
    with pytest.raises(ServeRefused, match="--command-binds"):
        async with open_core(settings):
            pass


@pytest.mark.processes
def test_blitz_serve_refuses_to_start_with_such_a_bind(tmp_path: Path):
    data = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, "-m", "blitz.cli", "serve", f"--data-dir={data}",
         f"--command-binds={tmp_path}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--command-binds" in done.stderr and "(--data-dir)" in done.stderr
