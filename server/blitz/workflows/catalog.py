"""Which workflows a session can run, and each one resolved with its sub-workflows.

Two folders are read: the session's `.blitz/workflows/` (through the workspace's path gate,
so a link out of the workspace is refused as the agent's tools refuse it) and the
operator's `--workflows-dir`, shared by every principal. A workspace's file of the same
name wins. A broken file is kept, with its error, so that ListWorkflows can show it.
Every call here blocks on files: the core runs them off the event loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from blitz.errors import BlitzError, Reason
from blitz.paths import PathRefused, Workspace
from blitz.workflows.definitions import Param, SubWorkflowStep, Workflow
from blitz.workflows.loading import MAX_FILE_BYTES, definition_error, load_workflow

__all__ = [
    "MAX_DEPTH",
    "WORKSPACE_FOLDER",
    "Found",
    "bind_params",
    "file_of",
    "resolve",
    "scan",
]

WORKSPACE_FOLDER = ".blitz/workflows"
# How deep sub-workflows may nest: the top workflow is depth 1.
MAX_DEPTH = 5
_SUFFIXES = (".yaml", ".yml")
_MAX_FILES = 500

ParamValue = str | int | bool


@dataclass(frozen=True)
class Found:
    """One workflow file: its name, where it was found, and what it holds or why not."""

    name: str
    source: str  # "workspace" or "server"
    path: str
    workflow: Workflow | None
    error: BlitzError | None


def _read_folder(folder: Workspace, rel: str, source: str, shown: str) -> list[Found]:
    try:
        listing = folder.entries(rel)
    except (FileNotFoundError, NotADirectoryError, PathRefused):
        return []
    out: list[Found] = []
    for entry in listing.entries[:_MAX_FILES]:
        stem, suffix = entry.name.rsplit(".", 1)[0], "." + entry.name.rsplit(".", 1)[-1]
        if suffix not in _SUFFIXES or entry.kind != "file":
            continue
        path = f"{rel}/{entry.name}" if rel != "." else entry.name
        file = f"{shown}{entry.name}"
        try:
            got = folder.read(path, MAX_FILE_BYTES + 1)
            data = got.data if got.size <= MAX_FILE_BYTES else got.data + b"\0"
            workflow = load_workflow(file, data)
            if workflow.workflow != stem:
                raise definition_error(
                    file, ["workflow"], f"the name {workflow.workflow!r} is not the file's {stem!r}"
                )
            out.append(Found(stem, source, entry.name, workflow, None))
        except BlitzError as exc:
            out.append(Found(stem, source, entry.name, None, exc))
        except (OSError, PathRefused) as exc:
            error = definition_error(file, [], f"the file cannot be read: {exc}")
            out.append(Found(stem, source, entry.name, None, error))
    return out


def scan(workspace: Workspace | None, server_dir: Path | None) -> dict[str, Found]:
    """Every workflow file of the workspace and the server's folder, by name."""
    found: dict[str, Found] = {}
    if server_dir is not None:
        try:
            folder = Workspace(server_dir)
        except (OSError, PathRefused):
            folder = None
        if folder is not None:
            for item in _read_folder(folder, ".", "server", ""):
                found[item.name] = item
    if workspace is not None:
        for item in _read_folder(workspace, WORKSPACE_FOLDER, "workspace", WORKSPACE_FOLDER + "/"):
            found[item.name] = item
    return dict(sorted(found.items()))


def workflows_of(workspace_root: Path, workspace: str, server_dir: Path | None) -> dict[str, Found]:
    """Every workflow file a session of the workspace `workspace` under `workspace_root`
    can see (blocking): its own, if the workspace opens, and the server's."""
    try:
        opened: Workspace | None = Workspace.named(workspace_root, workspace)
    except (OSError, PathRefused):
        opened = None
    return scan(opened, server_dir)


def file_of(item: Found) -> str:
    """The file of `item` as errors name it: `.blitz/workflows/x.yaml`, or `x.yaml` in the
    server's folder."""
    return f"{WORKSPACE_FOLDER}/{item.path}" if item.source == "workspace" else item.path


def resolve(name: str, found: Mapping[str, Found]) -> Workflow:
    """The workflow `name`, with every sub-workflow it runs checked: each exists and loads,
    no cycle, at most MAX_DEPTH deep, its params known and its required ones given."""
    item = found.get(name)
    if item is None:
        raise BlitzError(
            Reason.INVALID_ARGUMENT,
            f"no workflow named {name!r}",
            {"field": "name", "known": ", ".join(found)[:500]},
        )
    if item.error is not None:
        raise item.error
    assert item.workflow is not None
    _walk(item, found, (name,))
    return item.workflow


def _walk(item: Found, found: Mapping[str, Found], chain: tuple[str, ...]) -> None:
    assert item.workflow is not None
    for index, step in enumerate(item.workflow.steps):
        if not isinstance(step, SubWorkflowStep):
            continue
        loc: list[str | int] = ["steps", index, "workflow"]
        if step.workflow in chain:
            cycle = " → ".join((*chain, step.workflow))
            raise definition_error(file_of(item), loc, f"a cycle of sub-workflows: {cycle}")
        if len(chain) >= MAX_DEPTH:
            raise definition_error(
                file_of(item), loc, f"sub-workflows nest deeper than {MAX_DEPTH}"
            )
        sub = found.get(step.workflow)
        if sub is None:
            raise definition_error(file_of(item), loc, f"no workflow named {step.workflow!r}")
        if sub.error is not None:
            raise sub.error
        assert sub.workflow is not None
        declared = sub.workflow.params
        for key in step.params:
            if key not in declared:
                raise definition_error(
                    file_of(item),
                    ["steps", index, "params", key],
                    f"{step.workflow} has no param {key!r}",
                )
        for key, param in declared.items():
            if param.required and param.default is None and key not in step.params:
                raise definition_error(
                    file_of(item),
                    ["steps", index, "params"],
                    f"{step.workflow} needs the param {key!r}",
                )
        _walk(sub, found, (*chain, step.workflow))


def _convert(name: str, param: Param, value: ParamValue) -> ParamValue:
    def refuse(why: str) -> BlitzError:
        return BlitzError(
            Reason.INVALID_ARGUMENT, f"param {name!r}: {why}", {"field": f"params.{name}"}
        )

    if param.type == "int":
        if isinstance(value, bool):
            raise refuse("expected an integer")
        if isinstance(value, int):
            return value
        try:
            return int(value.strip())
        except ValueError:
            raise refuse(f"expected an integer, got {value!r}") from None
    if param.type == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "yes", "1", "on"):
            return True
        if text in ("false", "no", "0", "off"):
            return False
        raise refuse(f"expected true or false, got {value!r}")
    text = value if isinstance(value, str) else str(value).lower()
    if param.type == "enum" and text not in param.values:
        raise refuse(f"expected one of {', '.join(param.values)}, got {text!r}")
    return text


def bind_params(workflow: Workflow, given: Mapping[str, ParamValue]) -> dict[str, ParamValue]:
    """The run's params, each as its declared type, defaults filled in; INVALID_ARGUMENT
    (`field` `params.NAME`) for an unknown, missing or ill-typed one."""
    for key in given:
        if key not in workflow.params:
            known = ", ".join(workflow.params) or "none"
            raise BlitzError(
                Reason.INVALID_ARGUMENT,
                f"unknown param {key!r}; {workflow.workflow} takes: {known}",
                {"field": f"params.{key}"},
            )
    bound: dict[str, ParamValue] = {}
    for key, param in workflow.params.items():
        if key in given:
            bound[key] = _convert(key, param, given[key])
        elif param.default is not None:
            bound[key] = _convert(key, param, param.default)
        elif param.required:
            raise BlitzError(
                Reason.INVALID_ARGUMENT,
                f"the param {key!r} is required",
                {"field": f"params.{key}"},
            )
        else:
            bound[key] = (
                "" if param.type in ("string", "enum") else 0 if param.type == "int" else False
            )
    return bound
