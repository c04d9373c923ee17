"""Option types and the options that more than one scenario reads."""

from __future__ import annotations

import argparse

__all__ = ["add_shared_arguments", "sizes"]


def sizes(text: str) -> list[int]:
    """ "100,300,1000" -> [100, 300, 1000]."""
    return [int(part) for part in text.split(",") if part.strip()]


def add_shared_arguments(parser: argparse.ArgumentParser) -> None:
    shared = parser.add_argument_group("sessions and parked")
    shared.add_argument(
        "--sizes",
        type=sizes,
        default=[100, 300, 1000],
        help="numbers of sessions to run `sessions` and `parked` at, a fresh server for each;"
        " the table shows the largest, the plot all of them (default 100,300,1000)",
    )
    shared.add_argument(
        "--sessions",
        dest="sizes",
        type=lambda text: [int(text)],
        help="one size only: the same as --sizes N",
    )
    shared.add_argument(
        "--channels",
        type=int,
        default=10,
        help="gRPC connections the sessions' streams are spread over (default 10)",
    )
