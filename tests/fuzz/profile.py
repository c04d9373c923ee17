"""The fuzz suite's settings: a fixed seed and few examples in CI, more on request.

`BLITZ_FUZZ_EXAMPLES=N` runs N examples per test, with a fresh random seed each run
(hypothesis prints the seed of a failure; `--hypothesis-seed=SEED` replays it). Without
it the suite is derandomized: the same few examples every run, so CI stays fast and
repeatable. No example database is kept. docs/security.md ("Fuzzing") says how to run a
campaign.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["fuzz_settings"]

_CAMPAIGN = os.environ.get("BLITZ_FUZZ_EXAMPLES")

fuzz_settings = settings(
    max_examples=int(_CAMPAIGN) if _CAMPAIGN else 200,
    derandomize=not _CAMPAIGN,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,  # one server serves every example of a test
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
