"""Which sources are cloned: URLs in one plain form, matched segment by segment against
the operator's patterns; refs, depths and branch names checked before git runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from blitz.repos import Credential, RepoSettings, Repositories, Source, SourceRefused
from blitz.repos.sources import Allow, credential_for, normalize_url, relative_url

ALLOW = Allow(
    (
        "https://git.example.com/acme/*",
        "https://git.example.com/deep/**",
        "git://*.example.org/pub/*.git",
        "file:///srv/repos/*",
    )
)


@pytest.mark.parametrize(
    ("given", "normalized"),
    [
        ("HTTPS://Git.Example.COM/acme/api", "https://git.example.com/acme/api"),
        ("https://git.example.com:443/acme/api/", "https://git.example.com/acme/api"),
        ("http://git.example.com:80/x", "http://git.example.com/x"),
        ("http://git.example.com:8080/x", "http://git.example.com:8080/x"),
        ("git://git.example.com:9418/x.git", "git://git.example.com/x.git"),
        ("file:///srv/repos/app.git", "file:///srv/repos/app.git"),
    ],
)
def test_urls_are_normalized(given: str, normalized: str) -> None:
    assert normalize_url(given) == normalized


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ssh://git@git.example.com/acme/api", "ssh"),
        ("git+ssh://git.example.com/acme/api", "ssh"),
        ("git@git.example.com:acme/api.git", "ssh"),
        ("ext::sh -c touch% /tmp/pwned", "whitespace"),
        ("ext::sh%20-c%20id", "ext::"),
        ("fd::17", "ext::"),
        ("https://user:secret@git.example.com/acme/api", "user or password"),
        ("https://token@git.example.com/acme/api", "user or password"),
        ("https://git.example.com/acme/api?x=1", "query"),
        ("https://git.example.com/acme/api#main", "fragment"),
        ("https://git.example.com/acme/../etc", "'..'"),
        ("https://git.example.com/acme//api", "empty"),
        ("https://git.example.com/acme/%2e%2e/x", "percent"),
        ("https://git.example.com/acme/a\\b", "backslash"),
        ("https://git.example.com/acme/a\nb", "control"),
        ("ftp://git.example.com/acme/api", "not served"),
        ("file://host/srv/repos/app", "file URL"),
        ("https://git.example.com", "no repository path"),
        ("https://exa_mple.com/x", "host"),
        ("/srv/repos/app", "not a URL"),
        ("", "required"),
    ],
)
def test_urls_that_are_refused_say_why(url: str, why: str) -> None:
    with pytest.raises(SourceRefused) as caught:
        normalize_url(url)
    assert caught.value.field == "source.url"
    assert why in str(caught.value)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://git.example.com/acme/api", True),
        ("https://git.example.com/acme/web.git", True),
        ("https://GIT.example.com/acme/web.git/", True),
        ("https://git.example.com/acme/team/api", False),  # * stays in its segment
        ("https://git.example.com/acme", False),
        ("https://git.example.com/acmeX/api", False),
        ("http://git.example.com/acme/api", False),  # the scheme is part of it
        ("https://git.example.com.evil.net/acme/api", False),
        ("https://git.example.com/deep/a", True),
        ("https://git.example.com/deep/a/b/c", True),  # a final ** goes any depth
        ("git://mirror.example.org/pub/x.git", True),
        ("git://example.org/pub/x.git", False),
        ("git://mirror.example.org/pub/x", False),
        ("file:///srv/repos/app", True),
        ("file:///srv/repos/a/b", False),
        ("file:///srv/other/app", False),
    ],
)
def test_allow_patterns_match_segment_by_segment(url: str, allowed: bool) -> None:
    assert ALLOW.matches(normalize_url(url)) is allowed


def test_a_file_source_must_match_once_its_links_are_resolved(tmp_path: Path) -> None:
    allowed, elsewhere = tmp_path / "allowed", tmp_path / "elsewhere"
    allowed.mkdir()
    elsewhere.mkdir()
    (allowed / "real").mkdir()
    (allowed / "link").symlink_to(elsewhere)
    (allowed / "inner").symlink_to(allowed / "real")
    allow = Allow((f"file://{allowed}/*",))
    assert allow.origin(f"file://{allowed}/real").fetch_url == f"file://{allowed}/real"
    assert allow.origin(f"file://{allowed}/inner").fetch_url == f"file://{allowed}/real"
    with pytest.raises(SourceRefused):
        allow.origin(f"file://{allowed}/link")


def test_check_normalizes_a_source_and_names_the_field_at_fault(tmp_path: Path) -> None:
    repos = Repositories(RepoSettings(data_dir=tmp_path, allow=("https://git.example.com/**",)))
    assert repos.allowed
    got = repos.check(Source(url="HTTPS://git.example.com/a/b/", ref="main", depth=5))
    assert got == Source(url="https://git.example.com/a/b", ref="main", depth=5)
    for ref in ("v1.2.3", "feature/x", "refs/pull/1/head", "a" * 40, "0123abc"):
        assert repos.check(Source(url="https://git.example.com/a", ref=ref)).ref == ref
    refused = {
        "source.url": Source(url="https://elsewhere.example.com/a"),
        "source.ref": Source(url="https://git.example.com/a", ref="--upload-pack=touch"),
        "source.depth": Source(url="https://git.example.com/a", depth=-1),
    }
    for field, source in refused.items():
        with pytest.raises(SourceRefused) as caught:
            repos.check(source)
        assert caught.value.field == field
    for ref in ("a..b", "x.lock", "a b", "a~1", "a^", "a:b", "a*", "@", "a@{1}", ".hidden", "a/"):
        with pytest.raises(SourceRefused) as caught:
            repos.check(Source(url="https://git.example.com/a", ref=ref))
        assert caught.value.field == "source.ref", ref
    with pytest.raises(SourceRefused):
        repos.check(Source(url="https://git.example.com/a", depth=1_000_001))


def test_no_pattern_allows_nothing(tmp_path: Path) -> None:
    repos = Repositories(RepoSettings(data_dir=tmp_path))
    assert not repos.allowed
    with pytest.raises(SourceRefused) as caught:
        repos.check(Source(url="https://git.example.com/a"))
    assert caught.value.field == "source.url"


def test_the_first_credential_for_the_url_and_principal_is_chosen() -> None:
    acme = Credential("https://git.example.com/acme/", "bot", "acme-pass", ("alice",))
    anyone = Credential("https://git.example.com", "any", "any-pass")
    creds = (acme, anyone)
    assert credential_for(creds, "https://git.example.com/acme/api", "alice") is acme
    assert credential_for(creds, "https://git.example.com/acme/api", "bob") is anyone
    assert credential_for(creds, "https://git.example.com.evil.net/acme/x", "alice") is None
    assert credential_for(creds, "git://git.example.com/acme/api", "alice") is None


def test_credential_passwords_are_masked_once_settings_are_built(tmp_path: Path) -> None:
    from blitz.redact import mask_known

    password = "a-password-nobody-should-see-1234"
    Repositories(
        RepoSettings(data_dir=tmp_path, credentials=(Credential("https://h/", "u", password),))
    )
    assert password not in mask_known(f"git said {password}")


@pytest.mark.parametrize(
    ("url", "resolved"),
    [
        ("../lib.git", "https://h.example/acme/lib.git"),
        ("./sub", "https://h.example/acme/app.git/sub"),
        ("../../other/x", "https://h.example/other/x"),
        ("https://else.example/x", "https://else.example/x"),
    ],
)
def test_relative_submodule_urls_resolve_against_the_source(url: str, resolved: str) -> None:
    assert relative_url("https://h.example/acme/app.git", url) == resolved


def test_a_relative_url_above_the_host_is_refused() -> None:
    with pytest.raises(SourceRefused):
        relative_url("https://h.example/app.git", "../../x")
