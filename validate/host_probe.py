"""The host's speed through a harness run, measured beside it (issue 14).

Why: on the machine of 2026-12-06 the same work took 3-4 times longer in some runs than in
others (librdkafka's internal latency p50 17-66 us from run to run, the runs' acks with it;
``validate/kafka_replication.py``), with no CPU stolen, so a run's latency can only be
predicted at its own speed. librdkafka's internal latency shows it only at linger 0 and the
Go and Java harnesses write none; this probe gives every run the same three figures.

How: a child process (``python -m validate.host_probe``, so that it shares no interpreter
lock with the in-process harness) wakes every :data:`PERIOD_S` and times three things: a
fixed piece of Python work (:func:`work`), how late its wait woke, and a one-byte round trip
to a process of its own over a socket pair, which wakes that process and then itself (what a
request and its reply between a client's and a broker's threads are made of); on its
standard input's end it prints the medians since its last ``start`` line as one JSON line.
At 50 ms it adds ~0.1 % of one CPU. :class:`HostProbe` runs it: started before a run's
warm-up (a Python start-up takes ~50 ms of CPU), ``start()`` as the timed span begins,
``stop()`` at its end.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path
from statistics import median

PERIOD_S = 0.05
HERE = Path(__file__).resolve().parent


def cpu_name(cpuinfo: str | None = None) -> str:
    """This host's CPU as the models files key it: the first processor's ``model name`` of
    ``/proc/cpuinfo`` (or of the text ``cpuinfo``), with its ``cpu family`` and ``model``
    (``AMD EPYC (family 25, model 1)``; a VM's model name alone does not tell its CPU
    generations apart), as the go-batcher harness's ``cpuModelFrom`` writes it; "unknown"
    where there is no such file or line."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return "unknown"
    fields: dict[str, str] = {}
    for line in cpuinfo.split("\n"):
        if not line.strip():
            if fields:
                break                              # the first processor's block only
            continue
        key, sep, value = line.partition(":")
        if sep and not fields.get(key.strip()):
            fields[key.strip()] = value.strip()
    name = fields.get("model name")
    if not name:
        return "unknown"
    if fields.get("cpu family") and fields.get("model"):
        name += f" (family {fields['cpu family']}, model {fields['model']})"
    return name


def work() -> int:
    """The fixed piece of work: ~20-60 us of Python on the machines of 2026-12-06."""
    return sum(i * i for i in range(1000))


def probe(period_s: float = PERIOD_S) -> dict[str, float]:
    """The child's loop (module docstring); returns what it prints."""
    works: list[float] = []
    wakes: list[float] = []
    trips: list[float] = []
    near, far = socket.socketpair()
    echo = os.fork()
    if echo == 0:                     # the echo process: answers each byte until EOF
        near.close()
        while far.recv(1):
            far.send(b"y")
        os._exit(0)
    far.close()
    try:
        while True:
            t0 = time.perf_counter()
            ready, _, _ = select.select([sys.stdin], [], [], period_s)
            if ready:
                line = sys.stdin.readline()
                if not line:
                    break
                for kept in (works, wakes, trips):
                    kept.clear()
                continue
            wakes.append(time.perf_counter() - t0 - period_s)
            w0 = time.perf_counter()
            work()
            w1 = time.perf_counter()
            near.send(b"x")
            near.recv(1)
            works.append(w1 - w0)
            trips.append(time.perf_counter() - w1)
    finally:
        near.close()
        os.waitpid(echo, 0)
    nan = float("nan")
    return {"work_s": median(works) if works else nan,
            "wake_s": median(wakes) if wakes else nan,
            "trip_s": median(trips) if trips else nan, "samples": len(works)}


class HostProbe:
    """The probe as a child process (module docstring): ``stop()`` gives
    ``(work_s, wake_s, trip_s)``, the medians since ``start()`` (NaN if it cannot run)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "validate.host_probe"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True,
                                         cwd=HERE.parent)
        except OSError:
            self.proc = None

    def start(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            try:
                self.proc.stdin.write("start\n")
                self.proc.stdin.flush()
            except OSError:
                self.kill()

    def stop(self) -> tuple[float, float, float]:
        nan = (float("nan"),) * 3
        if self.proc is None:
            return nan
        try:
            out, _ = self.proc.communicate(timeout=5)
            figures = json.loads(out.strip().splitlines()[-1])
            return float(figures["work_s"]), float(figures["wake_s"]), float(figures["trip_s"])
        except (OSError, ValueError, IndexError, KeyError, subprocess.TimeoutExpired):
            self.kill()
            return nan

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


if __name__ == "__main__":
    print(json.dumps(probe()), flush=True)
