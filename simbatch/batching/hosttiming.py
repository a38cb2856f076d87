"""The host's timers: how long a Go ``time.Sleep(d)`` and a ``time.Timer`` of ``d`` really
take on the machine that runs the client.

Two ways to describe a host, in the scenario's ``[host]`` table:

* ``timer_overshoot_us``: one constant added to every timer and sleep (golang/go#44343:
  timer lateness is platform-dependent). Table R1's scenario uses it.
* distributions measured by ``validate/gobatcher`` (``[host] model =
  "../models/host-loopback.toml"``): for each requested ``d`` (the table key, microseconds)
  the actual duration at the quantiles ``quantiles`` (index 0 the minimum, the last the
  maximum). ``sleep_us`` is ``time.Sleep(d)``, ``timer_us`` a ``time.NewTimer(d)`` received
  from (go-batcher's worker waits on one in a ``select``), ``afterfunc_us`` the timer's
  expiry alone. They replace the constant: a run draws every timer and sleep from them
  (its own random stream, ``host``).

Why the distributions matter on a Linux VM: an idle Go process waits for its next timer in
``epoll_wait``, whose timeout is whole milliseconds, and Go's ``runtime/netpoll_epoll.go``
(``netpoll``) turns any delay under 1 ms into 1 ms, so ``time.Sleep(500us)`` takes about
1.1 ms there; timers of 5 and 10 ms fire about 0.23 ms late (models/host-loopback.toml).

A requested ``d`` between two measured keys takes, quantile by quantile, the lateness
(actual - d) interpolated linearly in ``d`` between them; outside the measured range, the
lateness of the nearest key. The measured rounding of sub-millisecond sleeps to ~1.1 ms
is kept that way (the lateness at 500 us is ~600 us).

Two more properties of the host matter when the client's CPU is modelled (``[go]``):

* ``wake_us``: how long an idle processor's thread takes to run a goroutine it steals from
  a busy one's local run queue (a futex wake-up, the kernel scheduling the thread, the
  steal), measured by the harness (its ``-host`` run and its probes since 2026-11-27: a median
  ~30 us here); one value is a constant. A goroutine alone in ``runnext`` takes that and
  ``backoff_us`` more;
* ``backoff_us``: how long the Go runtime's ``usleep(3)`` takes -- ``runqgrab``'s back-off
  before a thread steals a running processor's ``runnext`` (``src/runtime/proc.go``). A
  3 us nanosleep, which Linux's timer slack (50 us by default) stretches to ~55 us;
* ``stall_per_s``, ``stall_us``: other processes on the machine taking the client's
  threads. While one of its processors runs, its thread loses the CPU at ``stall_per_s[k-1]``
  stalls per second of running when ``k`` of the client's threads are running, each stall
  lasting a draw from ``stall_us["k"]``. The harness measures both between blocks (its
  probes: goroutines reading the clock in a tight loop, a gap being a stall). A quiet host
  has none (the default);
* ``speed_ratio``: how much faster one of the machine's processors runs the same CPU work
  than another (a vCPU's host core, its SMT sibling's load, its clock), at ``quantiles``
  (ratios >= 1). The harness measures it from its spin flushes at GOMAXPROCS 2: the flushes
  of a block fall into two chains, one per processor, whose median durations differ by a
  median 0.6 % on a quiet host (``validate/gobatcher_runs.py``, ``speed_ratio_from``).
  Each run draws one ratio per processor after the first, which then runs its CPU that much
  slower or faster (even odds). It matters where two processors take turns at equal
  CPU-bound flushes: their cycles drift apart by the difference every flush, so sooner or
  later they meet, and what ran between the flushes on one processor runs beside the
  other's (go-batcher's drain mode then gathers many transactions per flush). Empty (the
  default): every processor runs at the same speed.
* ``cpu_noise_ns``: how much the CPU time of the same work varies from one run to the next
  (caches, branch predictors, interrupts), as a variance per nanosecond of CPU: a run of
  ``c`` ns takes ``c`` times a lognormal draw of mean 1 and variance ``cpu_noise_ns / c``.
  The variance of a sum of independent pieces grows with its length, so it does not matter
  how the model cuts the work into runs, and a long run varies less than a short one: at
  84 ns, a ~3.6 us drain-mode cycle (a transaction's Puts, the worker's drain, the flush's
  hand-off) by ~15 %, a 500 us spin by ~1.3 %. Measured on the harness's GOMAXPROCS 1 drain
  blocks that make one flush per transaction, whose flush starts are one such cycle apart:
  their spread (interquartile range over median) is 0.20-0.25 on this machine
  (``validate/gobatcher_runs.py``, ``spreads_from``), which the model reproduces
  with 83.5-134 ns. It matters where two processors run equal cycles: with fixed costs their
  phase locks, and the other processor's Puts land during this one's flush in every cycle,
  never during its drain; with the noise the phase wanders, as on the host. 0 (the
  default): every run takes exactly its cost.

Simplification: the sleep and timer distributions are those of an idle process. When the
client's CPU is modelled, a timer that expires while one of its processors is running fires
at that processor's next scheduling point instead (:mod:`simbatch.batching.scheduler`), as
Go's ``checkTimers`` does in ``schedule``.
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np

from ..core.config import Field, Float, Int, NonNeg, Rule, Str, at, config

Distribution = tuple[Annotated[Float, at.Ge(0)], ...]
TABLES = ("sleep_us", "timer_us", "afterfunc_us")


def _keys_ok(table: dict[str, tuple[float, ...]]) -> bool:
    try:
        return all(float(k) > 0 for k in table)
    except ValueError:
        return False


def _ascending(values: tuple[float, ...], n: int) -> bool:
    return len(values) == n and all(a <= b for a, b in zip(values, values[1:]))


def _lists_ok(c: HostConfig) -> bool:
    n = len(c.quantiles)
    return all(_ascending(v, n) for t in (*TABLES, "stall_us") for v in getattr(c, t).values())


def _needs_grid(c: HostConfig) -> bool:
    return bool(c.sleep_us or c.timer_us or c.afterfunc_us or c.stall_us or c.speed_ratio
                or c.packed_us or len(c.wake_us) > 1 or len(c.backoff_us) > 1)


def _grid_ok(c: HostConfig) -> bool:
    q = c.quantiles
    return not _needs_grid(c) or (len(q) >= 2 and q[0] == 0 and q[-1] == 1
                                  and all(a < b for a, b in zip(q, q[1:])))


@config
class HostConfig:
    """The host's timers (``[host]``).

    Parameters
    ----------
    timer_overshoot_us : float
        How late every Go timer or sleep fires, one constant (used when no distributions
        are given); added to the batcher's timer and ticks and to a flush that is a sleep.
    quantiles : list of float
        The quantile grid of every measured list (0 to 1, ascending).
    sleep_us, timer_us, afterfunc_us : table of lists
        Measured actual durations (microseconds) of ``time.Sleep(d)``, a ``time.Timer`` and
        ``time.AfterFunc``, keyed by the requested ``d`` in microseconds, at ``quantiles``.
    samples : table
        How many samples stand behind each list (provenance; not used by the simulation).
    wake_us : list of float
        An idle processor's wake-up latency, microseconds: one value (a constant) or one
        per quantile.
    backoff_us : list of float
        The runtime's ``usleep(3)``, microseconds: one value or one per quantile.
    stall_per_s : list of float
        Stalls per second of running, with 1, 2, ... of the client's threads running; empty
        = a quiet host.
    stall_us : table of lists
        Stall lengths (microseconds) at ``quantiles``, keyed by threads running ("1", ...).
    speed_ratio : list of float
        The ratio of two processors' speeds (>= 1) at ``quantiles``; empty = all equal.
    packed_us : list of float
        How long the client's threads share one CPU over a run, microseconds, at
        ``quantiles``, spent from its wake-ups of an idle processor (:mod:`.scheduler`);
        empty = never.
    cpu_noise_ns : float
        The variance of a run's CPU time per nanosecond of its cost (ns); 0 = none.

    Examples
    --------
    >>> HostConfig(timer_overshoot_us=90).has_distributions
    False
    """

    timer_overshoot_us: NonNeg = 0.0
    quantiles: tuple[Annotated[Float, at.Ge(0), at.Le(1)], ...] = ()
    sleep_us: dict[Str, Distribution] = Field(default_factory=dict)
    timer_us: dict[Str, Distribution] = Field(default_factory=dict)
    afterfunc_us: dict[Str, Distribution] = Field(default_factory=dict)
    samples: dict[Str, dict[Str, Int]] = Field(default_factory=dict)
    wake_us: tuple[Annotated[Float, at.Ge(0)], ...] = (10.0,)
    backoff_us: tuple[Annotated[Float, at.Ge(0)], ...] = (3.0,)
    stall_per_s: tuple[NonNeg, ...] = ()
    stall_us: dict[Str, Distribution] = Field(default_factory=dict)
    speed_ratio: tuple[Annotated[Float, at.Ge(1)], ...] = ()
    packed_us: tuple[Annotated[Float, at.Ge(0)], ...] = ()
    cpu_noise_ns: NonNeg = 0.0
    RULES = (
        Rule("quantiles", "ascending from 0 to 1 when distributions are given", _grid_ok),
        Rule("wake_us", "one value, or one ascending value per quantile",
             lambda c: len(c.wake_us) == 1 or _ascending(c.wake_us, len(c.quantiles))),
        Rule("backoff_us", "one value, or one ascending value per quantile",
             lambda c: len(c.backoff_us) == 1 or _ascending(c.backoff_us, len(c.quantiles))),
        Rule("stall_us", "a list per thread count with stalls (keys '1', '2', ...)",
             lambda c: all(str(k + 1) in c.stall_us
                           for k, rate in enumerate(c.stall_per_s) if rate > 0)),
        Rule("stall_us", "one ascending value per quantile in each list",
             lambda c: all(_ascending(v, len(c.quantiles)) for v in c.stall_us.values())),
        Rule("speed_ratio", "empty, or one ascending value (>= 1) per quantile",
             lambda c: not c.speed_ratio or _ascending(c.speed_ratio, len(c.quantiles))),
        Rule("packed_us", "empty, or one ascending value per quantile",
             lambda c: not c.packed_us or _ascending(c.packed_us, len(c.quantiles))),
        Rule("sleep_us", "a table keyed by positive durations in microseconds",
             lambda c: _keys_ok(c.sleep_us)),
        Rule("timer_us", "a table keyed by positive durations in microseconds",
             lambda c: _keys_ok(c.timer_us)),
        Rule("afterfunc_us", "a table keyed by positive durations in microseconds",
             lambda c: _keys_ok(c.afterfunc_us)),
        Rule("sleep_us", "lists of one ascending value per quantile", _lists_ok),
        Rule("timer_us", "given together with sleep_us (a host file has both)",
             lambda c: bool(c.timer_us) == bool(c.sleep_us)),
        Rule("timer_overshoot_us", "0 when measured distributions are given (they replace "
             "it)", lambda c: not c.sleep_us or c.timer_overshoot_us == 0),
    )

    @property
    def has_distributions(self) -> bool:
        return bool(self.sleep_us)


class _Table:
    """One measured table: lateness quantiles by requested duration."""

    def __init__(self, quantiles: tuple[float, ...], table: dict[str, tuple[float, ...]]
                 ) -> None:
        keys = sorted(table, key=float)
        self.d_us = np.array([float(k) for k in keys])
        self.late_us = np.array([np.asarray(table[k], float) - float(k) for k in keys])
        self.grid = np.asarray(quantiles, float)
        self._by_d: dict[float, np.ndarray] = {}

    def lateness(self, d_us: float) -> np.ndarray:
        """Lateness quantiles (microseconds) of a wait of ``d_us``."""
        cached = self._by_d.get(d_us)
        if cached is not None:
            return cached
        ds = self.d_us
        if d_us <= ds[0]:
            late = self.late_us[0]
        elif d_us >= ds[-1]:
            late = self.late_us[-1]
        else:
            i = int(np.searchsorted(ds, d_us))
            w = (d_us - ds[i - 1]) / (ds[i] - ds[i - 1])
            late = (1 - w) * self.late_us[i - 1] + w * self.late_us[i]
        self._by_d[d_us] = late
        return late


class HostTiming:
    """Draws how long sleeps and timers take on the host described by ``config``.

    Parameters
    ----------
    config : HostConfig
    rng : numpy.random.Generator
        The ``host`` stream (used only with measured distributions).

    Examples
    --------
    >>> t = HostTiming(HostConfig(timer_overshoot_us=90), np.random.default_rng(0))
    >>> round(t.timer_s(0.010), 6), round(t.sleep_s(0.0005), 6)
    (0.01009, 0.00059)
    """

    _CHUNK = 4096

    def __init__(self, config: HostConfig, rng: np.random.Generator | None = None) -> None:
        self.config = config
        self._late_s = config.timer_overshoot_us / 1e6
        self._rng = rng
        self._u: list[float] = []
        self._sleep = _Table(config.quantiles, config.sleep_us) if config.sleep_us else None
        self._timer = _Table(config.quantiles, config.timer_us) if config.timer_us else None
        grid = np.asarray(config.quantiles, float)
        self._grid = grid
        self._wake = np.asarray(config.wake_us, float)
        self._backoff = np.asarray(config.backoff_us, float)
        self._stall_rate = tuple(config.stall_per_s)
        self._stall_us = {int(k): np.asarray(v, float) for k, v in config.stall_us.items()}
        self._speed = np.asarray(config.speed_ratio, float)
        self._packed = np.asarray(config.packed_us, float)

    def _uniform(self) -> float:
        if not self._u:
            rng = self._rng if self._rng is not None else np.random.default_rng(0)
            self._u = rng.random(self._CHUNK).tolist()
        return self._u.pop()

    def _list_s(self, values: np.ndarray) -> float:
        if values.size == 1:
            return float(values[0]) * 1e-6
        return float(np.interp(self._uniform(), self._grid, values)) * 1e-6

    def wake_s(self) -> float:
        """An idle processor's wake-up latency (seconds)."""
        return self._list_s(self._wake)

    def backoff_s(self) -> float:
        """The runtime's ``usleep(3)`` (seconds)."""
        return self._list_s(self._backoff)

    def poll_overshoot_s(self) -> float:
        """How late a 1 ms ``epoll_wait`` of an idle Go process returns (seconds): the
        measured lateness of ``time.Sleep(1ms)``."""
        if self._sleep is None:
            return 0.0
        late = self._sleep.lateness(1000.0)
        return max(0.0, float(np.interp(self._uniform(), self._sleep.grid, late))) * 1e-6

    def stall_rate(self, threads: int) -> float:
        """Stalls per second of running with ``threads`` of the client's threads running."""
        rates = self._stall_rate
        if not rates:
            return 0.0
        return rates[min(threads, len(rates)) - 1]

    def stall_s(self, threads: int) -> float:
        """One stall's length (seconds) with ``threads`` threads running."""
        key = min(threads, max(self._stall_us))
        while key not in self._stall_us:
            key -= 1
        return float(np.interp(self._uniform(), self._grid, self._stall_us[key])) * 1e-6

    def processor_speeds(self, n: int) -> list[float]:
        """How long each of ``n`` processors takes per unit of CPU work, drawn for a run:
        the first 1, each other one the first's time times or divided by (even odds) a
        draw from ``speed_ratio`` (all 1 without it)."""
        if not self._speed.size or n < 2:
            return [1.0] * n
        out = [1.0]
        for _ in range(n - 1):
            r = float(np.interp(self._uniform(), self._grid, self._speed))
            out.append(r if self._uniform() < 0.5 else 1.0 / r)
        return out

    def packed_s(self) -> float:
        """How long the client's threads share one CPU over a run, from its wake-ups of an
        idle processor (seconds; 0 without ``packed_us``)."""
        if not self._packed.size:
            return 0.0
        return float(np.interp(self._uniform(), self._grid, self._packed)) * 1e-6

    def normals(self) -> list[float]:
        """A chunk of standard normal draws (the runs' CPU noise, ``cpu_noise_ns``)."""
        rng = self._rng if self._rng is not None else np.random.default_rng(0)
        return rng.standard_normal(self._CHUNK).tolist()

    def exponential(self) -> float:
        """A unit exponential draw (time to the next stall, in units of 1/rate)."""
        return -math.log(1.0 - self._uniform())

    @property
    def measured(self) -> bool:
        return self._sleep is not None

    def _draw(self, table: _Table, d_s: float) -> float:
        late = table.lateness(round(d_s * 1e6, 6))
        late_us = float(np.interp(self._uniform(), table.grid, late))
        return max(d_s, d_s + late_us / 1e6)

    def sleep_s(self, d_s: float) -> float:
        """How long ``time.Sleep(d_s)`` takes (seconds)."""
        if self._sleep is None:
            return d_s + self._late_s
        return self._draw(self._sleep, d_s)

    def timer_s(self, d_s: float) -> float:
        """How long a ``time.Timer`` of ``d_s`` takes to be received from (seconds). Below
        the shortest measured timer, the sleep table answers: a sleep is a runtime timer too,
        and sleeps are measured down to 50 us."""
        if self._timer is None:
            return d_s + self._late_s
        if self._sleep is not None and d_s * 1e6 < self._timer.d_us[0]:
            return self._draw(self._sleep, d_s)
        return self._draw(self._timer, d_s)
