"""Reading the Dockerfile and .dockerignore as Docker does, so tests can check and replay them.

`read_dockerfile` splits a Dockerfile into stages of instructions (comments dropped, lines
joined at a trailing backslash), with each instruction's `--flag=value` options apart from
its arguments. `env_after` applies a stage's ENV lines to a starting environment, with
`$VAR`/`${VAR}` expanded as Docker expands them. `DockerIgnore` answers whether a path of
the build context reaches the builder.

It covers what our Dockerfile uses (the default `\\` escape, ENV in `KEY=VALUE` form, exec
form JSON for CMD, ENTRYPOINT and HEALTHCHECK) and raises on anything else, so that a
Dockerfile the tests cannot read fails loudly rather than being misread.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DockerIgnore", "Dockerfile", "Instruction", "Stage", "env_after", "read_dockerfile"]

_FLAG = re.compile(r"--([a-z-]+)=(\S*)")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
# Instructions whose leading `--name=value` words are options, not arguments.
_WITH_FLAGS = {"RUN", "COPY", "ADD", "FROM", "HEALTHCHECK"}


@dataclass(frozen=True)
class Instruction:
    """One instruction: its keyword in capitals, its options and the rest of its text."""

    keyword: str
    flags: tuple[tuple[str, str], ...]
    args: str
    line: int

    def flag(self, name: str) -> list[str]:
        """Every value of option `--name` (a RUN may have several `--mount`s)."""
        return [value for key, value in self.flags if key == name]

    def exec_form(self) -> list[str]:
        """The JSON array of an exec-form CMD, ENTRYPOINT or HEALTHCHECK CMD."""
        text = self.args
        if self.keyword == "HEALTHCHECK":
            keyword, _, text = text.partition(" ")
            if keyword.upper() != "CMD":
                raise ValueError(f"line {self.line}: HEALTHCHECK {keyword} is not a CMD")
        words = json.loads(text)
        if not (isinstance(words, list) and all(isinstance(w, str) for w in words)):
            raise ValueError(f"line {self.line}: {self.keyword} is not in exec form")
        return words


@dataclass
class Stage:
    """A build stage: `FROM base AS name` and the instructions after it."""

    base: str
    name: str
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction:
        """The instruction that counts when it is repeated (CMD, USER, HEALTHCHECK, ...)."""
        found = self.all(keyword)
        if not found:
            raise LookupError(f"stage {self.name!r} has no {keyword}")
        return found[-1]


@dataclass
class Dockerfile:
    args: dict[str, str]
    stages: list[Stage]

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    @property
    def final(self) -> Stage:
        """The stage `docker build` makes the image of, when no --target is given."""
        return self.stages[-1]


def read_dockerfile(path: Path) -> Dockerfile:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for instruction in _instructions(path.read_text()):
        if instruction.keyword == "FROM":
            match = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", instruction.args, re.IGNORECASE)
            if match is None:
                raise ValueError(f"line {instruction.line}: FROM {instruction.args}")
            stages.append(Stage(base=match[1], name=match[2] or str(len(stages))))
        elif not stages:
            if instruction.keyword != "ARG":
                raise ValueError(f"line {instruction.line}: only ARG may come before FROM")
            key, _, value = instruction.args.partition("=")
            args[key.strip()] = value.strip()
        else:
            stages[-1].instructions.append(instruction)
    return Dockerfile(args=args, stages=stages)


def env_after(stage: Stage, base: Mapping[str, str]) -> dict[str, str]:
    """`base` with the stage's ENV lines applied in order, as a container of it starts."""
    env = dict(base)
    for instruction in stage.all("ENV"):
        # Every pair of one ENV line sees the variables as they were before that line.
        before = dict(env)

        def expand(match: re.Match[str], before: dict[str, str] = before) -> str:
            return before.get(match[1] or match[2], "")

        for word in shlex.split(instruction.args):
            key, sep, value = word.partition("=")
            if not sep:
                raise ValueError(f"line {instruction.line}: write ENV as KEY=VALUE")
            env[key] = _VAR.sub(expand, value)
    return env


class DockerIgnore:
    """The patterns of a .dockerignore: the last one that matches a path (or a folder above
    it) decides, and a leading `!` lets back in what an earlier pattern left out."""

    def __init__(self, text: str) -> None:
        self._rules: list[tuple[bool, re.Pattern[str]]] = []
        for line in text.splitlines():
            pattern = line.strip()
            if not pattern or pattern.startswith("#"):
                continue
            keep = pattern.startswith("!")
            pattern = pattern.removeprefix("!").strip().strip("/")
            self._rules.append((keep, re.compile(_glob_regex(pattern))))

    def excludes(self, path: str) -> bool:
        """Whether `path` (relative to the context, with `/`) stays out of the build context."""
        parts = path.strip("/").split("/")
        candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        excluded = False
        for keep, regex in self._rules:
            if any(regex.fullmatch(c) for c in candidates):
                excluded = not keep
        return excluded


def _glob_regex(pattern: str) -> str:
    """Go's filepath.Match syntax plus `**` (any number of folders), as a regex."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out.append("[" + pattern[i + 1 : end].replace("^", "\\^", 1) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _instructions(text: str) -> list[Instruction]:
    instructions = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        # A comment line is dropped, even inside a continued instruction.
        if not line or line.startswith("#"):
            continue
        if not pending:
            start = number
        continued = line.endswith("\\")
        pending.append(line.removesuffix("\\").strip())
        if not continued:
            instructions.append(_instruction(" ".join(pending), start))
            pending = []
    if pending:
        raise ValueError(f"line {start}: the last instruction ends in a backslash")
    return instructions


def _instruction(text: str, line: int) -> Instruction:
    keyword, _, rest = text.partition(" ")
    keyword = keyword.upper()
    flags = []
    rest = rest.strip()
    while keyword in _WITH_FLAGS and (match := _FLAG.match(rest)):
        flags.append((match[1], match[2]))
        rest = rest[match.end() :].strip()
    return Instruction(keyword=keyword, flags=tuple(flags), args=rest, line=line)
