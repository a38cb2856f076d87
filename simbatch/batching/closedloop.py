"""The calibration harness as a workload: ``c`` client threads calling the batch service back
to back.

It mirrors how the recorded Aerospike samples were taken (``validate/aerospike_harness.py``
and ``measure_batch_read.py`` beside ``../shared/data/aerospike-loopback``): each of
``concurrency`` threads makes its share of the timed calls back to back, each call of
``size`` keys; a thread that has made its share keeps calling, untimed, until every thread
has, so every timed call ran at the full concurrency. Every call is a batch call (a one-key
batch read, not the single-record path). The calls go straight to the service's
call layer (:class:`~simbatch.batching.service.ServiceCalls`: the cost, the regime, the tail
and the shared machine), without a batcher or records, so a calibration can simulate many
cells quickly with the engine's own service model.
"""

from __future__ import annotations

import math

import numpy as np
import simpy

from ..core.errors import check_int, fail
from ..core.streams import streams
from .service import ServiceCalls, ServiceConfig


def closed_loop(config: ServiceConfig, size: int, concurrency: int, *, calls: int = 2000,
                seed: int = 0) -> np.ndarray:
    """Per-call latencies (seconds) of ``concurrency`` threads calling back to back with
    ``size`` keys a call, ``calls`` timed calls in all (in completion order).

    Parameters
    ----------
    config : ServiceConfig
    size : int
        Keys per call.
    concurrency : int
        Client threads.
    calls : int
        Timed calls (each thread makes ``ceil(calls / concurrency)``).
    seed : int
        The run's seed (the service's stream, as in :func:`simbatch.batching.simulate`).

    Examples
    --------
    >>> lat = closed_loop(ServiceConfig(fixed_us=60, per_record_us=3), 10, 1, calls=5)
    >>> [round(x * 1e6) for x in lat]
    [90, 90, 90, 90, 90]
    """
    if not isinstance(config, ServiceConfig):
        raise fail("closed_loop", "config", "a ServiceConfig", type(config).__name__)
    for name, value in (("size", size), ("concurrency", concurrency), ("calls", calls)):
        check_int("closed_loop", name, value, minimum=1)
    check_int("closed_loop", "seed", seed)
    env = simpy.Environment()
    service = ServiceCalls(env, config, streams(seed, ("service",))["service"])
    per_thread = math.ceil(calls / concurrency)
    out: list[float] = []
    made = [0] * concurrency
    busy = [concurrency]

    def call(thread: int, continuing: bool) -> None:
        started = env.now

        def returned() -> None:
            if made[thread] < per_thread:
                out.append(env.now - started)
            made[thread] += 1
            if made[thread] == per_thread:
                busy[0] -= 1
            if busy[0] > 0:
                call(thread, True)

        service.start(size, returned, continuing=continuing, single_path=False)

    for thread in range(concurrency):
        call(thread, False)
    env.run()
    return np.asarray(out)
