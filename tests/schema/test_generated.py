"""The generated stubs are exactly what `make proto` produces from proto/."""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Where `make proto` writes the stubs: the client's tree, since blitz-client ships them.
GENERATED = "clients/generated/blitz/v1"


def test_generated_code_matches_the_proto_files(tmp_path: Path) -> None:
    work = tmp_path / "tree"
    shutil.copytree(ROOT / "proto", work / "proto")
    shutil.copy(ROOT / "Makefile", work / "Makefile")
    venv = ROOT / ".venv"
    # Run the real target, with this interpreter's venv standing in for `make install`.
    (work / ".venv").symlink_to(venv if venv.exists() else Path(sys.prefix))
    subprocess.run(
        ["make", "-o", "install", "-o", ".venv/.installed", "proto", f"PY={sys.executable}"],
        cwd=work,
        check=True,
        capture_output=True,
    )
    fresh, committed = work / GENERATED, ROOT / GENERATED
    names = sorted(p.name for p in fresh.iterdir() if p.is_file())
    assert names == sorted(
        p.name for p in committed.iterdir() if p.is_file() and p.suffix in {".py", ".pyi", ".binpb"}
    )
    _, mismatch, errors = filecmp.cmpfiles(fresh, committed, names, shallow=False)
    assert mismatch == [] and errors == [], "run `make proto` and commit the result"


def test_turn_proto_numbers_the_seed_fields_in_order() -> None:
    """Seed fields keep the contract's order from 1; the envelope starts at 16."""
    from blitz.v1 import turn_pb2 as t

    turn = [f.name for f in sorted(t.Turn.DESCRIPTOR.fields, key=lambda f: f.number)]
    assert turn == [
        "text",
        "prompt",
        "plan",
        "read_only",
        "aside",
        "accepted",
        "image_ids",
        "max_turns",
        "fetch_grants",
        "max_cost_usd",
        "timeout",
        "command",
        "context",
        # Added by Blitz, from 16 up.
        "mode",
    ]
    assert t.Turn.DESCRIPTOR.fields_by_name["mode"].number == 16
    event = {f.name: f.number for f in t.TurnEvent.DESCRIPTOR.fields}
    assert event == {
        "author": 1,
        "accepted": 2,
        "text": 3,
        "tool_call": 4,
        "tool_result": 5,
        "approval_request": 6,
        "question": 7,
        "finished": 8,
        "tasks": 9,
        "notice": 10,
        "flow_step": 11,
        "seq": 16,
        "session_id": 17,
        "turn_id": 18,
        "time": 19,
        "resolution": 20,
        # Kinds Blitz added after resolution, from 21 up.
        "usage": 21,
        "history_trimmed": 22,
        "session_state": 23,
        "file_changed": 24,
        "tool_output": 25,
        "plan_proposed": 26,
        "plan_decision": 27,
        "rewound": 28,
        # The envelope's workflow step (docs/workflows.md), after the kinds.
        "step": 29,
        # A hook's run (docs/hooks.md), after the step.
        "hook": 30,
    }
    assert [v.name for v in t.Decision.DESCRIPTOR.values] == [
        "DECISION_UNSPECIFIED",
        "DECISION_DENY",
        "DECISION_ONCE",
        "DECISION_SESSION",
        "DECISION_ALWAYS",
    ]
    usage = [f.name for f in sorted(t.Usage.DESCRIPTOR.fields, key=lambda f: f.number)]
    assert usage == [
        "calls",
        "input",
        "cached",
        "cache_write",
        "output",
        "last_prompt",
        "cost_usd",
        "priced",
        "search_queries",
        "search_cost_usd",
        # Added by Blitz, from 16 up.
        "tokens_unknown",
        "model",
    ]
