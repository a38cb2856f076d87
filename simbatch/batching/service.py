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

``noise`` is a multiplicative factor with median 1: constant 1, log-normal with shape
``sigma``, or resampled from measured ratios latency / cell median (``empirical``), so a
fitted model keeps the measured shape of the tail.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
import simpy

from ..core.config import Bool, Field, Float, NonNeg, PosInt, Rule, at, config
from ..core.cpu import CPUConfig
from ..core.pool import FifoPool
from .clientstats import StatsConfig, StatsLocks

NOISES = ("constant", "lognormal", "empirical")
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
    cores: PosInt | None = None
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
    noise : {"constant", "lognormal", "empirical"}
        Multiplicative variation around the median.
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
    noise: Literal["constant", "lognormal", "empirical"] = "constant"
    sigma: Annotated[Float, at.Ge(0), at.Le(10)] = 0.0
    ratios: tuple[Annotated[Float, at.Gt(0)], ...] = ()
    single_record_us: NonNeg | None = None
    max_in_flight: PosInt | None = None
    is_sleep: Bool = False
    client: ClientConfig = Field(default_factory=ClientConfig)
    stats: StatsConfig = Field(default_factory=StatsConfig)
    RULES = (Rule("ratios", "a non-empty list when noise = 'empirical'",
                  lambda c: c.noise != "empirical" or len(c.ratios) > 0),)

    def median_s(self, n: int, late_us: float = 0.0) -> float:
        """Median service time of a call of ``n`` records (or unique keys), in seconds;
        ``late_us``: how late the host's timers fire, added when the call is a sleep."""
        late = late_us if self.is_sleep else 0.0
        if n == 1 and self.single_record_us is not None:
            return (self.single_record_us + late) / 1e6
        return round((self.fixed_us + self.per_record_us * n + late) / 1e6, 12)

    def noise_samples(self, rng: np.random.Generator, size: int) -> np.ndarray:
        if self.noise == "lognormal":
            return np.exp(self.sigma * rng.standard_normal(size))
        if self.noise == "empirical":
            data = np.asarray(self.ratios, dtype=float)
            return data[rng.integers(0, data.size, size)]
        return np.ones(size)

    @property
    def has_client_stage(self) -> bool:
        c = self.client
        return (c.parse_ns_per_record > 0 or c.app_ns_per_record > 0
                or self.stats.variant != "disabled")


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

    _CHUNK = 4096

    def __init__(self, env: simpy.Environment, config: ServiceConfig,
                 rng: np.random.Generator, recorder, on_done=None,
                 late_us: float = 0.0) -> None:
        self.env = env
        self.config = config
        self.rng = rng
        self.recorder = recorder
        self.on_done = on_done
        self._late_us = late_us
        self._noise: list[float] = []
        self._permits = FifoPool(env, config.max_in_flight) if config.max_in_flight else None
        self._constant = config.noise == "constant"
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
        if self._permits is None and not self._client:
            return self._start(batch_id, items, None)
        done = self.env.event()
        if self._permits is None:
            self._start(batch_id, items, done)
        else:
            self._permits.acquire(lambda: self._start(batch_id, items, done))
        return done

    def _start(self, batch_id: int, items: list[int], done: simpy.Event | None) -> simpy.Event:
        n = len(items)
        if self.config.cost_basis == "unique_keys":
            n = self.recorder.count_unique_keys(items)
        duration = self.config.median_s(n, self._late_us)
        if not self._constant:
            if not self._noise:
                self._noise = self.config.noise_samples(self.rng, self._CHUNK).tolist()
            duration *= self._noise.pop()
        self.recorder.batch_started(batch_id, self.env.now, n)
        timeout = self.env.timeout(duration)
        timeout.callbacks.append(lambda _ev: self._server_done(batch_id, items, done, n))
        return timeout

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
