"""CPU cores, goroutine scheduling costs and cache-line transfers, in nanoseconds.

Modelled (the Go runtime's scheduler and the client and map code that run on it):

* ``cores`` cores; runnable goroutines queue FIFO for a core (Go's run queues, merged into
  one FIFO); a goroutine parked on a lock or a channel gives its core back and pays
  ``park_wake_ns`` when it is woken.
* Spawning a goroutine costs its parent ``spawn_ns`` (``newproc``, the errgroup's ``Go``);
  running it costs ``goroutine_ns`` of core time besides its work (stack, first schedule,
  exit, WaitGroup bookkeeping); each goroutine also passes once
  through the scheduler's global run-queue lock, held while ``runq_lock_lines`` cache lines
  move to the acquiring core (a serial section shared by all cores).
* A cache line last written by another core costs a transfer: ``line_near_ns`` from a core in
  the same cache domain (``domain_cores`` cores: a chip, a CCD), ``line_far_ns`` from beyond
  it. :meth:`CPUConfig.line_transfer_ns` gives the expected cost when ``sharers`` cores write
  the line at random: it grows with the sharers (the chance the line is elsewhere) and with the
  machine (the share of far cores). Queueing of cores on one line (a contended lock, a shared
  reader count) is modelled where the line is: a FIFO lock in the simulation, an M/D/1 queue
  in the aggregated probe phase.
* The run-queue lock is a Go **runtime-internal** mutex (``sched.lock``), and those congest:
  threads waiting for it keep touching its cache line, which slows every handoff, so more
  threads wait (golang/go#68399, rhysh: "a pretty bad form of congestion collapse").
  :meth:`CPUConfig.runtime_lock_factor` gives the handoff's slowdown with ``n`` threads at the
  lock, from the microbenchmark in golang/go#68578 (rhysh, a 20-thread machine): with the
  ``lock_futex`` mutex (Go <= 1.23) throughput falls with every contending thread, to 1/4 of
  the uncontended rate at 8 threads and a further 3x at 20 (``runtime_lock_per_thread`` =
  0.5: n / 2); the ``spinbit`` mutex of Go >= 1.24 (one spinning thread, the others asleep)
  "degrades quickly at first" and then "holds steady at 1/4 of the zero-contention speed"
  (``runtime_lock_max_factor`` = 4; 0 means no cap, the futex mutex). These two numbers come
  from that published measurement, not from any table simbatch reproduces.

Simplifications: one run queue (no per-P queues or work stealing); no NUMA memory placement;
spinning before parking is not modelled (a blocked goroutine parks at once). The cores
themselves are a :class:`simbatch.core.pool.FifoPool`.
"""

from __future__ import annotations

from .config import Cores, NonNeg, PosInt, config


@config
class CPUConfig:
    """A machine's cores and the costs of its primitives (nanoseconds).

    Examples
    --------
    >>> CPUConfig(cores=1).line_transfer_ns(1)
    0.0
    >>> round(CPUConfig(cores=16, line_near_ns=80).line_transfer_ns(16), 1)
    75.0
    """

    cores: Cores = 16
    line_near_ns: NonNeg = 80.0
    line_far_ns: NonNeg = 200.0
    domain_cores: PosInt = 16
    spawn_ns: NonNeg = 300.0
    goroutine_ns: NonNeg = 1000.0
    runq_lock_lines: NonNeg = 1.0
    park_wake_ns: NonNeg = 1500.0
    chan_op_ns: NonNeg = 100.0
    runtime_lock_per_thread: NonNeg = 0.5
    runtime_lock_max_factor: NonNeg = 4.0

    def runtime_lock_factor(self, threads: int) -> float:
        """Slowdown of a runtime-internal mutex's handoff with ``threads`` at it (the holder
        included); 1 when it is uncontended (see the module docstring).

        >>> cpu = CPUConfig()
        >>> [cpu.runtime_lock_factor(n) for n in (1, 2, 8, 20)]
        [1.0, 1.0, 4.0, 4.0]
        >>> CPUConfig(runtime_lock_max_factor=0).runtime_lock_factor(20)
        10.0
        """
        factor = max(1.0, self.runtime_lock_per_thread * threads)
        if self.runtime_lock_max_factor > 0:
            factor = min(factor, self.runtime_lock_max_factor)
        return factor

    def line_transfer_ns(self, sharers: int) -> float:
        """Expected cost of touching a line that ``sharers`` cores write at random."""
        c = min(sharers, self.cores)
        if c <= 1:
            return 0.0
        far = max(0, self.cores - min(self.domain_cores, self.cores)) / (self.cores - 1)
        per_transfer = self.line_near_ns * (1 - far) + self.line_far_ns * far
        return (1 - 1 / c) * per_transfer
