"""What the broker JVM, and the machine under it, did during a harness run: its CPU time
from ``/proc`` (the whole process, :func:`process_cpu_s`; by thread group -- the request
path, the JIT compiler, the collector -- with the request path's context switches and
run-queue wait, :func:`thread_usage`; a follower's replica fetchers, :func:`fetcher_cpu_s`;
the whole machine's busy CPU, :func:`machine_cpu_s`) and its heap as ``jstat -gc`` samples
it (:class:`GcSampler`: what it allocated, its eden, each young collection's pause and what
it left in the survivor spaces, its marking cycles' stops). ``validate/kafka_harness.py``
takes them over each run's timed span and writes them into the run's columns (its
docstring lists them); NaN where a figure cannot be read (no pid, no JDK, another OS).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import threading
import time
from typing import NamedTuple

import numpy as np


def process_cpu_s(pid: int | None) -> float:
    """CPU time (user + system, seconds) of process ``pid`` and all its threads so far, from
    ``/proc/PID/stat`` (fields 14 and 15, in clock ticks); NaN if it cannot be read."""
    if pid is None:
        return float("nan")
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


class GcSampler:
    """The broker JVM's heap as ``jstat -gc PID 100`` (the JDK's tool) prints it:
    :meth:`stop` returns its :class:`GcFigures` over the timed span, which starts at
    :meth:`start_span`.

    jstat is started before the span, during the warm-up: it is a JVM, and its start-up
    takes ~0.23 s of CPU in its first 150 ms (1.5 of this machine's 2 vCPUs; measured
    2026-11-27 from ``/proc/PID/stat``, then ~0.06 cores while it samples). Started at the
    span's start, as it was until then, it took the broker's CPU while the feed began: in 8
    runs at 1000 and 2000 msg/s over 32 partitions, 5 had a burst of 11-77 messages at
    30-103 ms in the span's first 300 ms, outside any of the JVM's safepoints (``-Xlog``),
    and setting those 300 ms aside moved the run's p99 by up to 14 ms.

    Allocation: eden's growth between samples, and across a young collection what was left
    to fill before it plus what is used after. A pause is a sample's growth of the young
    collection time (``YGCT``), split evenly when a sample holds more than one collection;
    a marking cycle's stop is a sample's growth of the concurrent collections' pause time
    (``CGCT``: its Remark and its Cleanup, a few ms apart, fall in one sample).
    """

    def __init__(self, pid: int | None) -> None:
        self.proc: subprocess.Popen | None = None
        self._lines: list[tuple[float, str]] = []       # (perf_counter at reading, line)
        self._span_start = -math.inf
        self._reader: threading.Thread | None = None
        jstat = shutil.which("jstat")
        if pid is not None and jstat is not None:
            self.proc = subprocess.Popen([jstat, "-gc", str(pid), "100"],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         text=True)
            self._reader = threading.Thread(target=self._read, daemon=True)
            self._reader.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.append((time.perf_counter(), line))

    @property
    def lines(self) -> list[tuple[float, str]]:
        """jstat's lines so far, each with the ``time.perf_counter()`` it was read at."""
        return self._lines

    def start_span(self) -> None:
        """The timed span starts now: samples before it are the baseline only."""
        self._span_start = time.perf_counter()

    def stop(self) -> GcFigures:
        if self.proc is None:
            return GcFigures(float("nan"), float("nan"), [], [], [])
        time.sleep(0.15)                 # one more sample after the span
        self.kill()
        return gc_figures(span_text(self._lines, self._span_start))

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self._reader is not None:
            self._reader.join(timeout=5)


def span_text(lines: list[tuple[float, str]], start: float) -> str:
    """jstat's output over a span from ``start``: its header line, the last sample read
    before ``start`` (the baseline) and every sample after; ``lines`` are (time read,
    line)."""
    if not lines:
        return ""
    first = 1
    for i, (t, _) in enumerate(lines[1:], 1):
        if t < start:
            first = i
    return "".join([lines[0][1]] + [ln for _, ln in lines[first:]])


class GcFigures(NamedTuple):
    """The broker JVM's heap over a span (:func:`gc_figures`)."""

    alloc_mb: float
    """What it allocated."""
    eden_mb: float
    """Eden's median size."""
    pauses: list[float]
    """Each young collection's pause (s)."""
    remarks: list[float]
    """Each marking cycle's stops, its Remark and Cleanup together (s)."""
    survivors_mb: list[float]
    """Beside each pause, the survivor spaces' use after it (``S0U + S1U``, MB): the live
    young objects the collection copied, which its length follows (G1 copies every live
    object out of the young regions it collects; NaN where jstat's output lacks them)."""


def jstat_samples(lines: list[tuple[float, str]]) -> list[tuple[float, dict[str, float]]]:
    """jstat's samples, each (time read, its columns by name), from its lines (time read,
    line; the header first); a line cut short as jstat is stopped is left out."""
    head = lines[0][1].split() if lines else []
    samples = []
    for t, ln in lines[1:]:
        try:
            samples.append((t, dict(zip(head, map(float, ln.split()), strict=True))))
        except ValueError:
            continue
    return samples


def gc_figures(text: str) -> GcFigures:
    """The broker's :class:`GcFigures` from ``jstat -gc`` output.

    A collection counts itself when it starts and adds its time when it ends (HotSpot's
    ``TraceCollectorStats`` is a ``PerfTraceTimedEvent``: its constructor increments the
    invocation counter, ``PerfTraceTime``'s destructor adds the elapsed ticks;
    ``src/hotspot/share/gc/shared/collectorCounters.hpp``, ``runtime/perfData.hpp``). So a
    sample taken during a pause shows its count but not its time: that collection's time is
    in the next sample's growth, which is split over it and the next sample's own
    collections; time that comes with no collection owed it is the rest of the last one (two
    collections in one sample, the second still under way: their total and count are right,
    their split is not). (Read as a pause of 0, as until 2026-11-27, it gave the model
    pauses of 0.5 ms: 2 of the 16 in ``models/kafka-loopback.toml``. A collection under 0.5
    ms, which jstat's whole milliseconds read as 0, would merge into the next; ``-Xlog:gc``
    shows none under 3 ms on the local broker.)"""
    nothing = GcFigures(float("nan"), float("nan"), [], [], [])
    rows = [row for _, row in jstat_samples([(0.0, ln) for ln in text.splitlines()
                                             if ln.strip()])]
    if len(rows) < 2:
        return nothing
    kb, pauses, remarks, survivors = 0.0, [], [], []
    pending = 0                    # collections counted whose time is not in yet
    for i, (a, b) in enumerate(zip(rows, rows[1:])):
        left = (b["S0U"] + b["S1U"]) / 1024 if "S0U" in b and "S1U" in b else float("nan")
        n = int(b["YGC"] - a["YGC"])
        if n == 0:
            kb += max(0.0, b["EU"] - a["EU"])
        else:
            kb += (a["EC"] - a["EU"]) + b["EU"] + (n - 1) * b["EC"]
        took = b["YGCT"] - a["YGCT"]
        if took > 0:
            if pending + n:
                pauses += [took / (pending + n)] * (pending + n)
                survivors += [left] * (pending + n)
            elif i == 0:                 # under way at the span's first sample
                pauses.append(took)
                survivors.append(left)
            elif pauses:                 # the rest of one counted (and timed) already
                pauses[-1] += took
                survivors[-1] = left
            pending = 0
        else:
            pending += n
        if b.get("CGCT", 0.0) > a.get("CGCT", 0.0):       # a cycle's Remark and Cleanup
            remarks.append(b["CGCT"] - a["CGCT"])
    return GcFigures(kb / 1024, float(np.median([r["EC"] for r in rows])) / 1024, pauses,
                     remarks, survivors)


THREAD_GROUPS = (("data", re.compile(r"^data-plane-kafk")),
                 ("jit", re.compile(r"^C[12] CompilerThre")),
                 ("gc", re.compile(r"^(GC Thread|G1 )")))
"""The broker JVM's threads by the name the kernel keeps (``/proc/PID/task/TID/comm``, its
first 15 characters): the request path (Kafka 3.9's ``data-plane-kafka-network-thread-*``
processors and ``data-plane-kafka-request-handler-*``, ``SocketServer.scala``,
``KafkaRequestHandler.scala``), HotSpot's C1/C2 JIT compiler threads and G1's collector
threads. Over the timed spans of the dense ladder (2026-11-26, medians of three runs,
``python -m validate.calibrate_kafka --configs <the -dense names>``), the request path was
nearly all of the JVM's CPU (JIT and GC at most 0.02-0.03 cores each), and its CPU per
produce request (the consumer's fetches included) fell with the rate: 703, 611, 530, 368 us
at 250, 500, 1000, 2000 msg/s over 32 partitions, 549 to 410 over 8, 900 on the sparse
one-partition fit runs (40 requests/s). Over whole runs (connecting the clients and the
pauses included) the JIT took 0.02-0.93 s, erratically. A third session counted the request
path's context switches too: 9.0, 8.7, 8.2, 7.3 per produce request at 250 to 2000 msg/s
over 32 partitions, and 85, 70, 55, 51 us of its CPU per switch; over 8 partitions 9.2 to
8.5 switches and 67 to 55 us. So fewer wake-ups per request explain a part of the fall, and
each wake-up costing less CPU when the broker is busy (warmer caches) the rest."""


def _tasks(pid: int | None) -> list[tuple[str, str, list[str]]] | None:
    """Process ``pid``'s threads now: (tid, name, the fields of ``/proc/PID/task/TID/stat``
    after the name), those that exited meanwhile left out; None if it cannot be read."""
    try:
        tids = os.listdir(f"/proc/{pid}/task") if pid is not None else None
    except OSError:
        tids = None
    if tids is None:
        return None
    out = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as fh:
                comm = fh.read().strip()
            with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue                    # the thread exited meanwhile
        out.append((tid, comm, fields))
    return out


FETCHER = re.compile(r"^ReplicaFetcherT")
"""A follower broker's fetcher threads (Kafka 3.9's ``ReplicaFetcherThread-<n>-<leader>``,
``ReplicaFetcherThread.scala``), by the name the kernel keeps."""


def fetcher_cpu_s(pid: int | None) -> float:
    """What process ``pid``'s replica fetcher threads (:data:`FETCHER`) used so far (user +
    system seconds); NaN if it cannot be read."""
    tasks = _tasks(pid)
    if tasks is None:
        return float("nan")
    return sum(_thread_cpu_s(pid, tid, f) for tid, comm, f in tasks if FETCHER.match(comm))


def _thread_cpu_s(pid: int | None, tid: str, fields: list[str]) -> float:
    """Thread ``tid``'s CPU time so far (seconds): the scheduler's own count, to the
    nanosecond (``se.sum_exec_runtime`` of ``/proc/PID/task/TID/sched``, in milliseconds),
    where the kernel shows it; else user + system from its ``stat`` (``fields``), which the
    kernel scales to that same count but gives in clock ticks. A tick is 10 ms: over a 3 s
    span, 0.0033 cores, about what 75 requests/s add to the request path of a warm broker on
    the machine of 2026-12-06 (``validate/kafka_record_cost.py``), so in ticks a design of
    short rounds cannot tell its request sizes apart."""
    try:
        with open(f"/proc/{pid}/task/{tid}/sched") as fh:
            for line in fh:
                if line.startswith("se.sum_exec_runtime"):
                    return float(line.split(":", 1)[1]) * 1e-3
    except (OSError, ValueError):
        pass
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_usage(pid: int | None) -> dict[str, float]:
    """What process ``pid``'s threads of each :data:`THREAD_GROUPS` group used so far:
    ``<group>_cpu_s`` (CPU seconds, :func:`_thread_cpu_s`) and, for the
    request path, ``data_switches`` (its context switches, voluntary and not,
    ``/proc/PID/task/TID/status``: each is a thread going to sleep or being put off a CPU),
    ``data_preempted`` (the involuntary ones alone: put off a CPU while it could run) and
    ``data_runq_s`` (its time runnable but waiting for a CPU, the second field of
    ``/proc/PID/task/TID/schedstat``); a thread that exited is not counted; NaN for each
    where it cannot be read."""
    out = {f"{name}_cpu_s": 0.0 for name, _ in THREAD_GROUPS} | {
        "data_switches": 0.0, "data_preempted": 0.0, "data_runq_s": 0.0}
    tasks = _tasks(pid)
    if tasks is None:
        return {key: float("nan") for key in out}
    for tid, comm, fields in tasks:
        for name, pattern in THREAD_GROUPS:
            if pattern.match(comm):
                out[f"{name}_cpu_s"] += _thread_cpu_s(pid, tid, fields)
                if name == "data":
                    switches = thread_switches(pid, tid)
                    if switches is None:
                        break                   # the thread exited meanwhile
                    out["data_switches"] += sum(switches.values())
                    out["data_preempted"] += switches.get("nonvoluntary_ctxt_switches", 0)
                    out["data_runq_s"] += _runq_s(pid, tid)
                break
    return out


def thread_switches(pid: int | None, tid: str) -> dict[str, int] | None:
    """Thread ``tid``'s context switches so far (``/proc/PID/task/TID/status``):
    ``voluntary_ctxt_switches`` (it went to sleep) and ``nonvoluntary_ctxt_switches`` (put off
    a CPU while it could run); None if the thread exited."""
    try:
        with open(f"/proc/{pid}/task/{tid}/status") as fh:
            status = fh.read()
    except OSError:
        return None
    return {line.split(":")[0]: int(line.split()[1]) for line in status.splitlines()
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"))}


def _runq_s(pid: int | None, tid: str) -> float:
    """Thread ``tid``'s time runnable but off a CPU so far (schedstat), NaN if unreadable."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
            return int(fh.read().split()[1]) * 1e-9
    except (OSError, IndexError, ValueError):
        return float("nan")


def machine_cpu_s() -> float:
    """Busy CPU time of the whole machine so far, all CPUs (/proc/stat's first line: user,
    nice, system, irq, softirq), seconds; NaN where it cannot be read."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
        return sum(int(fields[i]) for i in (1, 2, 3, 6, 7)) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def _cpu_s(pids: tuple[int, ...]) -> float:
    """:func:`process_cpu_s` summed over ``pids``; NaN for none."""
    return sum(process_cpu_s(pid) for pid in pids) if pids else float("nan")


def _threads(pids: tuple[int, ...]) -> dict[str, float]:
    """:func:`thread_usage` summed over ``pids``."""
    usage = [thread_usage(pid) for pid in pids or (None,)]
    return {key: sum(u[key] for u in usage) for key in usage[0]}
