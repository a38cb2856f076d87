"""The cost of one flush: one batch call to the database.

Models a go-batcher flush callback such as teranode's ``sendOutpointBatch``
(``stores/utxo/aerospike/get.go``): one ``BatchOperate`` whose cost is a fixed round-trip plus
a cost per record, or per **unique key** when the callback deduplicates parents first. A batch of
exactly one record takes the Aerospike client's single-record path (``executeSingle``), which
has its own cost. ``max_in_flight`` is a permit pool in front of every call, like teranode's
``uaerospike`` connection throttle (ConnectionQueueSize permits) or a server that works on a
bounded number of calls at once; calls beyond it wait FIFO.

Service time of a batch of n records (or n unique keys)::

    S = (fixed_us + per_record_us * n) * noise        (n > 1, or no single-record cost set)
    S = single_record_us * noise                      (n == 1 and single_record_us set)

After the call returns, the client parses the batch on its own cores (``[service.client]``
``cores``, a FIFO pool; ``None`` = unlimited): ``parse_ns_per_record`` per record, plus the
per-record statistics of :mod:`simbatch.batching.clientstats` (``[service.stats]``), whose lock
contention depends on how many parses update the same counter map at that moment and whose
lock is a server the parses share (a parse waits for it while it is busy), plus
``app_ns_per_record``: the service's own
CPU per record on the same cores (what a CPU profile shows beside the client: validation,
serialisation). So statistics overhead, lock capacity and core count show up in block time
and latency, and the share of the process CPU spent in statistics is what a profile would
show (table R3). A parse waiting for the statistics lock keeps its core in the model (Go
would park the goroutine and run another on the core); with at least as many client cores
as parses, as in R3, that changes nothing.

``noise`` is a multiplicative factor with median 1, one per call: constant 1, log-normal with
shape ``sigma``, resampled from measured ratios latency / cell median (``empirical``), or
from the measured ratios of the call's region of batch size (``by_size``, ``[service.tail]``),
so a fitted model keeps the measured shape of the tail at every size.

The cost has two levels, kept as a regime that persists in time (``[service.regime]``,
:mod:`simbatch.batching.servicecost`): the slow level above, and a fast one
(``fast_fixed_us + per_record_us * n``) for a share of the time that is an input
(``fast_share``, 0 by default). When the server runs on the client's machine
(``[service.machine] cores``, :mod:`simbatch.batching.hostcores`), a call is CPU work on
the machine's shared cores (client work under the client's lock, the server's work, wake-ups
of idle cores) instead of a fixed delay, so calls in flight slow each other down as they did
on the measured 2-vCPU VM; the permit pool, if set, still stands in front.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
import simpy

from ..core.config import Bool, Cores, Field, Float, NonNeg, PosInt, Rule, at, config
from ..core.cpu import CPUConfig
from ..core.pool import FifoPool
from .clientstats import StatsConfig, StatsLocks
from .hostcores import MachineConfig, SharedMachine
from .servicecost import CallCost, RegimeConfig, TailConfig, noise_samples

NOISES = ("constant", "lognormal", "empirical", "by_size")
COST_BASES = ("records", "unique_keys")


@config
class ClientConfig:
    """The client's CPU after a call returns, on the client's cores (``[service.client]``).

    Parameters
    ----------
    parse_ns_per_record : float
        Client CPU to parse one returned record.
    app_ns_per_record : float
        The service's own CPU per record on the same cores (validation, serialisation).
    cores : int or None
        Client cores the parses share (FIFO); ``None`` = unlimited.
    line_ns : float
        Cache-line transfer cost between client cores (for the statistics lock).
    """

    parse_ns_per_record: NonNeg = 0.0
    app_ns_per_record: NonNeg = 0.0
    cores: Cores | None = None
    line_ns: NonNeg = 80.0


@config
class ServiceConfig:
    """Service-time model of one batch call.

    Parameters
    ----------
    fixed_us : float
        Fixed cost per call (round-trip plus per-call work), median, microseconds.
    per_record_us : float
        Cost per record (or per unique key, see ``cost_basis``), microseconds.
    cost_basis : {"records", "unique_keys"}
        What ``per_record_us`` multiplies.
    noise : {"constant", "lognormal", "empirical", "by_size"}
        Multiplicative variation around the median, one factor per call.
    sigma : float
        Log-normal shape (std of the log); used when ``noise = "lognormal"``.
    ratios : tuple of float
        Measured latency / median ratios; used when ``noise = "empirical"``.
    single_record_us : float or None
        Median cost of a 1-record batch (the client's single-record path); ``None`` = use
        the batch formula with n = 1.
    max_in_flight : int or None
        Permit pool: calls in service at once; ``None`` = unlimited.
    is_sleep : bool
        The flush is a sleep (a benchmark's stand-in for the database), so it ends with a
        timer wake-up and the host's ``timer_overshoot_us`` is added to it.
    regime : RegimeConfig
        The fast cost level and the share of time spent in it (``[service.regime]``).
    tail : TailConfig
        Measured ratios by region of batch size, for ``noise = "by_size"``
        (``[service.tail]``).
    machine : MachineConfig
        The cores the client and the server share, if they do (``[service.machine]``).
    client : ClientConfig
        The client's CPU per returned record (``[service.client]``).
    stats : StatsConfig
        The client's per-record statistics (``[service.stats]``).

    Examples
    --------
    >>> ServiceConfig(fixed_us=58, per_record_us=2.9).median_s(100)
    0.000348
    """

    fixed_us: NonNeg = 500.0
    per_record_us: NonNeg = 0.0
    cost_basis: Literal["records", "unique_keys"] = "records"
    noise: Literal["constant", "lognormal", "empirical", "by_size"] = "constant"
    sigma: Annotated[Float, at.Ge(0), at.Le(10)] = 0.0
    ratios: tuple[Annotated[Float, at.Gt(0)], ...] = ()
    single_record_us: NonNeg | None = None
    max_in_flight: PosInt | None = None
    is_sleep: Bool = False
    client: ClientConfig = Field(default_factory=ClientConfig)
    stats: StatsConfig = Field(default_factory=StatsConfig)
    regime: RegimeConfig = Field(default_factory=RegimeConfig)
    tail: TailConfig = Field(default_factory=TailConfig)
    machine: MachineConfig = Field(default_factory=MachineConfig)
    RULES = (Rule("ratios", "a non-empty list when noise = 'empirical'",
                  lambda c: c.noise != "empirical" or len(c.ratios) > 0),
             Rule("noise", "'by_size' only with [service.tail] ratios",
                  lambda c: c.noise != "by_size" or len(c.tail.ratios) > 0),
             Rule("fixed_us", "at least the two wake-ups ([service.machine] wake_us) it "
                  "includes", lambda c: c.machine.cores is None
                  or 2 * c.machine.wake_us <= min(c.fixed_us, c.single_record_us or math.inf)),
             Rule("is_sleep", "false when the server shares the client's cores "
                  "([service.machine] cores)", lambda c: not (c.is_sleep and c.machine.cores)))

    def median_s(self, n: int, late_us: float = 0.0) -> float:
        """Median service time of a call of ``n`` records (or unique keys), in seconds;
        ``late_us``: how late the host's timers fire, added when the call is a sleep."""
        late = late_us if self.is_sleep else 0.0
        if n == 1 and self.single_record_us is not None:
            return (self.single_record_us + late) / 1e6
        return round((self.fixed_us + self.per_record_us * n + late) / 1e6, 12)

    def noise_samples(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` noise factors (not for ``by_size``, whose factor depends on the size)."""
        return noise_samples(self, rng, size)

    @property
    def has_client_stage(self) -> bool:
        c = self.client
        return (c.parse_ns_per_record > 0 or c.app_ns_per_record > 0
                or self.stats.variant != "disabled")


class ServiceCalls:
    """The batch calls of one service: what each costs (level, tail) and where it runs (a
    delay, or CPU work on the machine's shared cores).

    Parameters
    ----------
    env : simpy.Environment
    config : ServiceConfig
    rng : numpy.random.Generator
        The service-time stream (the regime and the machine's choices draw from child
        streams of it, only when they are used).
    late_us : float
        How late the host's timers fire (added to a call that is a sleep).
    """

    def __init__(self, env: simpy.Environment, config: ServiceConfig,
                 rng: np.random.Generator, late_us: float = 0.0) -> None:
        self.env = env
        self.config = config
        m = config.machine
        self.cost = CallCost(config, rng, wake_us=m.wake_us if m.cores else 0.0)
        self.machine = (SharedMachine(env, m, rng.spawn(1)[0] if m.pick == "random" else None)
                        if m.cores else None)
        self._late_us = late_us
        self._pre = m.client_pre_share

    def start(self, n: int, on_returned, *, continuing: bool = False,
              single_path: bool = True) -> simpy.Event | None:
        """Start a call of ``n`` keys (records); ``on_returned()`` when it returns. Without
        a shared machine, returns the call's own timeout event. ``continuing``: the caller
        starts it from inside its previous call's ``on_returned`` (see
        :meth:`SharedMachine.call`); ``single_path``: a call of one record takes the
        single-record path (``single_record_us``, as the Go client's ``executeSingle``)."""
        fast = self.cost.regime.fast_at(self.env.now)
        factor = self.cost.factor(n)
        if self.machine is None:
            if fast or not single_path:
                duration = self.cost.latency_us(n, fast, single_path) / 1e6
                if self.config.is_sleep:
                    duration += self._late_us / 1e6
            else:
                duration = self.config.median_s(n, self._late_us)
            timeout = self.env.timeout(duration * factor)
            timeout.callbacks.append(lambda _ev: on_returned())
            return timeout
        m = self.config.machine
        fixed, keys, wake = self.cost.parts_us(n, fast, single_path)
        client = m.client_fixed_share * fixed + m.client_key_share * keys
        scale = factor * 1e-6
        self.machine.call(self._pre * client * scale, (fixed + keys - client) * scale,
                          (1 - self._pre) * client * scale, wake * scale, on_returned,
                          continuing=continuing)
        return None


class BatchService:
    """Serves flushed batches; records each batch; tells ``on_done`` which items finished.

    Parameters
    ----------
    env : simpy.Environment
    config : ServiceConfig
    rng : numpy.random.Generator
        The service-time stream.
    recorder : simbatch.records.Recorder
    on_done : callable(items) or None
        Called with the batch's items when the call completes.
    """

    def __init__(self, env: simpy.Environment, config: ServiceConfig,
                 rng: np.random.Generator, recorder, on_done=None,
                 late_us: float = 0.0) -> None:
        self.env = env
        self.config = config
        self.rng = rng
        self.recorder = recorder
        self.on_done = on_done
        self._calls = ServiceCalls(env, config, rng, late_us)
        self._permits = FifoPool(env, config.max_in_flight) if config.max_in_flight else None
        self._direct = self._permits is None and self._calls.machine is None
        self._client = config.has_client_stage
        client = config.client
        self._stats = config.stats
        cores = client.cores or 1024
        self._client_cpu = CPUConfig(cores=cores, line_near_ns=client.line_ns,
                                     domain_cores=cores)
        self._client_cores = FifoPool(env, client.cores) if client.cores else None
        self._locks = StatsLocks(env, self._stats, self._client_cpu)
        self._parsing = 0

    def close_batch(self, items: list[int], trigger: str, opened_at: float) -> int:
        """Record that a batch closed now (the flush decision); returns its id."""
        return self.recorder.new_batch(items, trigger, opened_at, self.env.now)

    def submit(self, batch_id: int, items: list[int]) -> simpy.Event:
        """Start (or queue for a permit) the call of a closed batch; succeeds when done."""
        if self._direct and not self._client:
            event = self._start(batch_id, items, None)
            assert event is not None            # a call without a machine is its timeout
            return event
        done = self.env.event()
        if self._permits is None:
            self._start(batch_id, items, done)
        else:
            self._permits.acquire(lambda: self._start(batch_id, items, done))
        return done

    def _start(self, batch_id: int, items: list[int],
               done: simpy.Event | None) -> simpy.Event | None:
        n = len(items)
        if self.config.cost_basis == "unique_keys":
            n = self.recorder.count_unique_keys(items)
        self.recorder.batch_started(batch_id, self.env.now, n)
        return self._calls.start(n, lambda: self._server_done(batch_id, items, done, n))

    def _server_done(self, batch_id: int, items: list[int], done, n: int) -> None:
        self.recorder.batch_server_returned(batch_id, self.env.now)
        if self._permits is not None:
            self._permits.release()
        if not self._client:
            self._finish(batch_id, items, done)
        elif self._client_cores is None:
            self._parse(batch_id, items, done, n)
        else:
            self._client_cores.request().callbacks.append(
                lambda _ev: self._parse(batch_id, items, done, n))

    def _parse(self, batch_id: int, items: list[int], done, n: int) -> None:
        # the parse loop (its own CPU, then the locked statistics updates), then the
        # service's own work on the records, all on the core this parse holds
        self._parsing += 1
        parse_ns = n * self.config.client.parse_ns_per_record
        app_ns = n * self.config.client.app_ns_per_record
        unlocked_ns = self._stats.unlocked_ns(n, self._parsing, self._client_cpu)

        def parsed(_ev):
            self._parsing -= 1
            if self._client_cores is not None:
                self._client_cores.release()
            self._finish(batch_id, items, done)

        def counted(entered: float, stats_ns: float, set_ns: float) -> None:
            phase_ns = (self.env.now - entered) * 1e9
            wait_ns = phase_ns - stats_ns
            if wait_ns <= 1e-9 * phase_ns:      # within rounding: no wait
                wait_ns = 0.0
            self.recorder.batch_client_cpu(batch_id, parse_ns, stats_ns + unlocked_ns, set_ns,
                                           app_ns, wait_ns)
            self.env.timeout(app_ns * 1e-9).callbacks.append(parsed)

        def count(_ev) -> None:
            entered = self.env.now
            self._locks.update(batch_id, n, lambda c, s: counted(entered, c, s))

        self.env.timeout((parse_ns + unlocked_ns) * 1e-9).callbacks.append(count)

    def _finish(self, batch_id: int, items: list[int], done: simpy.Event | None) -> None:
        self.recorder.batch_done(batch_id, self.env.now)
        if self.on_done is not None:
            self.on_done(items)
        if done is not None:
            done.succeed()
