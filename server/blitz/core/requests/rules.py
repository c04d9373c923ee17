"""What a rule covers, and what the rules that apply to an action say of it.

A rule matches an approval request one of three ways (`RuleRecord.match_kind`):

- EXACT: its `scope_label`, to the character (`command: git status`). The rule every
  SESSION or ALWAYS decision made before rules could be more, and still the default.
- COMMAND_PREFIX: the words a command starts with (`pytest -q`), of one family of
  commands (`command:`, `command+network:`, …: a rule made for commands without network
  never covers one with it). The command is parsed as the shell would (bashlex): a command
  of several parts (`;`, `&&`, `||`, `|`, `&`, a new line) is covered only when each part
  is, by this rule or another; one with a substitution (`$(…)`, backquotes, `<(…)`), a
  compound (`if`, `for`, a subshell) or anything the parser does not know is never
  covered by a prefix, only exactly.
- PATH_GLOB: a workspace path pattern (`src/**/*.py`: `*` within one folder name, `**`
  across folders; wcmatch's globbing) for WRITE and DELETE.

Rules are matched on the event loop, so each pattern is bounded by what it costs. A glob
has no braces or extended patterns (wcmatch expands neither without its flags), and at most
`MAX_GLOBSTARS` `**`: wcmatch matches each `*` in a name without backtracking, but the
work of `**` grows with the path's length to the power of their number (three over a
path of 500 folders: seconds). A rule over the bound is refused when made and covers
nothing if one is stored. A command is parsed from its scope label, at most 1024
characters (`SCOPE_LABEL_MAX`): bashlex's slowest there, nested substitutions, takes about
a tenth of a second, and each command is parsed once (`_parts` is cached).

A rule allows or denies (`effect`); of the rules that cover an action, a deny wins over
every allow (`verdict`). An expired rule is not read (the store leaves it out). Nothing
here stores a rule or announces one (`approvals.py`, `pending.py`).
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, replace

from wcmatch import glob

from blitz.core.requests.destructive import Destructive, destructive
from blitz.errors import invalid_argument
from blitz.store import RuleRecord
from blitz.v1 import turn_pb2 as t

__all__ = [
    "MAX_GLOBSTARS",
    "Verdict",
    "command_of",
    "command_parts",
    "destructive_action",
    "globbed",
    "globstars",
    "made_rule",
    "path_of",
    "prefix_words",
    "suggested_rule",
    "verdict",
]

_EXACT = t.RULE_MATCH_EXACT
_PREFIX = t.RULE_MATCH_COMMAND_PREFIX
_GLOB = t.RULE_MATCH_PATH_GLOB
_DENY = t.RULE_EFFECT_DENY
# The node kinds a command may be made of and still be matched by prefixes.
_PLAIN = frozenset(
    {"list", "pipeline", "command", "word", "operator", "pipe", "redirect", "assignment",
     "parameter", "tilde"}
)  # fmt: skip
_GLOB_FLAGS = glob.GLOBSTAR | glob.DOTGLOB
# `**` in one glob: two cost at most a few tens of milliseconds on the longest path.
MAX_GLOBSTARS = 2


@dataclass(frozen=True)
class Verdict:
    """What the rules say of an action: allowed or denied, and by which rule."""

    rule: RuleRecord
    allowed: bool


def verdict(rules: Iterable[RuleRecord], approval: t.ApprovalRequest) -> Verdict | None:
    """What `rules` say of the action `approval` would take: a deny that covers it wins;
    else an allow that covers it (for a command of several parts: allows that cover every
    part); else nothing (a person decides)."""
    mine = [r for r in rules if r.kind == approval.kind]
    family, command = _command(approval.scope_label)
    # The command is parsed only when a prefix rule could cover it (bashlex is dear).
    prefixed = any(r.match_kind == _PREFIX for r in mine)
    parts = command_parts(command) if command is not None and prefixed else None
    path = _path(approval.scope_label)
    allow: RuleRecord | None = None
    covered_parts: set[int] = set()
    for rule in mine:
        if rule.match_kind == _EXACT or not rule.match_kind:
            hit = rule.scope_label == approval.scope_label
            if hit and rule.effect == _DENY:
                return Verdict(rule, allowed=False)
            if hit:
                allow = allow or rule
        elif rule.match_kind == _PREFIX and parts and _family(rule) == family:
            words = _words(rule.pattern)
            hits = {i for i, part in enumerate(parts) if part[: len(words)] == words}
            if hits and rule.effect == _DENY:
                return Verdict(rule, allowed=False)
            if hits:
                covered_parts |= hits
                if len(covered_parts) == len(parts):
                    allow = allow or rule
        elif rule.match_kind == _GLOB and path is not None and _globbed(path, rule.pattern):
            if rule.effect == _DENY:
                return Verdict(rule, allowed=False)
            allow = allow or rule
    return Verdict(allow, allowed=True) if allow is not None else None


def command_parts(command: str) -> list[list[str]] | None:
    """The words of each simple command `command` is made of, as the shell runs them; None
    when it is anything a prefix must not be trusted to cover (see the module doc)."""
    return _parts(command)


# A command of plain words only: letters, digits and `_./:,+@%-`, one space between them.
# The shell reads it as its words, so it needs no parser (a fifth of a park's CPU went to
# bashlex, for `echo x`). Anything else, a reserved word first or an assignment included,
# is parsed.
_PLAIN_WORDS = re.compile(r"[\w./:,+@%-]+(?: [\w./:,+@%-]+)*", re.ASCII)
_RESERVED = frozenset(
    "if then else elif fi case esac for select while until do done in function time coproc".split()
)


@functools.lru_cache(maxsize=1024)
def _parts(command: str) -> list[list[str]] | None:
    if _PLAIN_WORDS.fullmatch(command):
        words = command.split(" ")
        if words[0] not in _RESERVED:
            return [words]
    # Imported when first needed: its parser tables take a tenth of the server's start.
    import bashlex

    try:
        trees = bashlex.parse(command)
    except Exception:  # bashlex raises its own errors, and others on what it cannot read
        return None
    if any(_substitutes(tree) for tree in trees):
        return None
    parts: list[list[str]] = []
    for tree in trees:
        if not _simple(tree, parts):
            return None
    return [list(words) for words in parts] if parts else None


def _substitutes(node: object) -> bool:
    """Whether anything in the tree runs a command of its own (a redirection's target
    included): a command or process substitution."""
    if getattr(node, "kind", "") in ("commandsubstitution", "processsubstitution"):
        return True
    for name in ("parts", "list", "command", "output", "input"):
        child = getattr(node, name, None)
        children = child if isinstance(child, list) else [child]
        if any(c is not None and hasattr(c, "kind") and _substitutes(c) for c in children):
            return True
    return False


def _simple(node: object, parts: list[list[str]]) -> bool:
    kind = getattr(node, "kind", "")
    if kind not in _PLAIN:
        return False
    if kind == "command":
        words = []
        for part in getattr(node, "parts", []):
            sub = getattr(part, "kind", "")
            if sub == "word":
                words.append(part.word)
            elif sub == "assignment":
                words.append(part.word)  # kept: `X=1 rm` does not start with `rm`
            elif sub != "redirect":
                return False
        parts.append(words)
        return True
    for child in getattr(node, "parts", None) or getattr(node, "list", None) or []:
        if not _simple(child, parts):
            return False
    return True


def made_rule(
    spec: t.RuleMatch, approval: t.ApprovalRequest, *, label: str
) -> tuple[int, str, str]:
    """The rule a decision makes of `spec` for `approval` (whose exact label, an edited
    command's perhaps, is `label`): its match kind, pattern and scope label. The rule must
    cover the action it is made for: INVALID_ARGUMENT (on `rule`) otherwise, and for a
    match that does not fit the action's kind."""
    if spec.match in (t.RULE_MATCH_UNSPECIFIED, _EXACT):
        return _EXACT, "", label
    probe = RuleRecord(
        id="", scope=0, kind=approval.kind, scope_label=label, session_id="", workspace="",
        caller="", create_time=0.0, match_kind=spec.match, pattern=spec.pattern.strip(),
    )  # fmt: skip
    if spec.match == _PREFIX:
        family, command = _command(label)
        if command is None:
            raise invalid_argument("rule.match", "a prefix rule is for commands")
        probe = replace(probe, scope_label=f"{family}: {probe.pattern}")
    elif _path(label) is None:
        raise invalid_argument("rule.match", "a glob rule is for writes and deletes")
    elif _globstars(probe.pattern) > MAX_GLOBSTARS:
        raise invalid_argument(
            "rule.pattern",
            f"a glob has at most {MAX_GLOBSTARS} `**` (each multiplies the matching work)",
            limit=str(MAX_GLOBSTARS),
        )
    else:
        probe = replace(probe, scope_label=f"{label.partition(': ')[0]}: {probe.pattern}")
    shown = t.ApprovalRequest(kind=approval.kind, scope_label=label)
    if verdict([probe], shown) is None:
        raise invalid_argument("rule", "the rule does not cover the action it is made for")
    return probe.match_kind, probe.pattern, probe.scope_label


def suggested_rule(approval: t.ApprovalRequest) -> t.RuleMatch | None:
    """A rule broader than the exact label a client may offer for this request: a
    command's first words, a nested path's folder; None where there is none."""
    family, command = _command(approval.scope_label)
    if command is not None:
        parts = command_parts(command)
        # A destructive command gets no broader rule: one key would allow every `rm`.
        if not parts or destructive(parts, command) is not None:
            return None
        # One prefix must cover every part, or it is not worth offering.
        words = next(
            (
                head
                for head in (_prefix(parts[0]), parts[0][:1])
                if head and all(part[: len(head)] == head for part in parts)
            ),
            None,
        )
        if words is None:
            return None
        pattern = shlex.join(words)
        kinds = "commands" + (f" ({family.split('+', 1)[1]})" if "+" in family else "")
        return t.RuleMatch(match=_PREFIX, pattern=pattern, label=f"{kinds} starting `{pattern}`")
    path = _path(approval.scope_label)
    if path is not None and "/" in path:
        folder = path.rsplit("/", 1)[0]
        pattern = f"{glob.escape(folder)}/**"
        verb = approval.scope_label.split(":", 1)[0]
        return t.RuleMatch(match=_GLOB, pattern=pattern, label=f"{verb}s under `{folder}/`")
    return None


def destructive_action(approval: t.ApprovalRequest) -> Destructive | None:
    """The entry of the destructive list (destructive.py) a command's request is, if any."""
    _, command = _command(approval.scope_label)
    return None if command is None else destructive(command_parts(command), command)


def command_of(label: str) -> str | None:
    """The command a command's scope label holds (`command+network: pip i x`: `pip i x`);
    None for any other label, or one cut with its hash."""
    return _command(label)[1]


def path_of(label: str) -> str | None:
    """The workspace path a write's or a delete's scope label holds; None otherwise."""
    return _path(label)


def prefix_words(pattern: str) -> list[str]:
    """A COMMAND_PREFIX pattern's words, as a prefix rule reads them."""
    return _words(pattern)


def globbed(path: str, pattern: str) -> bool:
    """Whether a PATH_GLOB pattern matches `path`, as a glob rule's does (one past the
    bound of `**` matches nothing)."""
    return _globbed(path, pattern)


def globstars(pattern: str) -> int:
    """How many `**` a glob holds (a rule's and a hook's may hold `MAX_GLOBSTARS`)."""
    return _globstars(pattern)


def _prefix(words: list[str]) -> list[str]:
    """The words a rule for commands like this one would start with: the program, and the
    next word when it is a subcommand or an option (`git status`, `pytest -q`)."""
    if not words:
        return []
    head = [words[0]]
    if len(words) > 1 and _word_like(words[1]):
        head.append(words[1])
    return head


@functools.lru_cache(maxsize=1024)
def _words(pattern: str) -> list[str]:
    """A prefix rule's words (its pattern is them, shell-quoted)."""
    try:
        return shlex.split(pattern)
    except ValueError:
        return [pattern]


def _word_like(word: str) -> bool:
    plain = word.lstrip("-")
    return bool(plain) and plain.replace("-", "").replace("_", "").isalnum() and "=" not in word


def _command(label: str) -> tuple[str, str | None]:
    """A command's label as (family, command): `command+network: pip i x` is
    ("command+network", "pip i x"); (label, None) for any other kind of label, or one cut
    with its hash (too long to read back: only an exact rule covers it)."""
    family, sep, rest = label.partition(": ")
    if not sep or not family.startswith("command") or "… [" in rest:
        return label, None
    return family, rest


def _family(rule: RuleRecord) -> str:
    return rule.scope_label.partition(": ")[0]


def _path(label: str) -> str | None:
    verb, sep, rest = label.partition(": ")
    if not sep or verb not in ("write", "delete") or "… [" in rest:
        return None
    return rest


def _globstars(pattern: str) -> int:
    """The `**` of a glob: the names of only stars (wcmatch reads `***` as `**` too)."""
    return sum(1 for name in pattern.split("/") if len(name) >= 2 and set(name) == {"*"})


def _globbed(path: str, pattern: str) -> bool:
    if not pattern or _globstars(pattern) > MAX_GLOBSTARS:
        return False  # stored before the bound: it covers nothing, and a person decides
    return glob.globmatch(path, pattern, flags=_GLOB_FLAGS)
