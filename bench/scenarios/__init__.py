"""The scenarios: one module each, with `NAME`, `add_arguments(group)` and `run(options)`.

`run` is a coroutine that starts its own servers, measures them and returns a `Result`;
`python -m bench.scenarios` runs one in a process of its own. Options live in one parser
(`add_arguments` here), each scenario's in its own group, so that `python -m bench` can
hand the same options to every scenario it runs.
"""

from __future__ import annotations

import argparse
from types import ModuleType

from bench.options import add_shared_arguments
from bench.scenarios import (
    long,
    memory,
    parked,
    peer,
    replicas,
    sessions,
    start,
    streams,
    webhooks,
)

__all__ = ["SCENARIOS", "add_arguments"]

SCENARIOS: dict[str, ModuleType] = {
    module.NAME: module
    for module in (sessions, parked, streams, long, start, memory, replicas, webhooks, peer)
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_shared_arguments(parser)
    for name, module in SCENARIOS.items():
        module.add_arguments(parser.add_argument_group(name))
