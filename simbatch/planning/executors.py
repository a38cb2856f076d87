"""Where runs execute: in this process, on every local core, or on a Dask cluster.

A task is one replication of one case (:class:`Task`); it is a pure function of the case
and its seed, so every executor returns the same records in the same order, whichever ran
them. A worker sends back a :class:`~simbatch.core.results.RunRecord` (the run's metrics and
the small arrays its pooled metrics need), not the run.

* :class:`SerialExecutor`: this process (what a test or a notebook wants by default);
* :class:`ProcessExecutor`: ``workers`` local processes (``concurrent.futures``; forked from
  this process when it runs no other thread, so a worker starts in milliseconds with simbatch
  already imported, else from a forkserver that has imported it);
* :class:`DaskExecutor`: a ``dask.distributed`` cluster, at a scheduler's address or a
  ``LocalCluster`` (simbatch must be importable on the workers).

Progress is reported through a callback ``progress(done, total)``; library code prints
nothing (the command line draws a bar).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from typing import Any, Protocol

from ..core.errors import ConfigError
from ..core.results import RunRecord, record
from ..core.work import Bounds

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Task:
    """One replication: the engine's kind, the case, the run's seed and its index."""

    kind: str
    case: Any
    seed: int
    replication: int
    bounds: Bounds


def run_task(task: Task) -> RunRecord:
    """Run one task (in whichever process) and reduce it to its record."""
    import simbatch  # noqa: F401  (registers the engines in a fresh worker)
    from simbatch.core.engine import engine_for

    engine = engine_for(task.kind)
    run = engine.simulate(task.case, task.seed, bounds=task.bounds)
    run.replication = task.replication
    return record(engine, run)


class Executor(Protocol):
    def run(self, tasks: Sequence[Task], progress: Progress | None = None
            ) -> list[RunRecord]:
        """The tasks' records, in the tasks' order."""
        ...


class SerialExecutor:
    """Every task in this process, in order."""

    def run(self, tasks: Sequence[Task], progress: Progress | None = None
            ) -> list[RunRecord]:
        out = []
        for i, task in enumerate(tasks):
            out.append(run_task(task))
            if progress is not None:
                progress(i + 1, len(tasks))
        return out


def _chunk(tasks: list[Task]) -> list[RunRecord]:
    return [run_task(t) for t in tasks]


def _chunks(tasks: Sequence[Task], parts: int) -> Iterator[tuple[int, list[Task]]]:
    size = max(1, len(tasks) // parts)
    for start in range(0, len(tasks), size):
        yield start, list(tasks[start:start + size])


class ProcessExecutor:
    """Tasks spread over ``workers`` local processes (default: every core)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1

    def run(self, tasks: Sequence[Task], progress: Progress | None = None
            ) -> list[RunRecord]:
        if self.workers == 1 or len(tasks) <= 1:
            return SerialExecutor().run(tasks, progress)
        context: BaseContext
        if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
            context = multiprocessing.get_context("fork")    # no thread to deadlock a child
        else:
            server = multiprocessing.get_context("forkserver")
            server.set_forkserver_preload(["simbatch"])
            context = server
        results: list[RunRecord | None] = [None] * len(tasks)
        done = 0
        # several chunks per worker: the load evens out, and progress moves
        with ProcessPoolExecutor(self.workers, mp_context=context) as pool:
            futures = {pool.submit(_chunk, chunk): start
                       for start, chunk in _chunks(tasks, self.workers * 8)}
            for future in as_completed(futures):
                start = futures[future]
                chunk = future.result()
                results[start:start + len(chunk)] = chunk
                done += len(chunk)
                if progress is not None:
                    progress(done, len(tasks))
        return [r for r in results if r is not None]


class DaskExecutor:
    """Tasks on a ``dask.distributed`` cluster: at ``address`` (``tcp://host:port``), or on
    the ``client`` given (e.g. one of a ``LocalCluster``)."""

    def __init__(self, address: str | None = None, client: Any = None) -> None:
        self.address, self._client = address, client

    def run(self, tasks: Sequence[Task], progress: Progress | None = None
            ) -> list[RunRecord]:
        from distributed import Client
        from distributed import as_completed as dask_completed

        client = self._client
        own = client is None
        if own:
            try:
                client = Client(self.address, timeout="10s")
            except (OSError, TimeoutError, ValueError) as exc:   # ValueError: not an address
                raise ConfigError.parameter("simbatch", "scheduler", "the address of a "
                                            "reachable Dask scheduler (tcp://host:port)",
                                            f"{self.address} ({exc})") from None
        try:
            futures = client.map(_chunk, [chunk for _, chunk in _chunks(tasks, 64)],
                                 pure=False)
            starts = {f.key: start for f, (start, _) in zip(futures, _chunks(tasks, 64))}
            results: list[RunRecord | None] = [None] * len(tasks)
            done = 0
            for future in dask_completed(futures):
                chunk = future.result()
                start = starts[future.key]
                results[start:start + len(chunk)] = chunk
                done += len(chunk)
                if progress is not None:
                    progress(done, len(tasks))
            return [r for r in results if r is not None]
        finally:
            if own:
                client.close()


def make_executor(workers: int | None = None, scheduler: str | None = None) -> Executor:
    """The executor the command line asks for: a Dask cluster when ``scheduler`` is given,
    else ``workers`` local processes (default: every core; 1 runs in this process)."""
    if scheduler:
        return DaskExecutor(scheduler)
    if workers == 1:
        return SerialExecutor()
    return ProcessExecutor(workers)
