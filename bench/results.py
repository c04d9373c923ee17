"""What a scenario produces: named figures for the table, and rows for the plot.

A scenario process writes its `Result` as JSON; `python -m bench` reads them all back,
so that this shape is the one contract between the two. Keys are stable
(`scenario.figure`), since targets and docs refer to them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Figure", "Result"]


@dataclass
class Figure:
    key: str
    label: str
    value: float
    unit: str
    floor: float = math.nan
    """The same figure of the floor server, measured in the same run (NaN: none)."""

    @property
    def ratio(self) -> float:
        """The figure over the floor's (NaN without a floor)."""
        if math.isnan(self.floor) or math.isnan(self.value):
            return math.nan
        return self.value / self.floor if self.floor else math.inf


@dataclass
class Result:
    scenario: str
    params: dict[str, Any] = field(default_factory=dict)
    figures: list[Figure] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    """One dict per size or case, with the figures the plot and the detail tables use."""
    series: dict[str, list[float]] = field(default_factory=dict)
    """Longer sequences (a latency per turn, RSS over time)."""

    def add(self, key: str, label: str, value: float, unit: str, floor: float = math.nan) -> None:
        figure = Figure(f"{self.scenario}.{key}", label, float(value), unit, float(floor))
        self.figures.append(figure)

    def to_json(self) -> dict[str, Any]:
        # JSON has no NaN: a figure that could not be measured is null.
        result: dict[str, Any] = _nulled(asdict(self))
        return result

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Result:
        figures = [
            Figure(
                f["key"],
                f["label"],
                math.nan if f["value"] is None else f["value"],
                f["unit"],
                math.nan if f.get("floor") is None else f["floor"],
            )
            for f in data["figures"]
        ]
        return cls(data["scenario"], data["params"], figures, data["rows"], data["series"])


def _nulled(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nulled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nulled(v) for v in value]
    return value
