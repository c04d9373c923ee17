"""`Blitz` is `AsyncBlitz` without `await`: the same public methods, taking the same
parameters, returning the same values (a `Stream` where the async one yields)."""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator
from typing import Any, get_args, get_origin

import pytest

from blitz_client import AsyncBlitz, Blitz, Stream


def public(obj: object) -> set[str]:
    return {name for name in dir(obj) if not name.startswith("_")}


def methods(cls: type) -> list[str]:
    return sorted(name for name in public(cls) if inspect.isfunction(getattr(cls, name)))


def signature(cls: type, name: str) -> inspect.Signature:
    # eval_str: the modules use `from __future__ import annotations`, and their strings
    # differ where the types do not ("Stream[turn_pb2.TurnEvent]" vs "AsyncGenerator[…]").
    return inspect.signature(getattr(cls, name), eval_str=True)


def test_both_clients_have_the_same_public_methods_and_attributes():
    assert methods(Blitz) == methods(AsyncBlitz)
    with Blitz("127.0.0.1:1") as sync:
        assert public(sync) == public(AsyncBlitz("127.0.0.1:1")), "`url` included"


@pytest.mark.parametrize("name", ["__init__", *methods(AsyncBlitz)])
def test_each_method_takes_the_same_parameters(name: str):
    """Names, kinds, defaults and annotations, in order."""
    sync, async_ = signature(Blitz, name), signature(AsyncBlitz, name)
    assert list(sync.parameters.values()) == list(async_.parameters.values())


@pytest.mark.parametrize("name", methods(AsyncBlitz))
def test_each_method_returns_what_the_async_one_awaits_or_yields(name: str):
    async_method = getattr(AsyncBlitz, name)
    returns: Any = signature(AsyncBlitz, name).return_annotation
    if inspect.isasyncgenfunction(async_method):
        assert get_origin(returns) is AsyncGenerator
        item, _ = get_args(returns)
        expected = Stream[item]
    else:
        assert inspect.iscoroutinefunction(async_method), "an async client method awaits"
        expected = returns
    assert signature(Blitz, name).return_annotation == expected
    assert not inspect.iscoroutinefunction(getattr(Blitz, name))
