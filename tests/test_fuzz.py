"""Fuzz: every shipped scenario, mutated as a new user would (tests/fuzzcases.py), run
through the command line: no traceback, no hang, every rejection in the one format, every
accepted input run to the end with valid JSON.

CI runs a seeded subset (``SIMBATCH_FUZZ_N``, default 150, ``SIMBATCH_FUZZ_SEED``, default 1);
the full run is ``SIMBATCH_FUZZ_N=600 python -m pytest tests/test_fuzz.py -s``.
"""

from __future__ import annotations

import collections
import os

import pytest
from fuzzcases import SCENARIOS, mutants, run_one

N = int(os.environ.get("SIMBATCH_FUZZ_N", "150"))
SEED = int(os.environ.get("SIMBATCH_FUZZ_SEED", "1"))


def test_every_shipped_scenario_is_fuzzed():
    stems = {m.label.split(":")[0] for m in mutants(len(SCENARIOS) * 2, SEED)}
    assert stems == {p.stem for p in SCENARIOS}


@pytest.mark.filterwarnings("ignore")
def test_mutated_scenarios_never_escape_the_one_format(tmp_path):
    outcomes: dict[str, list[str]] = collections.defaultdict(list)
    for m in mutants(N, SEED):
        outcome, detail = run_one(m, tmp_path)
        outcomes[outcome].append(detail)
    counts = {k: len(v) for k, v in outcomes.items()}
    print(f"\nfuzz: {N} inputs (seed {SEED}): {counts}")
    bad = {k: v for k, v in outcomes.items() if k not in ("accepted", "rejected")}
    assert not bad, "\n\n".join(f"{k}: {d}" for k, v in bad.items() for d in v[:3])
    assert counts.get("accepted", 0) > 0 and counts.get("rejected", 0) > 0
