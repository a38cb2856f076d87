"""The host a go-batcher harness run saw, as the batcher engine's ``[host]``, and the Go
costs' scale to its CPU:

* the other processes' stalls of the client's threads and the idle processors' wake-ups,
  from the run's own probes (:func:`host_from_probes`), and for each cell at GOMAXPROCS 2
  how long the kernel ran the client's two threads on one CPU, from its blocks' measured
  run-queue wait (:func:`packed_host`);
* how much the same CPU work varies from run to run (``[host] cpu_noise_ns``), fitted on
  the run's GOMAXPROCS 1 drain blocks of one flush per transaction, whose flush starts are
  one cycle apart (:func:`fit_cpu_noise`);
* the host's CPU against the machine the costs were measured on: one factor, fitted on the
  run's GOMAXPROCS 1 drain cycle cells (:func:`fit_cpu_scale`).

Why each: ``validate/calibrate_gobatcher.py``'s docstring (items 1 and 3); what was
measured: ``validate/gobatcher/data/README.md``.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simbatch.batching.engine import simulate
from simbatch.batching.gocpu import COSTS, GoConfig
from simbatch.batching.hosttiming import HostConfig
from simbatch.core.streams import replication_seed
from validate.gobatcher_runs import (
    SPREAD_MIN_TX,
    after_flush_quantiles,
    case_for,
    is_cycle_cell,
    is_spin_cell,
    spread,
)

NOISE_GRID_NS = (0.0, 25.0, 50.0, 75.0, 100.0, 150.0, 200.0, 300.0, 400.0)
"""``cpu_noise_ns`` values :func:`fit_cpu_noise` simulates the cycle cells at."""


def model_spreads(cells: pd.DataFrame, host: HostConfig, go: GoConfig, reps: int,
                  seed: int = 1) -> tuple[float, float, float, float]:
    """The model's medians of the same figures as :func:`spreads_from` measures, over
    ``reps`` simulated blocks of each cycle cell and spin cell (NaN where none): the cycle
    spread, the flush spread, and the median and 90th percentile of the gaps after a flush."""
    cycle, flush, after50, after90 = [], [], [], []
    for cell in cells.itertuples():
        if is_cycle_cell(cell):
            cycle += [spread(gaps) for gaps in model_cycle_gaps(cell, host, go, reps, seed)]
        elif is_spin_cell(cell):
            for r in range(reps):
                run = simulate(case_for(cell, host, go), replication_seed(seed, r))
                start = np.frombuffer(run.recorder.batch_start) * 1e6
                end = np.frombuffer(run.recorder.batch_done_at) * 1e6
                if len(start) >= SPREAD_MIN_TX:
                    flush.append(spread(end - start))
                if bool(cell.drain) and len(start) == int(cell.n_tx) >= SPREAD_MIN_TX:
                    after = after_flush_quantiles(start, end)
                    if after is not None:
                        after50.append(after[0])
                        after90.append(after[1])

    def median(v: list[float]) -> float:
        return float(np.median(v)) if v else math.nan

    return median(cycle), median(flush), median(after50), median(after90)


def model_cycle_gaps(cell: Any, host: HostConfig, go: GoConfig, reps: int,
                     seed: int = 1) -> list[np.ndarray]:
    """The gaps (us) between flush starts in each of ``reps`` simulated blocks of the cycle
    cell ``cell`` that made one flush per transaction (:func:`is_cycle_cell`)."""
    out = []
    for r in range(reps):
        run = simulate(case_for(cell, host, go), replication_seed(seed, r))
        start = np.frombuffer(run.recorder.batch_start) * 1e6
        if len(start) == int(cell.n_tx):
            out.append(np.diff(np.sort(start)))
    return out


def scaled(go: GoConfig, factor: float) -> GoConfig:
    """``go`` with every CPU cost (:data:`~simbatch.batching.gocpu.COSTS`) times ``factor``."""
    return dataclasses.replace(go, **{k: getattr(go, k) * factor for k in COSTS})


@dataclasses.dataclass
class CpuScale:
    """The host's CPU against the machine the costs were measured on (:func:`fit_cpu_scale`)."""
    factor: float               # 1.0 where nothing could be fitted
    rows: pd.DataFrame          # per cycle cell: measured and model gap (us), their ratio

    @property
    def cells(self) -> set[str]:
        """The cells it was fitted on (not judged)."""
        return set(self.rows.cell)

    def summary(self) -> str:
        if self.rows.empty:
            return ("host CPU scale: no GOMAXPROCS 1 drain block of one flush per transaction "
                    "(is_cycle_cell) to fit it on; the costs as measured (x1)")
        rows = self.rows
        return (f"host CPU scale: x{self.factor:.2f}, fitted on {len(rows)} cycle cells "
                f"(one transaction's cycle at GOMAXPROCS 1: measured "
                f"{rows.meas_us.median():.2f} us, the costs' model {rows.model_us.median():.2f}; "
                f"per cell "
                f"x{rows.ratio.min():.2f}-{rows.ratio.max():.2f}); those cells are "
                f"not judged")


def fit_cpu_scale(cells: pd.DataFrame, blocks: pd.DataFrame, host: HostConfig, go: GoConfig,
                  reps: int = 3, seed: int = 1) -> CpuScale:
    """How much slower (> 1) or faster this run's host runs the client's CPU work than the
    machine ``go``'s costs were measured on: the median over the run's :func:`is_cycle_cell`
    cells of the measured cycle (the median gap between flush starts in its blocks of one
    flush per transaction: a transaction's Puts, the worker's drain and the flush's
    hand-off, all CPU, on one processor) over the model's (``reps`` simulated blocks).

    Why: the same harness on two VMs of the same kind (2 vCPUs, AMD EPYC) but another CPU
    family read that cycle at 3.1-4.8 us per cell (family 26, 2026-12-06) and 4.5-6.9 us
    (family 25, 2026-12-07); the costs' model reads 3.5-3.8
    (``validate/gobatcher/data/README.md``, "The host's CPU against the costs' machine").
    One factor on every cost, fitted on a stated subset of the judged run, is the host's
    speed; nothing else moves."""
    measured = blocks.dropna(subset=["cycle_gap_us"]) if "cycle_gap_us" in blocks else \
        blocks.iloc[0:0]
    meas = measured.groupby("cell").cycle_gap_us.median()
    rows = []
    for cell in cells[cells.cell.isin(meas.index)].itertuples():
        gaps = [float(np.median(g)) for g in model_cycle_gaps(cell, host, go, reps, seed)]
        if gaps:
            model = float(np.median(gaps))
            rows.append({"cell": cell.cell, "meas_us": float(meas[cell.cell]),
                         "model_us": model, "ratio": float(meas[cell.cell]) / model})
    table = pd.DataFrame(rows, columns=["cell", "meas_us", "model_us", "ratio"])
    return CpuScale(float(table.ratio.median()) if len(table) else 1.0, table)


def fit_cpu_noise(cells: pd.DataFrame, blocks: pd.DataFrame, host: HostConfig, go: GoConfig,
                  reps: int = 10) -> tuple[float, float, int]:
    """``[host] cpu_noise_ns`` from a run: the value at which the model's cycle spread on
    the run's :func:`is_cycle_cell` cells equals the measured one (the median over its
    blocks of one flush per transaction), interpolated on ``NOISE_GRID_NS``. Returns the
    value, the measured spread and the number of blocks; raises ValueError if the run has
    no such block."""
    measured = blocks.cycle_spread.dropna() if "cycle_spread" in blocks else pd.Series()
    if measured.empty:
        raise ValueError("no GOMAXPROCS 1 drain-mode block of one flush per transaction "
                         "(is_cycle_cell) to fit the CPU noise on")
    target = float(measured.median())
    chosen = cells[cells.apply(is_cycle_cell, axis=1)]
    model = [model_spreads(chosen, dataclasses.replace(host, cpu_noise_ns=ns), go, reps)[0]
             for ns in NOISE_GRID_NS]
    rising = np.maximum.accumulate(np.nan_to_num(model))
    return float(np.interp(target, rising, NOISE_GRID_NS)), target, len(measured)


# ------------------------------------------------------------------ the host
def _quantiles(samples: Iterable[float], grid: np.ndarray, digits: int = 1) -> list[float]:
    s = np.sort(np.asarray(list(samples), float))
    idx = np.floor((len(s) - 1) * grid).astype(int)
    return [round(float(v), digits) for v in s[idx]]


def _floats(text: str) -> list[float]:
    return [float(x) for x in str(text).split()] if str(text).strip() else []


def host_from_probes(host_file: Path, probes: pd.DataFrame | None,
                     blocks: pd.DataFrame | None = None) -> tuple[HostConfig, dict]:
    """The host a run saw: the timers of ``host_file`` (its ``[host]`` table) and, from the
    run's probes, the stalls of the client's threads and idle processors' wake-ups (a run
    probed before 2026-11-27 keeps the host file's wake-ups: see below); from
    its blocks (``speed_ratio``, :func:`load_run`), how much the two processors' speeds
    differ. Returns the config and a summary for the report."""
    table = dict(tomllib.loads(host_file.read_text())["host"])
    summary: dict[str, Any] = {"host_file": str(host_file)}
    ratios = (blocks.speed_ratio.dropna() if blocks is not None and "speed_ratio" in blocks
              else pd.Series(dtype=float))
    if len(ratios) >= 10:
        table["speed_ratio"] = tuple(_quantiles(ratios, np.asarray(table["quantiles"], float),
                                                digits=4))
        summary["speed_ratio_p50"] = round(float(ratios.median()), 4)
        summary["speed_ratio_blocks"] = len(ratios)
    if probes is None or probes.empty:
        return HostConfig(**table), summary
    grid = np.asarray(table["quantiles"], float)
    # stall_per_s is by running threads (its i-th entry: i + 1 threads); a thread count the
    # run did not probe (a run of GOMAXPROCS 2 cells only) keeps the host file's
    rates = list(table.get("stall_per_s", ()))
    stall_us = dict(table.get("stall_us", {}))
    for procs in sorted(int(p) for p in probes.gomaxprocs.unique()):
        rows = probes[probes.gomaxprocs == procs]
        stalls = [x for text in rows.stall_us for x in _floats(text)]
        busy = float(rows.busy_s.sum())
        running = busy - sum(stalls) / 1e6     # the probe's time with its thread running
        rates += [0.0] * (procs - len(rates))
        rates[procs - 1] = round(len(stalls) / running, 2) if running > 0 else 0.0
        if stalls:
            stall_us[str(procs)] = _quantiles(stalls, grid)
        summary[f"stalls_{procs}"] = (f"{rates[procs - 1]:.0f} per s of running, "
                                      f"{sum(stalls) / 1e6 / busy:.1%} of the time lost")
    table["stall_per_s"] = tuple(rates)
    table["stall_us"] = stall_us
    # wake-ups: a steal from the busy processor's run queue (the harness's probes since
    # 2026-11-27). Earlier runs' probes timed a goroutine left alone in runnext, so the
    # back-off was inside each sample and cannot be taken out of it (costs.go,
    # wakeLatency): those runs keep the host file's wake_us, measured the new way.
    wake = [x for text in probes.get("wake_steal_us", []) for x in _floats(text)]
    backoff = [x for text in probes.get("backoff_us", []) for x in _floats(text)]
    if wake:
        table["wake_us"] = tuple(_quantiles(wake, grid))
    summary["wake_us_p50"] = (float(np.median(wake)) if wake
                              else f"{float(np.median(table['wake_us'])):.1f} (host file)")
    if backoff:
        table["backoff_us"] = tuple(_quantiles(backoff, grid))
        summary["backoff_us_p50"] = float(np.median(backoff))
    summary["probe_loadavg"] = float(probes.loadavg_1m.median())
    return HostConfig(**table), summary


def packed_host(cell: Any, host: HostConfig, rep: int) -> HostConfig:
    """``host`` for the ``rep``-th simulated run of ``cell``: at GOMAXPROCS 2 and more, with
    the client's threads sharing one CPU (``[host] packed_us``) for as long as the cell's
    ``rep``-th measured block (cycling) had them waiting runnable but off CPU
    (``runq_wait_s``, the kernel's schedstat). Two threads taking turns on one CPU for a time
    W wait W between them, so a block's wait is its packed time; the host's other
    processes' stalls, which the probes measure and the model also charges
    (``stall_per_s``), are in it too, a few per cent of a block. Why per block: whether the
    kernel packs the threads depends on how idle the process was over the last few hundred
    milliseconds -- after a timer-bound cell it mostly does, right after a CPU-bound block it
    does not (``data/README.md``) -- so a cell's blocks are a mix of packed and unpacked
    ones, and each simulated run is paired with one of them. The wait is measured beside
    the block time, not fitted to it. Runs recorded before the harness measured it (no
    ``runq_wait_s``) leave ``host`` as it is."""
    waits = list(getattr(cell, "runq_waits", []) or [])
    if int(cell.gomaxprocs) < 2 or not waits or not host.quantiles:
        return host
    wait_us = round(waits[rep % len(waits)] * 1e6, 1)
    return dataclasses.replace(host, packed_us=(wait_us,) * len(host.quantiles))
