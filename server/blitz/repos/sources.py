"""Which repositories may be cloned, which refs and branch names are acceptable, and
which credential a URL gets: every decision about a source made before any git runs.

A URL is accepted only in one plain form, `scheme://host[:port]/path` (or `file:///path`):
https, http, git and file. Refused, each with its reason: ssh (Blitz holds no ssh key and
runs no ssh) and the scp-like `user@host:path`; `transport::address` forms such as
`ext::` (git would run a command); a user or password in the URL (credentials are the
operator's, in settings); a query, a fragment, percent-encoding, a backslash, a `.`, `..`
or empty path segment, whitespace and control characters. The URL is normalized (scheme
and host in lower case, the default port and one trailing `/` dropped) before it is
matched, and a `file://` path is resolved (its symbolic links followed) and must match
again: a link inside an allowed folder cannot lead out of it.

Allow patterns (`--repo-allow`) match segment by segment. The scheme must be the same;
the host (with its port) and each path segment match as `fnmatch` patterns, so `*`, `?`
and `[...]` never cross a `/`; a segment that is exactly `**` matches any number of
segments, none included. So `https://git.example.com/acme/*` allows
`https://git.example.com/acme/api` and `…/acme/web.git` but not `…/acme/team/api`, and
`https://git.example.com/acme/**` allows all three. Nothing here calls git or the network.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

from blitz.repos.errors import SourceRefused
from blitz.repos.settings import Credential

__all__ = [
    "Allow",
    "Origin",
    "Source",
    "check_branch",
    "check_depth",
    "check_ref",
    "credential_for",
    "is_commit_id",
    "normalize_url",
    "relative_url",
]

SCHEMES = ("https", "http", "git", "file")
_DEFAULT_PORTS = {"https": "443", "http": "80", "git": "9418"}
_URL_MAX = 2048
_REF_MAX = 255
_DEPTH_MAX = 1_000_000
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_HOST = re.compile(
    r"^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*"
    r"|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?$"
)
_SCP_LIKE = re.compile(r"^[^/]*:")
_HEX = re.compile(r"^(?:[0-9a-f]{7,40}|[0-9a-f]{64})$")
# What a ref name may not hold (git check-ref-format): controls, space, ~ ^ : ? * [ \.
_REF_BAD_CHARS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


@dataclass(frozen=True)
class Source:
    """A repository to clone: `ref` a branch, a tag or a commit id ("" the origin's default
    branch); `depth` the commits of history to fetch (0: all); `submodules` whether to
    fetch the submodules too (each must be allowed itself)."""

    url: str
    ref: str = ""
    depth: int = 0
    submodules: bool = False


@dataclass(frozen=True)
class Origin:
    """A checked source as git gets it: `url` is the normalized URL, the workspace's
    `origin`; `fetch_url` is what git fetches from (a file source's path resolved)."""

    url: str
    fetch_url: str
    scheme: str


def normalize_url(url: str, *, field: str = "source.url") -> str:
    """`url` in its one normalized form; `SourceRefused(field)` saying why it is not a
    URL Blitz clones."""
    scheme, authority, segments = _split(url, field=field, pattern=False)
    return _join(scheme, authority, segments)


class Allow:
    """The operator's allow patterns, parsed once."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        self.patterns = patterns
        self._parsed = [_split(p, field="allow", pattern=True) for p in patterns]

    def __bool__(self) -> bool:
        return bool(self._parsed)

    def matches(self, url: str) -> bool:
        """Whether the normalized `url` matches a pattern."""
        scheme, authority, segments = _split(url, field="source.url", pattern=False)
        for p_scheme, p_authority, p_segments in self._parsed:
            if p_scheme != scheme or not fnmatchcase(authority, p_authority):
                continue
            if _segments_match(p_segments, segments):
                return True
        return False

    def origin(self, url: str) -> Origin:
        """The `Origin` of an allowed `url`; `SourceRefused("source.url")` when it is not
        allowed, or a file source leads elsewhere once its links are resolved."""
        normalized = normalize_url(url)
        scheme = normalized.split(":", 1)[0]
        if not self._parsed:
            raise SourceRefused("source.url", "this server allows no repository sources")
        if not self.matches(normalized):
            raise SourceRefused(
                "source.url", f"{normalized} is not among the sources this server allows"
            )
        fetch = normalized
        if scheme == "file":
            path = normalized[len("file://") :]
            real = os.path.realpath(path)
            fetch = "file://" + real
            if real != path and not self.matches(normalize_url(fetch)):
                raise SourceRefused(
                    "source.url", f"{normalized} leads, through a link, outside the allowed"
                )
        return Origin(url=normalized, fetch_url=fetch, scheme=scheme)


def check_ref(ref: str, *, field: str = "source.ref") -> str:
    """`ref` when it may name a branch, a tag, another ref (`refs/...`) or a commit id."""
    if not ref:
        return ref
    if ref.startswith("-"):
        raise SourceRefused(field, f"{ref[:40]!r} is not a ref: it starts with '-'")
    if is_commit_id(ref):
        return ref
    full = ref if ref.startswith("refs/") else "refs/heads/" + ref
    if why := _bad_refname(full):
        raise SourceRefused(field, f"{ref[:80]!r} is not a ref name: {why}")
    return ref


def check_branch(name: str, *, field: str = "branch") -> str:
    """`name` when it is a branch name git accepts (`git check-ref-format --branch`)."""
    if not name:
        raise SourceRefused(field, "a branch name is required")
    if name.startswith("-") or name == "HEAD" or name.startswith("refs/"):
        raise SourceRefused(field, f"{name[:80]!r} is not a branch name")
    if why := _bad_refname("refs/heads/" + name):
        raise SourceRefused(field, f"{name[:80]!r} is not a branch name: {why}")
    return name


def check_depth(depth: int) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= _DEPTH_MAX:
        raise SourceRefused(
            "source.depth", f"depth must be a whole number from 0 (all history) to {_DEPTH_MAX}"
        )
    return depth


def is_commit_id(ref: str) -> bool:
    """Whether `ref` may be a commit id (7 to 40 hex digits, or 64): it may also name a
    branch or tag, which is looked for first."""
    return bool(_HEX.match(ref))


def credential_for(
    credentials: tuple[Credential, ...], url: str, principal: str
) -> Credential | None:
    """The first credential whose prefix covers the normalized http(s) `url` and whose
    principals include `principal` (or name none); None for other schemes."""
    if not url.startswith(("https://", "http://")):
        return None
    for credential in credentials:
        prefix = _prefix(credential.url_prefix)
        if not url.startswith(prefix):
            continue
        if not (url == prefix or prefix.endswith("/") or url[len(prefix)] == "/"):
            continue  # https://git.example.com is no prefix of https://git.example.com.evil
        if credential.principals and principal not in credential.principals:
            continue
        return credential
    return None


def relative_url(base: str, url: str) -> str:
    """A submodule's `url` as git reads it: `./x` and `../x` relative to the normalized
    `base` (the superproject's URL, as a folder), anything else as it is."""
    if not url.startswith(("./", "../")):
        return url
    root, _, path = base.partition("://")
    authority, _, rest = path.partition("/")
    segments = [s for s in rest.split("/") if s]
    parts = url.split("/")
    while parts and parts[0] in (".", ".."):
        if parts.pop(0) == "..":
            if not segments:
                raise SourceRefused("source.url", f"{url!r} leads above {base}")
            segments.pop()
    return f"{root}://{authority}/" + "/".join(segments + parts)


# The parts of a URL


def _split(url: str, *, field: str, pattern: bool) -> tuple[str, str, list[str]]:
    """scheme, authority and path segments of `url` (or of an allow pattern)."""
    if not isinstance(url, str) or not url:
        raise SourceRefused(field, "a repository URL is required")
    if len(url) > _URL_MAX:
        raise SourceRefused(field, f"the URL is longer than {_URL_MAX} characters")
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise SourceRefused(field, "the URL holds whitespace or control characters")
    found = _SCHEME.match(url)
    if found is None:
        if "::" in url:
            raise SourceRefused(field, "transport::address forms (ext::, fd::) are refused")
        if _SCP_LIKE.match(url):
            raise SourceRefused(
                field, "user@host:path addresses are ssh, which is not served: use https://"
            )
        raise SourceRefused(field, "not a URL: give https://, http://, git:// or file:///")
    scheme = found.group(1).lower()
    if "ssh" in scheme:
        raise SourceRefused(
            field, "ssh sources are not served (Blitz holds no ssh key): use https://"
        )
    if scheme not in SCHEMES:
        raise SourceRefused(field, f"{scheme}:// is not served: use https, http, git or file")
    rest = url[found.end() :]
    if "\\" in rest:
        raise SourceRefused(field, "the URL holds a backslash")
    if ("?" in rest and not pattern) or "#" in rest:
        raise SourceRefused(field, "a URL with a query or a fragment is refused")
    if "%" in rest:
        raise SourceRefused(field, "percent-encoded characters are refused in a URL")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        raise SourceRefused(
            field, "a URL with a user or password is refused: credentials are the operator's"
        )
    authority = authority.lower()
    if scheme == "file":
        if authority:
            raise SourceRefused(field, "a file URL names a path on this server: file:///PATH")
    else:
        if not pattern and not _HOST.match(authority):
            raise SourceRefused(field, f"{authority[:80]!r} is not a host name")
        authority = authority.removesuffix(":" + _DEFAULT_PORTS[scheme])
    segments = path.split("/") if slash else []
    if segments and segments[-1] == "":
        segments.pop()
    if not segments:
        raise SourceRefused(field, "the URL names no repository path")
    if any(s in ("", ".", "..") for s in segments):
        raise SourceRefused(field, "the URL's path holds an empty, '.' or '..' segment")
    return scheme, authority, segments


def _join(scheme: str, authority: str, segments: list[str]) -> str:
    return f"{scheme}://{authority}/" + "/".join(segments)


def _segments_match(pattern: list[str], segments: list[str]) -> bool:
    if not pattern:
        return not segments
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_segments_match(rest, segments[i:]) for i in range(len(segments) + 1))
    return bool(segments) and fnmatchcase(segments[0], head) and _segments_match(rest, segments[1:])


def _prefix(prefix: str) -> str:
    """A credential's URL prefix with its scheme and host in lower case."""
    scheme, sep, rest = prefix.partition("://")
    authority, slash, path = rest.partition("/")
    return f"{scheme.lower()}{sep}{authority.lower()}{slash}{path}"


def _bad_refname(name: str) -> str:
    """Why `name` (a full ref name) is not one git accepts; "" when it is."""
    if len(name) > _REF_MAX:
        return "too long"
    if _REF_BAD_CHARS.search(name):
        return "it holds a space, a control character or one of ~ ^ : ? * [ \\"
    if ".." in name or "@{" in name or "//" in name:
        return "it holds '..', '@{' or '//'"
    if name.endswith(("/", ".")):
        return "it ends with '/' or '.'"
    for part in name.split("/"):
        if part.startswith(".") or part.endswith(".lock"):
            return "a part of it starts with '.' or ends with '.lock'"
    if name.split("/")[-1] == "@":
        return "it is '@'"
    return ""
