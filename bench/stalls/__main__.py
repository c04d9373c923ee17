"""`python -m bench.stalls FOLDER`: what held a server's event loop up, from the files
`bench/stalls/sitecustomize.py` wrote there (see its doc): the stalls counted by the
innermost frames of Blitz's and of what it called, and the collector's pauses."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path


def _stalls(path: Path) -> None:
    blocks = path.read_text().split("== ")[1:]
    where: Counter[str] = Counter()
    lags = []
    for block in blocks:
        head, *stack = block.strip().splitlines()
        lags.append(float(head.split()[1]))
        ours = [line for line in stack if line.startswith("blitz/")]
        where[f"{ours[-1] if ours else '-'}  <  {stack[-1] if stack else '-'}"] += 1
    lags.sort()
    print(f"{path.name}: {len(lags)} stalls; longest {', '.join(f'{x:.0f}' for x in lags[-5:])} ms")
    for place, count in where.most_common(12):
        print(f"  {count:4d}  {place}")


def _collections(path: Path) -> None:
    rows = [line.split() for line in path.read_text().splitlines()]
    print(f"{path.name}: {len(rows)} collections")
    for generation in ("0", "1", "2"):
        ms = sorted(float(r[2]) for r in rows if r[1] == generation)
        if ms:
            p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
            print(
                f"  generation {generation}: {len(ms)}, p50 {ms[len(ms) // 2]:.2f} ms,"
                f" p99 {p99:.2f} ms, longest {ms[-1]:.2f} ms, over 10 ms: {sum(x > 10 for x in ms)}"
            )


def main() -> None:
    folder = Path(sys.argv[1])
    for path in sorted(folder.glob("stalls-*.txt")):
        _stalls(path)
    for path in sorted(folder.glob("gc-*.txt")):
        _collections(path)


if __name__ == "__main__":
    main()
