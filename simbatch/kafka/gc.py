"""The broker JVM's young garbage collections (``[gc]``): stop-the-world pauses that freeze
every broker thread, triggered when the broker's allocations fill the young generation.

Why: on the local broker (Kafka 3.9.1, Java 17, G1 with ``-Xms256m -Xmx512m``), the slow 1 %
of a dense feed's messages are the ones whose request or fetch overlaps a young pause (2026-11-23,
``-Xlog:gc`` against the harness's per-message times: at 1000 msg/s over 32 partitions, nine
pauses of 6-15 ms in 4.4 s, every message slower than the 99th percentile overlapping one;
at 128 partitions on the sparse feed, the two slowest of 200). G1 collects the young
generation when no new eden region can be had (openjdk/jdk
``src/hotspot/share/gc/g1/g1CollectedHeap.cpp``: ``attempt_allocation_slow`` calls
``do_collection_pause``), and the collection runs at a safepoint: every Java thread stops
until it ends.

What the broker allocates (measured with ``jstat -gc`` at 100 ms during calibration runs,
``validate/calibrate_kafka.py``): an idle rate (the KRaft controller, timers), a fixed amount
per produce request, and an amount per partition per consumer fetch (librdkafka's fetch
request names every assigned partition, and the broker builds a response entry for each:
128 partitions on the sparse feed allocate ten times what 1 partition does at the same
request rate). Here the consumer keeps one fetch in flight per broker: an append while the
fetch is out joins the next one (librdkafka ``src/rdkafka_fetcher.c``: a broker's
``rkb_fetching`` is set while its Fetch is out and cleared in ``rd_kafka_broker_fetch_reply``;
no second Fetch goes out meanwhile).

The model: per broker, ``eden_mb`` of room; each produce request (when the broker reads
it), each fetch and the idle rate use it; when it is full the broker pauses for a duration
resampled from ``pause_ms`` (the measured young pauses) and the eden is empty again.

G1 also stops the world at the end of each concurrent marking cycle (the Remark pause; its
Cleanup pause is under 1 ms): a cycle starts with a young pause once the old generation
passes the initiating occupancy (``G1Policy::need_to_start_conc_mark``,
``src/hotspot/share/gc/g1/g1Policy.cpp``), which promotion by
young collections fills, so cycles come at a measured rate per young collection
(``remarks_per_young``, from ``jstat``'s concurrent-pause count over the calibration's
runs, ``validate/broker_gc.py``'s ``fitted_gc``), each
ending ``marking_ms`` after the young pause that started it in a Remark of a length
resampled from ``remark_ms`` (measured: ``-Xlog:gc`` on the local broker, 2026-11-23,
Concurrent Start to Remark 46 and 51 ms; Remarks of 7-16 ms, 2-3 per 4 s beside 5 young
pauses at 1000 msg/s over 32 partitions). A
pause freezes the broker's work: a produce request's round trip, a stage on a broker thread
(with the CPU model, ``broker.py``) and a fetch all take their time in unpaused time, so a
request in flight when a pause starts is answered the pause's length later, and one sent
during it waits for its end. Connections still answer in order (``client.py``).

A run is a span of a long-running JVM (``warm``, the default): at its start eden is part
full and the marking cycles part way, each at a uniform draw -- with eden of a fixed size
filled at a steady rate, a moment not tied to the collections finds it at any fill alike
(the renewal process's stationary age). So a run allocating ``A`` into eden ``E`` holds
``A / E`` young collections on average, as a measured span after a warm-up does; started
empty (``warm = false``) it holds ``floor(A / E)``, half a collection fewer on average
(measured 2026-11-27 on the calibration's 32-partition rung, a 4 s span: ~87 MB of eden
per young collection, 557 MB allocated, 6 collections; the model, started empty, 5). Not
drawn: a marking cycle under way at the start (its Remark then comes in the first
``marking_ms``; a few % of starts).

Not modelled: the concurrent phases' CPU. A cycle marks for ~35-40 ms before its Remark and
rebuilds remembered sets for 12-25 ms after it, on one thread each (``-Xlog:gc``, the
calibration's 32-partition rung, 2026-11-27), beside the broker's threads and, on the local
machine, the client's. Aligned with ``-Xlog:safepoint``, the measured messages in flight
over a stop were answered up to 1-10 ms beyond its length (most around Remarks, with acks
slowed before them too), the model's within ~0.5 ms; holding one of the model's two cores
for the marking and the rebuild moved that rung's p99 by only 0.3-0.5 ms (its cores carry
the broker alone, not the harness beside it), so it was not kept.

Not modelled either: what sets a pause's length. Each is drawn from ``pause_ms`` alone,
while G1's pause follows what the collection copies (every live object out of the young
regions) and the CPU its threads get. Measured on the local broker (2026-11-29: ``jstat
-gc`` at 100 ms, the survivor spaces' use after each collection, ``S0U + S1U``, which the
harness now records as ``gc_survivor_mb``; 28 young collections over 12 harness runs of six
configurations at 4 to 32 partitions and 250 to 2000 msg/s): the 10 that left 0.7-2.1 MB in
the survivor spaces paused 3-6 ms (mean 4.6), the 18 that left 4.5-7.5 MB 5-13 ms (median
9.5). The survivors stayed at ~5-7 MB over a round of runs and then fell to ~1-2 MB as a
collection promoted them (the old generation grew 1-3 MB). New topics raise them, and each
harness run creates its own: on a broker fed by one producer alone, creating ten
32-partition topics took them from 2.4-2.7 MB to 4.5-7.5 for the next 8-10 collections and
the pauses from medians of 4-5.5 ms to 5.5-7 (``python -m validate.kafka_gc_survivors``,
twice), which a production broker's long-lived topics would not do. CI's rung takes its
pauses from the session's other runs (few collections each), which read 12, 12 and 20 ms in
one job (CI 84) against the rung's own 4-10; in a run of the calibration's tests the same
day, the other runs' pauses read 15 and 16 ms at 6.5 and 6.9 MB of survivors (and 5 ms at
1.2), the rung's 13 read 4-11 ms at 1.0-3.6 MB.
Since 2026-12-07 the calibration's judge draws from the session's other runs' pauses and
those of a pool measured the same way over six CI sessions on the machine's CPU (20 pauses of
7-30 ms: ``models/kafka-gc-loopback.toml``, ``validate/broker_gc.py``): a sample of the
machine's pauses, not of one session's one or two.

Simplifications: G1's adaptive eden size is one measured figure; mixed collections count
as young ones; the consumer's idle polls (no data) are in the idle rate; allocation during a
pause counts at once.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Annotated

import numpy as np
import simpy

from ..core.config import NONE_WORD, Bool, Float, NonNeg, PosFloat, Rule, at, config
from .clock import ticks

PAUSE_SLACK = 1e-6
"""Clock units (1 ps): work the pauses put later by less than this is not held back (the
rounding of the paused-time sums, not a pause)."""


@config
class GcConfig:
    """The broker's young collections (module docstring); ``eden_mb = "none"`` (the
    default): no pauses.

    Examples
    --------
    >>> GcConfig(eden_mb=64, pause_ms=(8.0, 12.0)).on
    True
    """

    eden_mb: Annotated[PosFloat | None, NONE_WORD] = None
    idle_mb_per_s: NonNeg = 0.0
    request_kb: NonNeg = 0.0
    partition_fetch_kb: NonNeg = 0.0
    pause_ms: tuple[Annotated[Float, at.Gt(0)], ...] = ()
    remarks_per_young: NonNeg = 0.0
    remark_ms: tuple[Annotated[Float, at.Gt(0)], ...] = ()
    marking_ms: NonNeg = 50.0
    warm: Bool = True
    RULES = (Rule("pause_ms", "at least one measured pause when eden_mb is set",
                  lambda g: g.eden_mb is None or len(g.pause_ms) > 0),
             Rule("remark_ms", "at least one measured Remark when remarks_per_young > 0",
                  lambda g: g.remarks_per_young == 0 or len(g.remark_ms) > 0))

    @property
    def on(self) -> bool:
        return self.eden_mb is not None


class Collector:
    """One broker JVM's young collections: :meth:`allocate` uses eden, :meth:`paused`
    tells how much paused time lies between two instants (clock units)."""

    def __init__(self, env: simpy.Environment, config: GcConfig,
                 rng: np.random.Generator) -> None:
        assert config.eden_mb is not None
        self.env = env
        self.eden_kb = config.eden_mb * 1024.0
        self.request_kb = config.request_kb
        self.idle_kb_per_tick = config.idle_mb_per_s * 1024.0 / ticks(1.0)
        self.pauses = np.asarray([ticks(p / 1e3) for p in config.pause_ms], float)
        self.remarks = np.asarray([ticks(p / 1e3) for p in config.remark_ms], float)
        self.remarks_per_young = config.remarks_per_young
        self.marking = ticks(config.marking_ms / 1e3)
        self.cycles = 0.0                # marking cycles owed (remarks_per_young each young)
        self.rng = rng
        self.used_kb = 0.0
        if config.warm:                  # a span of a long-running JVM (module docstring)
            self.used_kb = float(rng.random()) * self.eden_kb
            self.cycles = float(rng.random()) if self.remarks_per_young > 0 else 0.0
        self.since = 0.0                 # idle allocation counted up to here
        self.starts: list[float] = []    # pauses, in order: start and cumulative paused time
        self.ends: list[float] = []
        self.before: list[float] = [0.0]   # paused time before pause k
        self.at_start: list[float] = []    # the unpaused clock at pause k's start
        self.armed = 0                   # the idle wake-up that counts (see _arm_idle)
        self.youngs = 0                  # young collections so far
        self.remark_stops = 0            # marking cycles' Remarks so far
        self.allocated_kb = 0.0          # what the broker allocated so far
        self._arm_idle()

    # ---------------------------------------------------------------- allocation
    def request_read(self) -> None:
        """The broker read a produce request: its allocation."""
        self.allocate(self.request_kb)

    def allocate(self, kb: float) -> None:
        self._count_idle()
        self.used_kb += kb
        self.allocated_kb += kb
        if self.in_pause():
            return
        if self.used_kb >= self.eden_kb:
            self._pause()
        else:
            self._arm_idle()           # the idle rate now fills eden sooner

    def in_pause(self) -> bool:
        return bool(self.ends) and self.env.now < self.ends[-1]

    def _count_idle(self) -> None:
        now = self.env.now
        if not self.in_pause() and now > self.since:
            idle = self.idle_kb_per_tick * (now - self.since)
            self.used_kb += idle
            self.allocated_kb += idle
        self.since = max(self.since, now)

    def _pause(self) -> None:
        """A young collection: eden is empty after it; it may start a marking cycle."""
        length = float(self.pauses[int(self.rng.integers(self.pauses.size))])
        self._stop(length)
        self.youngs += 1
        self.used_kb = 0.0
        self.armed += 1
        self.cycles += self.remarks_per_young
        if self.cycles >= 1.0:
            self.cycles -= 1.0
            self.env.timeout(length + self.marking).callbacks.append(self._remark)
        self.env.timeout(length).callbacks.append(self._after_pause)

    def _remark(self, _event: simpy.Event | None) -> None:
        """The marking cycle's Remark: a stop of its own (after any pause under way)."""
        if self.in_pause():
            self.env.timeout(self.ends[-1] - self.env.now).callbacks.append(self._remark)
            return
        self._count_idle()
        length = float(self.remarks[int(self.rng.integers(self.remarks.size))])
        self._stop(length)
        self.remark_stops += 1
        self.armed += 1
        self.env.timeout(length).callbacks.append(self._after_pause)

    def _stop(self, length: float) -> None:
        """Every broker thread stops for ``length`` from now."""
        now = self.env.now
        self.starts.append(now)
        self.ends.append(now + length)
        self.at_start.append(now - self.before[-1])
        self.before.append(self.before[-1] + length)
        self.since = now + length

    def _after_pause(self, _event: simpy.Event) -> None:
        if self.used_kb >= self.eden_kb:   # filled during the pause
            self._pause()
        else:
            self._arm_idle()

    def _arm_idle(self) -> None:
        """Wake when the idle rate would fill what is left of eden (a wake-up armed before
        the latest allocation or pause is stale)."""
        if self.idle_kb_per_tick <= 0:
            return
        self.armed += 1
        token = self.armed
        wait = max(1.0, (self.eden_kb - self.used_kb) / self.idle_kb_per_tick)

        def wake(_event: simpy.Event) -> None:
            if token != self.armed or self.in_pause():
                return
            self._count_idle()
            if self.used_kb >= self.eden_kb:
                self._pause()
            else:
                self._arm_idle()

        self.env.timeout(wait).callbacks.append(wake)

    # ---------------------------------------------------------------- frozen time
    def paused_by(self, t: float) -> float:
        """Paused time from the start of the run up to ``t``."""
        k = bisect_right(self.starts, t)
        if k == 0:
            return 0.0
        return self.before[k - 1] + min(t, self.ends[k - 1]) - self.starts[k - 1]

    def due(self, u: float) -> float:
        """The earliest time whose unpaused clock reaches ``u``, given the pauses so far
        (scalar :meth:`wall_clock`)."""
        return u + self.before[bisect_left(self.at_start, u)]

    def run_after(self, delay: float, then) -> None:
        """Call ``then()`` once ``delay`` of unpaused time has passed from now: at the time
        the pauses so far put the end of ``delay`` at (:meth:`due`), checked again there
        for any pause that started meanwhile, so each wait is one step per pause. (Until
        2026-11-27 it waited out the pause time owed since the last check, which inside a
        pause under way advanced by the overlap at the check, a rounding error's size when
        a pause began just before it: a hypothesis example crawled there for minutes.)"""
        now = self.env.now
        target = now - self.paused_by(now) + delay      # the unpaused clock at the end

        def check(_event: simpy.Event) -> None:
            due = self.due(target)
            if due > self.env.now + PAUSE_SLACK:
                self.env.timeout(due - self.env.now).callbacks.append(check)
            else:
                then()

        self.env.timeout(max(0.0, delay)).callbacks.append(check)

    def unpaused_clock(self, t: np.ndarray) -> np.ndarray:
        """``t`` minus the paused time before it (vectorised :meth:`paused_by`)."""
        starts, ends = np.asarray(self.starts), np.asarray(self.ends)
        before = np.asarray(self.before[:-1])
        k = np.searchsorted(starts, t, side="right")
        out = np.asarray(t, float).copy()
        hit = k > 0
        j = k[hit] - 1
        out[hit] -= before[j] + np.minimum(t[hit], ends[j]) - starts[j]
        return out

    def wall_clock(self, u: np.ndarray) -> np.ndarray:
        """The earliest time whose unpaused clock reaches ``u`` (inverse of
        :meth:`unpaused_clock`: a time that falls in a pause goes to its end)."""
        # a pause k adds its length to every u beyond its start's unpaused clock
        k = np.searchsorted(np.asarray(self.at_start), u, side="left")
        return np.asarray(u, float) + np.asarray(self.before)[k]


__all__ = ["PAUSE_SLACK", "Collector", "GcConfig"]
