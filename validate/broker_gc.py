"""The broker JVM's young collections (``[gc]``, ``simbatch/kafka/gc.py``) fitted on a
calibration session's runs (the harness's ``jstat`` figures), the pool of pauses measured over
several sessions on one CPU (``models/kafka-gc-loopback.toml``) and the measured figures they
are judged against.

Why a pool: a session's runs but the configuration held out hold one to six young pauses (CI
147-152, 2026-12-07: 3, 1, 3, 6, 3 and 4), and the model draws every pause of the held-out
configuration from them, so one long pause sets them all (CI 148: the rung's p99 predicted at
31.67 ms against 21.78 measured, from a single pause of 30 ms against the rung's own eleven of
7-21). Pause lengths are the machine's JVM's: with the other five sessions' pauses pooled in
(14-19 of them, :func:`gc_pool`; the session's own other runs' beside them), the rung's p99
read -7, -17, -37, -9, -16 and +13 % against -12, +45, -29, -13, +3 and -11 % from each
session's own alone; every other row within as before (``--ci --from-csv`` on each
session's runs). CI 149 misses either way: its own runs held a Remark of 19 ms and a pause of
18, longer than most of the pool's. The pool shipped is the six sessions'
(``validate/kafka_gc_sessions/``); on sessions it was not made from: see
``validate/test_kafka_calibration.py``'s comment on the rung's p99.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from validate.kafka_fit import Measured, read_measurements
from validate.kafka_grid import CONFIGS, CPU_FIT, MODEL_FIT_EXCLUDES, fit_config
from validate.kafka_models import GcPool, gc_pool_path, gc_pools


def fitted_gc(results: dict[str, Measured], held_out: str | None = None
              ) -> tuple[dict, list[str]] | None:
    """The broker's young collections (``[gc]``, ``simbatch/kafka/gc.py``) of a session,
    from every librdkafka run the harness measured with the broker's ``jstat`` figures --
    each configuration's runs, the fit runs paired with them and the :data:`CPU_FIT` runs --
    but ``held_out``'s own runs (the configuration predicted with it): what the broker
    allocated, least squares (non-negative) on its produce requests and on its fetch
    requests x partitions (the median run of each configuration, an equation each); eden's
    size and the pauses as measured. None when those runs hold no pause or no allocation
    figures (a user's cluster, no ``jstat``) or a single partition count (which cannot tell
    a fetch's cost per partition). The marking cycles' Remark stops, where the runs hold
    any: how many per young collection, and their lengths (``marking_ms``, the time from a
    cycle's start to its Remark, keeps its measured default).

    Why every configuration: allocation, pauses and marking cycles are the JVM's, the same
    for every configuration, and the fit runs alone (1 and 4 partitions) leave the cost per
    partition fetched to a lever of 4. In three CI sessions on 2026-11-27 they put the
    32-partition rung's allocation at 0.78, 0.78 and 0.82 of what jstat measured, so the
    model had 4 young collections where the broker had 6; fitted on the sessions' other
    configurations (8- and 32-partition sparse runs too), 1.07, 1.22 and 0.90. Likewise
    their pauses and Remarks: 3-5 pauses per session from the fit runs alone."""
    from scipy.optimize import nnls

    seen: set[int] = set()
    runs: list[tuple[np.ndarray, str]] = []

    def take(group, config: str) -> None:
        if config == held_out:
            return
        for r in group or ():
            if id(r) not in seen:
                seen.add(id(r))
                runs.append((r, config))

    for name, m in results.items():
        if CONFIGS[name].client != "librdkafka":
            continue
        take(m.runs, name)
        take(m.fit_runs, fit_config(name))
        take(m.cpu_fit_runs, CPU_FIT)
    runs = [(r, c) for r, c in runs if np.isfinite(r["broker_alloc_mb"][0])
            and np.isfinite(r["fetch_requests"][0])]
    configs = sorted({c for _, c in runs})
    if len({CONFIGS[c].n_partitions for c in configs}) < 2:
        return None
    # per configuration, the median run (a run's jstat figure can double: seen 2 in 15)
    a, kb = [], []
    for config in configs:
        mine = [r for r, c in runs if c == config]
        a.append([np.median([r["produce_requests"][0] for r in mine]),
                  np.median([r["fetch_requests"][0] for r in mine])
                  * CONFIGS[config].n_partitions])
        kb.append(np.median([r["broker_alloc_mb"][0] for r in mine]) * 1024)
    (request_kb, partition_fetch_kb), _ = nnls(np.array(a), np.array(kb))
    pauses = np.concatenate([r["gc_pause_s"][np.isfinite(r["gc_pause_s"])] for r, _ in runs])
    pauses = np.maximum(pauses, 0.0005)      # jstat counts in whole ms: 0 is under 1 ms
    if pauses.size == 0 or request_kb + partition_fetch_kb <= 0:
        return None
    eden = float(np.median([r["broker_eden_mb"][0] for r, _ in runs]))
    gc = {"eden_mb": round(eden, 1), "request_kb": round(float(request_kb), 2),
          "partition_fetch_kb": round(float(partition_fetch_kb), 3),
          "pause_ms": [round(float(x) * 1e3, 1) for x in np.sort(pauses)]}
    remarks = np.concatenate([r["gc_remark_s"][np.isfinite(r["gc_remark_s"])]
                              for r, _ in runs])
    if remarks.size:            # marking cycles per young collection, and their stops
        gc["remarks_per_young"] = round(remarks.size / pauses.size, 3)
        gc["remark_ms"] = [round(max(float(x), 0.0005) * 1e3, 1) for x in np.sort(remarks)]
    notes = [f"# [gc]: fitted on {len(runs)} librdkafka runs of {len(configs)} configurations"
             + (f" (not {held_out})" if held_out else "") + " (jstat -gc at 100 ms over",
             "# each timed span): allocation per produce request and per partition of each "
             "fetch (each configuration's median run),",
             f"# eden's median size, the {pauses.size} young pauses measured: "
             + ", ".join(configs) + "."]
    return gc, notes


def with_pool(gc: tuple[dict, list[str]] | None, pool: GcPool | None
              ) -> tuple[dict, list[str]] | None:
    """A session's collections (:func:`fitted_gc`) with ``pool``'s pauses and Remarks drawn
    from beside the session's own, the Remarks per young collection counted over both; as
    they were without a pool (another CPU, no file) or without the session's (no
    ``jstat``)."""
    if gc is None or pool is None:
        return gc
    fitted, notes = gc
    pauses = sorted(list(fitted["pause_ms"]) + list(pool.pause_ms))
    remarks = sorted(list(fitted.get("remark_ms", [])) + list(pool.remark_ms))
    merged = {**fitted, "pause_ms": pauses}
    if remarks:
        merged["remarks_per_young"] = round(len(remarks) / len(pauses), 3)
        merged["remark_ms"] = remarks
    return merged, notes + [f"# with this CPU's pool ({pool.cpu}): {len(pool.pause_ms)} young "
                            f"pauses and {len(pool.remark_ms)} Remarks of {pool.sessions}."]


def gc_pool(dirs: Sequence[Path]) -> tuple[list[float], list[float], list[str]]:
    """Every young pause and Remark (ms) of the librdkafka runs of calibration sessions
    ``dirs`` (each a session's runs, as ``--ci`` writes them) but those of the configuration
    each judges held out (:data:`~validate.kafka_grid.MODEL_FIT_EXCLUDES`; the runs
    :func:`fitted_gc` takes), with a line per session. A session without the broker's
    ``jstat`` figures is refused, naming it."""
    from validate.kafka_harness import HarnessError

    pauses: list[float] = []
    remarks: list[float] = []
    lines = []
    for d in dirs:
        if not Path(d).is_dir() or not any(Path(d).glob("*.run[0-9].csv")):
            raise HarnessError(f"{d}: not a calibration session's directory (no NAME.runK.csv "
                               "in it)")
        gc = fitted_gc(read_measurements(Path(d)), held_out=MODEL_FIT_EXCLUDES)
        if gc is None:
            raise HarnessError(f"{d}: no librdkafka runs with the broker's jstat figures over "
                               "two partition counts (a calibration session's, as --ci writes)")
        mine, theirs = gc[0]["pause_ms"], gc[0].get("remark_ms", [])
        pauses += mine
        remarks += theirs
        lines.append(f"{d}: {len(mine)} young pauses ({_span(mine)} ms), {len(theirs)} "
                     "Remarks" + (f" ({_span(theirs)} ms)" if theirs else ""))
    return sorted(pauses), sorted(remarks), lines


def _span(values: Sequence[float]) -> str:
    return f"{min(values):g}" + (f"-{max(values):g}" if max(values) > min(values) else "")


def write_gc_pool(models_dir: Path, pool: GcPool) -> Path:
    """Set ``pool``'s CPU's entry of ``models_dir``'s pool file
    (:func:`~validate.kafka_models.gc_pool_path`), keeping the other CPUs'; its path."""
    import json

    path = gc_pool_path(models_dir)
    pools = {**gc_pools(models_dir), pool.cpu: pool}
    lines = ["# The local broker JVM's young pauses and its marking cycles' Remark stops (ms), "
             "measured (jstat -gc)",
             "# on calibration sessions' librdkafka runs but those of the configuration each "
             "judges held out,",
             "# a pool per CPU; written by python -m validate.calibrate_kafka --gc-pool DIR ... "
             "Do not edit by hand.",
             "# The calibration draws the model's pauses from a session's own and its CPU's "
             "pool (validate/broker_gc.py).", ""]
    for p in pools.values():
        lines += ["[[pool]]", f"cpu = {json.dumps(p.cpu)}",
                  f"sessions = {json.dumps(p.sessions)}",
                  f"pause_ms = [{', '.join(f'{x:g}' for x in p.pause_ms)}]",
                  f"remark_ms = [{', '.join(f'{x:g}' for x in p.remark_ms)}]", ""]
    path.write_text("\n".join(lines))
    return path


GC_FIGURES = ("gc_youngs", "gc_remarks", "gc_alloc_mb")
"""What :func:`~validate.calibrate_kafka.predict` reports of the model's collections for a CPU
configuration (per run, median over runs; :class:`simbatch.kafka.engine.KafkaRun`), beside
:func:`measured_gc`."""


def measured_gc(runs: list[np.ndarray]) -> tuple[float, float, float]:
    """The broker's young collections, Remark stops and MB allocated over a run's timed
    span (the harness's ``jstat`` figures), medians over runs."""
    return (float(np.median([np.isfinite(r["gc_pause_s"]).sum() for r in runs])),
            float(np.median([np.isfinite(r["gc_remark_s"]).sum() for r in runs])),
            float(np.median([r["broker_alloc_mb"][0] for r in runs])))


def measured_pauses(runs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Every young pause of the runs (ms) and what each left in the survivor spaces (MB;
    NaN in a run recorded before the harness measured it): a pause's length follows what
    the collection copied (``simbatch/kafka/gc.py``)."""
    pauses = np.concatenate([r["gc_pause_s"][np.isfinite(r["gc_pause_s"])] for r in runs])
    survivors = np.concatenate([r["gc_survivor_mb"][np.isfinite(r["gc_pause_s"])]
                                for r in runs])
    return pauses * 1e3, survivors
