"""Shared helpers for the test suite (imported by name; not a conftest, so that
validate/conftest.py does not shadow it)."""

from __future__ import annotations

from pathlib import Path

from simbatch.batching import BatcherConfig, BlockWorkload, Case, OpenLoopWorkload, ServiceConfig

ROOT = Path(__file__).resolve().parent.parent


def block_case(n=10, k=1, fanout="sequential", cap=None, size=100, timeout_ms=10.0,
               service_us=500.0, **batcher) -> Case:
    return Case(workload=BlockWorkload(n_transactions=n, inputs_per_tx=k, fanout=fanout, cap=cap),
                batcher=BatcherConfig(size=size, timeout_ms=timeout_ms, **batcher),
                service=ServiceConfig(fixed_us=service_us))


def open_case(n=10, rate=100.0, arrival="periodic", size=100, timeout_ms=10.0,
              service_us=500.0, k=1, **batcher) -> Case:
    return Case(workload=OpenLoopWorkload(n_transactions=n, rate_per_s=rate, arrival=arrival,
                                          inputs_per_tx=k),
                batcher=BatcherConfig(size=size, timeout_ms=timeout_ms, **batcher),
                service=ServiceConfig(fixed_us=service_us))
