"""The cost of one flush: one batch call to the database.

Models a go-batcher flush callback such as teranode's ``sendOutpointBatch``
(mechanisms.md section 2): one ``BatchOperate`` whose cost is a fixed round-trip plus a cost
per record, or per **unique key** when the callback deduplicates parents first. A batch of
exactly one record takes the Aerospike client's single-record path (``executeSingle``), which
has its own cost. ``max_in_flight`` is a permit pool in front of every call, like teranode's
``uaerospike`` connection throttle (ConnectionQueueSize permits) or a server that works on a
bounded number of calls at once; calls beyond it wait FIFO.

Service time of a batch of n records (or n unique keys)::

    S = (fixed_us + per_record_us * n) * noise        (n > 1, or no single-record cost set)
    S = single_record_us * noise                      (n == 1 and single_record_us set)

After the call returns, the client parses the batch on its own cores (``client_cores``, a FIFO
pool; ``None`` = unlimited): ``client_parse_ns_per_record`` per record, plus the per-record
statistics of :mod:`simbatch.clientstats` (``stats_*``), whose lock contention depends on how
many parses update the same counter map at that moment and whose lock is a server the parses
share (a parse waits for it while it is busy), plus ``app_ns_per_record``: the service's own
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

from collections import deque
from dataclasses import dataclass

import numpy as np
import simpy

from .clientstats import VARIANTS, StatsConfig, StatsLocks
from .cpu import CPUConfig, FifoPool
from .errors import check_bool, check_choice, check_int, check_number, check_optional_int, fail

NOISES = ("constant", "lognormal", "empirical")
COST_BASES = ("records", "unique_keys")


@dataclass(frozen=True, kw_only=True)
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
    timer_overshoot_us : float
        How late the host's timers fire; set through the scenario's ``[host]`` table.
    client_parse_ns_per_record : float
        Client CPU to parse one returned record (0 = no client stage).
    client_cores : int or None
        Client cores the parses share (FIFO); ``None`` = unlimited.
    client_line_ns : float
        Cache-line transfer cost between client cores (for the statistics lock).
    app_ns_per_record : float
        The service's own CPU per record on the client cores, outside the client.
    stats_variant, stats_read_ns, stats_write_ns, stats_lock_lines, stats_local_ns,
    stats_sample_every, stats_shards
        The per-record statistics (see :class:`simbatch.clientstats.StatsConfig`).
    stats_command_types : int
        Counter maps the batches spread over, one per (namespace, command type): batch ``i``
        updates map ``i % stats_command_types`` (2 for a workload of batch reads and writes).
        Each map's lock is a shared server (:class:`simbatch.clientstats.StatsLocks`).

    Examples
    --------
    >>> ServiceConfig(fixed_us=58, per_record_us=2.9).median_s(100)
    0.000348
    """

    fixed_us: float = 500.0
    per_record_us: float = 0.0
    cost_basis: str = "records"
    noise: str = "constant"
    sigma: float = 0.0
    ratios: tuple[float, ...] = ()
    single_record_us: float | None = None
    max_in_flight: int | None = None
    is_sleep: bool = False
    timer_overshoot_us: float = 0.0
    client_parse_ns_per_record: float = 0.0
    client_cores: int | None = None
    client_line_ns: float = 80.0
    app_ns_per_record: float = 0.0
    stats_variant: str = "disabled"
    stats_read_ns: float = 25.0
    stats_write_ns: float = 45.0
    stats_lock_lines: float = 2.0
    stats_local_ns: float = 2.0
    stats_sample_every: int = 100
    stats_shards: int = 16
    stats_command_types: int = 1

    def __post_init__(self) -> None:
        owner = "ServiceConfig"
        check_number(owner, "fixed_us", self.fixed_us)
        check_number(owner, "per_record_us", self.per_record_us)
        check_choice(owner, "cost_basis", self.cost_basis, COST_BASES)
        check_choice(owner, "noise", self.noise, NOISES)
        check_number(owner, "sigma", self.sigma)
        if self.single_record_us is not None:
            check_number(owner, "single_record_us", self.single_record_us)
        check_optional_int(owner, "max_in_flight", self.max_in_flight)
        check_bool(owner, "is_sleep", self.is_sleep)
        for name in ("client_parse_ns_per_record", "client_line_ns", "app_ns_per_record",
                     "stats_read_ns", "stats_write_ns", "stats_lock_lines", "stats_local_ns"):
            check_number(owner, name, getattr(self, name))
        check_optional_int(owner, "client_cores", self.client_cores)
        check_choice(owner, "stats_variant", self.stats_variant, VARIANTS)
        check_int(owner, "stats_sample_every", self.stats_sample_every, minimum=1)
        check_int(owner, "stats_shards", self.stats_shards, minimum=1)
        check_int(owner, "stats_command_types", self.stats_command_types, minimum=1)
        check_number(owner, "timer_overshoot_us", self.timer_overshoot_us)
        if self.noise == "empirical":
            if len(self.ratios) == 0:
                raise fail(owner, "ratios", "a non-empty list when noise = 'empirical'", [])
            for r in self.ratios:
                check_number(owner, "ratios", r, strict=True)

    def median_s(self, n: int) -> float:
        """Median service time of a call of ``n`` records (or unique keys), in seconds."""
        late = self.timer_overshoot_us if self.is_sleep else 0.0
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
                 rng: np.random.Generator, recorder, on_done=None) -> None:
        self.env = env
        self.config = config
        self.rng = rng
        self.recorder = recorder
        self.on_done = on_done
        self._noise: list[float] = []
        self._in_service = 0
        self._waiting: deque = deque()
        self._constant = config.noise == "constant"
        c = config
        self._client = (c.client_parse_ns_per_record > 0 or c.app_ns_per_record > 0
                        or c.stats_variant != "disabled")
        self._stats = StatsConfig(variant=c.stats_variant, read_ns=c.stats_read_ns,
                                  write_ns=c.stats_write_ns, lock_lines=c.stats_lock_lines,
                                  local_ns=c.stats_local_ns, sample_every=c.stats_sample_every,
                                  shards=c.stats_shards)
        cores = c.client_cores or 1024
        self._client_cpu = CPUConfig(cores=cores, line_near_ns=c.client_line_ns,
                                     domain_cores=cores)
        self._client_cores = FifoPool(env, c.client_cores) if c.client_cores else None
        self._locks = StatsLocks(env, self._stats, self._client_cpu, c.stats_command_types)
        self._parsing = 0

    def close_batch(self, items: list[int], trigger: str, opened_at: float) -> int:
        """Record that a batch closed now (the flush decision); returns its id."""
        return self.recorder.new_batch(items, trigger, opened_at, self.env.now)

    def submit(self, batch_id: int, items: list[int]) -> simpy.Event:
        """Start (or queue for a permit) the call of a closed batch; succeeds when done."""
        limit = self.config.max_in_flight
        if limit is None and not self._client:
            return self._start(batch_id, items, None)
        done = self.env.event()
        if limit is None or self._in_service < limit:
            self._start(batch_id, items, done)
        else:
            self._waiting.append((batch_id, items, done))
        return done

    def _start(self, batch_id: int, items: list[int], done: simpy.Event | None) -> simpy.Event:
        self._in_service += 1
        n = len(items)
        if self.config.cost_basis == "unique_keys":
            n = self.recorder.count_unique_keys(items)
        duration = self.config.median_s(n)
        if not self._constant:
            if not self._noise:
                self._noise = self.config.noise_samples(self.rng, self._CHUNK).tolist()
            duration *= self._noise.pop()
        self.recorder.batch_started(batch_id, self.env.now, n)
        timeout = self.env.timeout(duration)
        timeout.callbacks.append(lambda _ev: self._server_done(batch_id, items, done, n))
        return timeout

    def _server_done(self, batch_id: int, items: list[int], done, n: int) -> None:
        self._in_service -= 1
        self.recorder.batch_server_returned(batch_id, self.env.now)
        if self._waiting and self._in_service < (self.config.max_in_flight or 0):
            self._start(*self._waiting.popleft())
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
        parse_ns = n * self.config.client_parse_ns_per_record
        app_ns = n * self.config.app_ns_per_record
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
