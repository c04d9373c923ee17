"""A workflow file read and checked: YAML in, a `Workflow` out, or one clear error.

Every refusal is `INVALID_ARGUMENT` with an ErrorInfo naming the file (`file`), the field
(`field`: `steps[2].run`) and, where the YAML has one, its line (`line`, 1-based), so a
person can go straight to it. Checked here, beyond the models' own rules: the file's size
(256 KiB), duplicate step ids, an approval's `of` naming no earlier prompt step, and every
template: its syntax, that it names only declared params and earlier steps, and that its
loops over values written in the file stay within the template budget (`limit` then names
the limit, as when a rendering goes past it).
Sub-workflows are checked where the catalog resolves them (`catalog.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import yaml
from pydantic import ValidationError

from blitz.errors import BlitzError, Reason
from blitz.workflows.definitions import STEP_TYPES, Workflow
from blitz.workflows.templates import BudgetExceeded, TemplateRefused, references

__all__ = ["MAX_FILE_BYTES", "Yaml12Loader", "definition_error", "field_path", "load_workflow"]

MAX_FILE_BYTES = 256 * 1024

Path_ = Sequence[str | int]


class Yaml12Loader(yaml.SafeLoader):
    """YAML 1.2's booleans (true, false) only: `on:`, `yes` and `no` stay text, so a
    retry's `on` is a key and an option `yes` is the word."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def field_path(loc: Path_) -> str:
    """`("steps", 2, "run")` as `steps[2].run`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def definition_error(file: str, loc: Path_, message: str, line: int | None = None) -> BlitzError:
    """INVALID_ARGUMENT about one place in a workflow file."""
    where = field_path(loc)
    metadata = {"file": file, "field": where}
    if line is not None:
        metadata["line"] = str(line)
    shown = f"{file}" + (f":{line}" if line is not None else "") + (f": {where}" if where else "")
    return BlitzError(Reason.INVALID_ARGUMENT, f"{shown}: {message}", metadata)


def _line(root: yaml.Node | None, loc: Path_) -> int | None:
    """The 1-based line of the node at `loc`, or of the deepest one found on the way."""
    node = root
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == part:
                    child = value
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if 0 <= part < len(node.value):
                child = node.value[part]
        if child is None:
            break
        node = child
        line = node.start_mark.line + 1
    return line


def _loc(raw: tuple[str | int, ...]) -> list[str | int]:
    """A pydantic error location without the union tags it adds (`steps.2.command.run`)."""
    out: list[str | int] = []
    for i, part in enumerate(raw):
        if part in STEP_TYPES and i >= 2 and raw[i - 2] == "steps" and isinstance(raw[i - 1], int):
            continue
        out.append(part)
    return out


def _templated(index: int, step: Any) -> Iterator[tuple[list[str | int], str, bool]]:
    """Each template of a step: where it is, its text, and whether it is an expression."""
    base: list[str | int] = ["steps", index]
    if step.if_ is not None:
        yield [*base, "if"], step.if_, True
    if step.type == "prompt":
        yield [*base, "prompt"], step.prompt, False
    elif step.type == "command":
        yield [*base, "run"], step.run, False
        if step.until is not None:
            yield [*base, "until", "run"], step.until.run, False
    elif step.type == "approval":
        if step.question is not None:
            yield [*base, "question"], step.question, False
        for i, option in enumerate(step.options):
            yield [*base, "options", i], option, False
    else:
        for name, value in step.params.items():
            if isinstance(value, str):
                yield [*base, "params", name], value, False


def load_workflow(file: str, data: bytes) -> Workflow:
    """The workflow in `data` (the file named `file`, as shown in errors), checked."""
    if len(data) > MAX_FILE_BYTES:
        raise definition_error(
            file, [], f"the file is {len(data)} bytes; the limit is {MAX_FILE_BYTES}"
        )
    try:
        text = data.decode("utf-8")
        root = yaml.compose(text, Loader=Yaml12Loader)
        raw = yaml.load(text, Loader=Yaml12Loader)
    except UnicodeDecodeError:
        raise definition_error(file, [], "the file is not UTF-8 text") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise definition_error(file, [], f"malformed YAML: {exc.problem}", line) from None
    except yaml.YAMLError as exc:
        raise definition_error(file, [], f"malformed YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise definition_error(file, [], "a workflow file is a mapping (workflow:, steps:, …)", 1)
    try:
        workflow = Workflow.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = _loc(tuple(first["loc"]))
        message = first["msg"]
        if first["type"] == "union_tag_invalid":
            message = f"unknown step type; the types are {', '.join(STEP_TYPES)}"
        raise definition_error(file, loc, message, _line(root, loc)) from None
    _check(file, workflow, root)
    return workflow


def _check(file: str, workflow: Workflow, root: yaml.Node | None) -> None:
    seen: dict[str, int] = {}
    for index, step in enumerate(workflow.steps):
        if step.id in seen:
            loc: list[str | int] = ["steps", index, "id"]
            raise definition_error(
                file,
                loc,
                f"duplicate step id {step.id!r} (also steps[{seen[step.id]}])",
                _line(root, loc),
            )
        if step.type == "approval" and step.of is not None:
            target = seen.get(step.of)
            loc = ["steps", index, "of"]
            if target is None:
                raise definition_error(
                    file, loc, f"`of` names no earlier step: {step.of!r}", _line(root, loc)
                )
            planned = workflow.steps[target]
            if planned.type != "prompt" or not planned.plan:
                raise definition_error(
                    file, loc, "`of` must name a prompt step with `plan: true`", _line(root, loc)
                )
        for loc, source, expression in _templated(index, step):
            try:
                refs = references(source, expression=expression)
            except TemplateRefused as exc:
                error = definition_error(file, loc, str(exc), _line(root, loc))
                if isinstance(exc, BudgetExceeded):
                    error.metadata["limit"] = exc.limit
                raise error from None
            for name in sorted(refs.params - workflow.params.keys()):
                raise definition_error(file, loc, f"unknown param {name!r}", _line(root, loc))
            for sid in sorted(refs.steps - seen.keys()):
                later = any(s.id == sid for s in workflow.steps)
                why = "a later step" if later else "no such step"
                if sid == step.id:
                    why = "the step itself"
                raise definition_error(
                    file, loc, f"the template reads steps.{sid}: {why}", _line(root, loc)
                )
        seen[step.id] = index
