"""Cases whose output must not move when the client's CPU is off (``[go]`` unset): the
engine as it was before the CPU model existed (git commit 0dbd380) produced the digests in
``tests/data/cpu_off_digests.json``.

Regenerate them only for an intended change of the CPU-off engine, from the commit that
defines "today's engine"::

    git archive <commit> simbatch | tar -x -C /tmp/ref
    PYTHONPATH=/tmp/ref:tests python tests/cpu_off_cases.py > tests/data/cpu_off_digests.json

The cases use constant-cost services (no Aerospike model, no client statistics), so a change
of the service model does not move them; they cover both timer versions, drain, tick, every
dispatch mode, blocking channels, permits, closed and open loops and the host's overshoot.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np


def case_kwargs() -> list[dict]:
    """Constructor arguments of each case (plain dicts: they must build in the old code)."""
    rng = np.random.default_rng(20261123)
    out: list[dict] = []
    for _ in range(40):
        dispatch = str(rng.choice(["inline", "background", "pool"]))
        drain = bool(rng.integers(2))
        timer = str(rng.choice(["first_item", "cycle"]))
        tick = None if drain or rng.integers(3) else float(rng.uniform(0.5, 8))
        batcher = {"size": int(rng.integers(1, 12)), "timeout_ms": float(rng.uniform(0.1, 12)),
                   "timer": timer, "tick_ms": tick, "drain": drain, "dispatch": dispatch,
                   "max_concurrent": int(rng.integers(1, 5)) if dispatch == "pool" else None,
                   "queue_factor": int(rng.integers(1, 4))}
        if rng.integers(3):
            fanout = str(rng.choice(["sequential", "errgroup"]))
            workload = {"kind": "block", "n_transactions": int(rng.integers(1, 60)),
                        "inputs_per_tx": int(rng.integers(0, 5)), "fanout": fanout,
                        "cap": int(rng.integers(1, 20)) if fanout == "errgroup" else None}
        else:
            workload = {"kind": "open_loop", "n_transactions": int(rng.integers(1, 80)),
                        "rate_per_s": float(rng.uniform(50, 5000)),
                        "arrival": str(rng.choice(["poisson", "periodic"])),
                        "inputs_per_tx": int(rng.integers(1, 4)),
                        "close_after_last": bool(rng.integers(2))}
        service = {"fixed_us": float(rng.uniform(0, 3000)),
                   "per_record_us": float(rng.uniform(0, 20)),
                   "max_in_flight": int(rng.integers(1, 4)) if rng.integers(2) else None,
                   "is_sleep": bool(rng.integers(2))}
        host = {"timer_overshoot_us": float(rng.choice([0.0, 90.0, 230.0]))}
        out.append({"workload": workload, "batcher": batcher, "service": service,
                    "host": host})
    # table R1's five rows
    for fanout, cap in (("sequential", None), ("errgroup", 1), ("errgroup", 4),
                        ("errgroup", 16), ("errgroup", 64)):
        out.append({"workload": {"kind": "block", "n_transactions": 1000, "inputs_per_tx": 3,
                                 "fanout": fanout, "cap": cap},
                    "batcher": {"size": 100, "timeout_ms": 10.0, "dispatch": "pool",
                                "max_concurrent": 64},
                    "service": {"fixed_us": 500.0, "is_sleep": True},
                    "host": {"timer_overshoot_us": 90.0}})
    return out


def build(kwargs: dict):
    from simbatch.batching import (
        BatcherConfig,
        BlockWorkload,
        Case,
        HostConfig,
        OpenLoopWorkload,
        ServiceConfig,
    )

    wl = dict(kwargs["workload"])
    kind = wl.pop("kind")
    workload = BlockWorkload(**wl) if kind == "block" else OpenLoopWorkload(**wl)
    return Case(workload=workload, batcher=BatcherConfig(**kwargs["batcher"]),
                service=ServiceConfig(**kwargs["service"]),
                host=HostConfig(**kwargs["host"]))


def digest(case, seed: int) -> str:
    """A hash of a run's three frames (every column, every value, in order)."""
    from simbatch.batching import simulate

    frames = simulate(case, seed).frames()
    h = hashlib.sha256()
    for name in ("items", "txns", "batches"):
        frame = frames[name].drop(columns=["scenario", "case", "replication", "seed"])
        h.update(name.encode())
        h.update(frame.to_csv(index=False, float_format="%.17g").encode())
    return h.hexdigest()


if __name__ == "__main__":
    print(json.dumps([digest(build(k), seed) for k in case_kwargs() for seed in (1, 2)],
                     indent=0))
