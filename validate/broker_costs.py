"""The local broker's CPU costs, fitted on the broker JVM's CPU time during a calibration
session (issue 14), and the host speed they hold at.

The broker's CPU (issue 14; ``[broker]``, simbatch/kafka/broker.py): the dense
multi-partition configurations (``linger10-pP-Rps-dense``: P = 8, 32, R = 250 to 2000 msg/s,
:data:`CPU_CONFIGS`, with the large-request ``linger100-p8-Rps-dense``,
:data:`~validate.kafka_grid.RECORD_RATES`) are predicted with the broker's CPU on. Its costs
are a request unit's warm cost, a cold start's (a stage starting after the broker idled
longer than ``cold_after_us``), a partition's named in a fetch, and a record's. The record's
is measured by validate/kafka_record_cost.py's design, which a ladder session on a local
broker runs after its configurations (:func:`session_record_cost`; one partition at 20,000
and 40,000 records/s in requests of ~400 to ~4,000, where records are most of the work; the
JVM's CPU less its compiler's and its collector's), and given to the fit; the other three
are fitted (:func:`fit_broker`) on the broker JVM's CPU time (``/proc/PID/stat``) over each
run's timed span less its JIT compiler threads' (:func:`serving_cpu_s`) and its idle CPU
(over the harness's warm-up pause), by least squares over runs of several rates and
partition counts: the fit runs (one partition, 40 requests/s, every request cold),
:data:`CPU_FIT`'s runs (4 partitions at 1000 msg/s, one measured before each run of a CPU
configuration, on a broker settled at that load first: its CPU per request falls 5x over its
first ~40 s of such load, :data:`~validate.calibrate_kafka.CPU_SETTLE_RUNS`), and the other
CPU configurations. Each CPU configuration is predicted from costs fitted on every run of
the session but its own (:func:`held_out_broker`); a session that cannot tell the costs
apart (CI's, with one CPU configuration) takes them from
``models/kafka-broker-loopback.toml`` (fitted on a ladder session without CI's
configuration, :data:`MODEL_FIT_EXCLUDES`). Each is judged on p50, p99 and the broker's
serving CPU (cores over the run) with issue 14's tolerance.

The host's speed. The same work costs the broker JVM more CPU when the host runs slow: a
run's CPU grows in step with its host probe's wait lateness beyond the floor
(``validate/host_probe.py``; ``HostSpeed`` in validate/kafka_replication.py). Measured: the
ladder of 2026-12-06 (this VM, its runs at 29-93 us of lateness in a slow spell), each
rung's CPU predicted from the others' costs, within 25 % on 4 of 10 rungs unscaled (-37 to
+30 %) and on 9 of 10 with each run's work taken at the fit's median speed and each rung
predicted at its own runs' (-27 % at 250 msg/s over 32 partitions; p50 and p99 within on
10 of 10 either way). So :func:`fit_broker` fits the costs as they hold at the runs'
median speed where every run has the probe, a ladder writes that speed into the models
file (``[host_speed]``), and a session that takes the file's costs (CI's rung) predicts
each run with them scaled to its own speed, nothing fitted on the session; a file without
``[host_speed]`` is scaled by one factor fitted on the session's :data:`CPU_FIT` runs, as
before. The shipped file (2026-11-28, the machine before, its ladder's runs without the
probe) states the speed measured afterwards on four CI jobs' sessions that scaled it
(``--costs-speed DIR ...``, :func:`costs_speed`: per session the factor that fits its
:data:`CPU_FIT` runs' CPU and those runs' speed; 77.2, 69.2, 71.5 and 68.6 us in CI 98-101,
so 70.4). Held out, the rung's kept runs of CI 103-109 read, predicted at their speed with
nothing fitted: broker CPU +3, 0, -4, +2, +10 and -1 %, p50 +2 to +3 %, p99 -4, -2, -10,
-22, +2 and +5 % (the factor read +9, -6, -6 and +10 % in CI 104-106 and 108).
This VM's ladder's refit (164 us a request unit, a cold start 361, 5.8 a partition, 0.81 a
record, at 59.0 us), judged on the rung's kept runs of eight CI jobs (98-101, 103-106),
read +4, -11, -2, 0, -1, -3, -7 and -2 % at the runs' speed (p50 -1 to +3 %, p99 -23 to
-2 %), where the shipped file's factor read -3, -17, -15, -8, -3, +12, -4 and -7 %; and it
brings R2's longest producer p99 within its band (901 ms against 1.6 s; 502 with the
shipped file). Not shipped: the replication suite, which shares the file, predicts its
sparse runs at three replicas at their speed worse with it (validate/kafka_replication.py,
"What the costs' speed holds"). The broker runs on this VM's
2 vCPUs beside the Python harness and whatever neighbours run; that load is not a
reservation in the model (``background_cores`` 0): Linux's scheduler lets a waking broker
thread preempt a CPU-bound task within its wake-up granularity, and a neighbour takes what
is left (modelled as fixed 1 ms jobs holding a core, the ~1.4 cores of other load measured
in a run saturated the model's broker at 1000 msg/s while the real one answered at linger
+ 1 ms).

Why those three costs, measured (2026-11-26,
:func:`~validate.calibrate_kafka.where_cpu_went`, per thread from ``/proc/PID/task``): the
request path's CPU per produce request falls with the rate, 764, 610, 453 and 373 us at 250
to 2000 msg/s over 32 partitions, 632 to 473 over 8; its context switches per request fall
from 9.0 to 7.3 and its CPU per switch from 85 to 51 us (fewer wake-ups, each cheaper: a
busy broker's threads run warm). At one rate, 32 partitions cost more than 8 (0.22 against
0.16 cores at 250 msg/s, the same produce and fetch counts): librdkafka's every Fetch names
every partition. A constant cost per request (the model before the cold start) was within 25
% on 4-6 of the 8 configurations per session (off: -31 % to -35 % at 32 partitions and 250
msg/s every time, up to +32 % at the high rates), and no linear mix of produce requests,
fetches and fetched partitions fitted (it took a negative cost per produce request). With
the three costs, each configuration predicted from the session's other runs, the broker's
CPU was within 25 % on 8 of 8 in each of four sessions on 2026-11-26 (three re-judged from
their CSVs, -22 % to +23 %; a fourth measured with it, -21 % to +16 %), p50 on 8 of 8 and
p99 on 8, 8, 7 and 8 (the miss: 32 partitions at 2000 msg/s, 27.8 ms measured against 13.8).
The fitted costs are stable across the held-out fits (the fourth session: 221-314 us per
request unit, a cold start 265-359 us after 1-2 ms idle, 4.8-8.2 us per partition fetched),
and the consumer's coalesced fetches now follow too (Fetch per Produce at 2000 msg/s over 32
partitions: 0.68 measured, 0.68 predicted; 0.94 and 0.98 at 250).

A record's cost. Fitted on the ladder beside the other three (its large-request rungs carry
25 and 100 records per request), it came out at 3.6 us (standard error 1.4) and 2.6 (1.1) on
2026-11-26, 1.24 on 11-27 and 0.98 (1.5) on 11-28: the rungs' records are a few hundredths
of a core, within the sessions' noise, and the 11-26 figure held out left the 8000 msg/s
rung +153 % on 11-28 (0.142 cores predicted, 0.056 measured). A faster rung cannot be run
here: at 32,000 msg/s the Python harness fell behind its schedule on every message (10,000
msg/s achieved, 2026-11-28). validate/kafka_record_cost.py's design, made to tell it,
found 0.32 +- 0.31, 0.10 +- 0.11, -0.06 +- 0.48 and 0.40 +- 0.32 us on the request path's
threads (2026-11-27 and 11-28), and 0.57 +- 0.22, 0.91 +- 0.25 and 0.89 +- 0.38 us on the
JVM's CPU less its compiler's and its collector's (11-28, three brokers; the collector's own
share at such requests swings with the heap's state, 0 to 0.6 cores, see that module), so
the ladder is given it (:func:`fit_broker`) and its large-request rungs are predictions: on
the ladder of 2026-11-28 at 0.57 us, each rung predicted from the session's other runs, all
ten within 25 % on p50, p99 and the broker's CPU.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from validate.kafka_fit import Fitted, Measured, fit_runs, model_case, read_measurements
from validate.kafka_grid import (
    CONFIGS,
    CPU_CONFIGS,
    CPU_FIT,
    LOCAL_CORES,
    MODEL_FIT_EXCLUDES,
    fit_config,
)
from validate.kafka_models import (
    broker_model_path,
    host_speed_model,
    model_broker,
    no_speed_line,
    scaled_costs,
)

if TYPE_CHECKING:
    from validate.kafka_record_cost import Costs


SHAPE = ("cold_after_us", "cold_ramp_us")
"""How a cold start grows with the broker's idle time (``[broker]``,
:meth:`simbatch.kafka.BrokerConfig.cold_share`), in the order :meth:`CpuSample.served` takes
them after :data:`COSTS`."""
COLD_AFTER_GRID_US = (250.0, 500.0, 750.0, 1000.0, 1500.0, 2000.0, 3000.0)
"""The idle times tried for the broker's ``cold_after_us`` (:func:`fit_broker`): a step, no
ramp. validate/kafka_cold_start.py measures the cold start growing from 1 ms of idle time
to 7 ms (``cold_ramp_us`` 6000) on one partition at linger 0, but the ladder does not take
it: on 2026-11-28's ladder its residual is 11 % above the best step's, the warm request's
cost it fits rises from 250 to 429 +- 25 us, and with those costs the replication suite's
sparse rows at three replicas are predicted 18-24 % high on CI 73-77's runs, against 3-8 %
with the step (its dense row -2 to 0 %, against -3 to -6 %; both with the followers' own
cold start, ``[broker] follower_cold_us``; see that module's docstring)."""


@dataclass
class CpuSample:
    """One measured run for the broker's CPU fit: what the JVM burnt beyond its idle CPU
    (cores over the timed span), and the model of its configuration (``fitted``: the append
    and fetch of its paired fit run; ``k``: its seed), whose traffic :meth:`served` counts."""

    config: str
    work: float
    idle: float
    fitted: Fitted
    k: int
    speed: float = float("nan")
    """The run's host speed (seconds: its probe's wait lateness beyond the floor,
    ``validate/kafka_replication.py``'s ``HostSpeed``; NaN without a probe)."""
    cache: dict = field(default_factory=dict)

    def scale(self, at_s: float | None) -> float:
        """How much more CPU this run's work took than at host speed ``at_s`` (1 without
        ``at_s`` or the run's speed): the broker's costs grow in step with the speed
        (:func:`fit_broker`)."""
        if at_s is None or not self.speed > 0:
            return 1.0
        return self.speed / at_s

    def served(self, costs: tuple[float, ...]) -> np.ndarray:
        """What the model's broker serves per second for this run at ``costs``
        (:data:`COSTS`, then :data:`SHAPE`): request units (a produce request counting
        ``1 - fetch_share``, a fetch ``fetch_share``), stages that found it cold, partitions
        its fetches named, records appended (each also fetched). At real costs, not unit
        ones: a busier broker coalesces more fetches and stays warm longer."""
        if costs not in self.cache:
            from simbatch.core.streams import replication_seed
            from simbatch.kafka import BrokerConfig
            from simbatch.kafka import simulate as simulate_kafka

            cfg = CONFIGS[self.config]
            broker = dict(zip((*COSTS, *SHAPE), costs, strict=True))
            r = simulate_kafka(model_case(self.config, cfg, self.fitted,
                                          {"cores": LOCAL_CORES, **broker}),
                               replication_seed(2, self.k))
            share = BrokerConfig().fetch_share
            self.cache[costs] = np.array([r.requests * (1 - share) + r.broker_fetches * share,
                                          r.broker_cold_starts,
                                          r.broker_fetches * cfg.n_partitions,
                                          r.publish_s.size]) / r.end_s
        return self.cache[costs]


def cpu_samples(results: dict[str, Measured]) -> list[CpuSample]:
    """Every run of a session with the broker's CPU measured, as samples: each CPU
    configuration's runs and, measured with them, its fit runs (one partition, 40 requests/s)
    and :data:`CPU_FIT`'s runs (four partitions, ~290 requests/s), each with its host speed
    where its probe and the host-speed file's floor give one."""
    host = host_speed_model()
    out = []
    for name, m in results.items():
        if name not in CPU_CONFIGS or not m.cpu_fit_runs:
            continue
        fitted = fit_runs(m.fit_runs)
        for label, runs in ((name, m.runs), (CPU_FIT, m.cpu_fit_runs),
                            (fit_config(name), m.fit_runs)):
            out += [CpuSample(label, work_cores(rec), float(rec["broker_idle_cores"][0]), f, k,
                              host.of(rec) if host is not None else float("nan"))
                    for k, (f, rec) in enumerate(zip(fitted, runs, strict=True))
                    if np.isfinite(rec["broker_cpu_s"][0])]
    return out


def speed_of(samples: Sequence[CpuSample]) -> float | None:
    """The host speed a fit on ``samples`` holds its costs at: their median speed; None
    unless every one has a speed (a session without the probe: its costs at whatever speed
    it ran)."""
    speeds = [s.speed for s in samples]
    if not speeds or not all(v > 0 for v in speeds):
        return None
    return float(np.median(speeds))


FIT_ROUNDS = 2
"""Refits of the broker's costs at the costs last fitted (:func:`fit_broker`)."""
COSTS = ("request_cpu_us", "cold_us", "partition_fetch_us", "record_cpu_us")
"""The broker's costs (``[broker]``, simbatch/kafka/broker.py), in the order of
:meth:`CpuSample.served`'s counts."""
FITTED = (0, 1, 2)
"""The indices of :data:`COSTS` the ladder fits (:func:`fit_broker`): all but a record's."""


def fit_broker(samples: Sequence[CpuSample], shape: dict | None = None,
               record_cpu_us: float = 0.0, at_s: float | None = None) -> dict:
    """The model's ``[broker]`` fitted on ``samples``: a request unit's warm cost
    (``request_cpu_us``), a cold start's (``cold_us``) and a partition named in a fetch's
    (``partition_fetch_us``), at a record's cost given (``record_cpu_us``: measured by
    validate/kafka_record_cost.py's design, :func:`session_record_cost`; the ladder's requests carry
    1-100 records, too few to tell it, see :data:`~validate.kafka_grid.RECORD_RATES`), by
    non-negative least squares on each run's work (relative error, floored at 0.1 cores: an idle
    run's few hundredths of a core are mostly its idle CPU's noise). First at 1 us per request unit
    (the traffic's own counts) for each ``cold_after_us`` of :data:`COLD_AFTER_GRID_US`
    (a step), keeping the best; then :data:`FIT_ROUNDS` times again with the counts at the
    costs just fitted (a busier broker serves fewer fetches and cold starts).
    ``idle_cores``: the samples' median. With ``shape`` (a models/ file's ``[broker]``):
    its costs, the record's among them, and its cold start's growth, the costs all scaled
    by one factor fitted likewise (a session too small to separate them, as CI's).

    With ``at_s`` (:func:`speed_of`), the costs are fitted as they hold at that host speed:
    each run's work taken at ``at_s`` (:meth:`CpuSample.scale`), its traffic counted at its
    own speed's costs. The broker's CPU per unit of work grows in step with the host's
    speed, as its probe reads it (measured: the ladder of 2026-12-06, its runs at 29-93 us,
    predicts each configuration's CPU from the others within 25 % on 9 of 10 so and on 4
    of 10 without; the module docstring, "The host's speed")."""
    from scipy.optimize import nnls

    y, w = _work(samples, at_s)
    fitted = list(FITTED)
    record = max(float(record_cpu_us), 0.0) * 1e-6

    def solve(at: tuple[float, ...]) -> tuple[float, np.ndarray]:
        a = np.array([_served(s, at, at_s) for s in samples])
        if shape is None:
            rest = y - a[:, COSTS.index("record_cpu_us")] * record
            part, _ = nnls(a[:, fitted] * w[:, None], rest * w)
            costs = np.full(len(COSTS), record)
            costs[fitted] = part
        else:
            unit = a @ np.array(at[:len(COSTS)]) * 1e-6
            costs = np.array(at[:len(COSTS)]) * 1e-6 * float(
                np.sum(unit * y * w**2) / np.sum((unit * w) ** 2))
        return float(np.sum(((a @ costs - y) * w) ** 2)), costs

    if shape is None:
        start = (1.0, 0.0, 0.0, record * 1e6)
        tries = [((tau, 0.0), solve((*start, tau, 0.0))) for tau in COLD_AFTER_GRID_US]
        growth, (_, costs) = min(tries, key=lambda t: t[1][0])
    else:
        growth = cold_shape(shape)
        costs = np.array([float(shape.get(k, 0.0)) for k in COSTS]) * 1e-6
    for _ in range(FIT_ROUNDS if shape is None else FIT_ROUNDS + 1):
        at = (*(round(float(c) * 1e6, 3) for c in costs), *growth)
        _, costs = solve(at)
    out = {k: round(float(c) * 1e6, 3 if k in ("partition_fetch_us", "record_cpu_us")
                    else 2) for k, c in zip(COSTS, costs, strict=True)}
    return {"cores": LOCAL_CORES, **out, **dict(zip(SHAPE, growth, strict=True)),
            "idle_cores": round(float(np.median([s.idle for s in samples])), 4)}


def cold_shape(broker: dict) -> tuple[float, float]:
    """``broker``'s cold-start growth (:data:`SHAPE`; a ramp of 0, a step, where it has
    none: a models/ file older than the ramp)."""
    return (float(broker["cold_after_us"]), float(broker.get("cold_ramp_us", 0.0)))


def cost_errors(samples: Sequence[CpuSample], broker: dict,
                at_s: float | None = None) -> dict[str, float]:
    """Each of ``broker``'s :data:`COSTS` (us, holding at host speed ``at_s`` where given)
    the ladder fits (:data:`FITTED`) with its standard error from the fit's residuals on
    ``samples`` (weighted as :func:`fit_broker` weighs them; the counts at the fitted costs);
    nan for a record's, which it is given."""
    at = (*(float(broker[k]) for k in COSTS), *cold_shape(broker))
    y, w = _work(samples, at_s)
    a = np.array([_served(s, at, at_s) for s in samples]) * 1e-6
    rest = (y - a[:, COSTS.index("record_cpu_us")] * at[COSTS.index("record_cpu_us")]) * w
    a = (a * w[:, None])[:, list(FITTED)]
    resid = a @ np.array([at[i] for i in FITTED]) - rest
    dof = max(len(y) - len(FITTED), 1)
    cov = float(resid @ resid) / dof * np.linalg.pinv(a.T @ a)
    se = dict.fromkeys(COSTS, float("nan"))
    se.update({COSTS[i]: float(np.sqrt(cov[j, j])) for j, i in enumerate(FITTED)})
    return se


def _work(samples: Sequence[CpuSample], at_s: float | None = None
          ) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's work (cores beyond idle; at host speed ``at_s``, where given:
    :meth:`CpuSample.scale`) and its weight in the fit: relative error, floored at 0.1 cores
    (:func:`fit_broker`)."""
    y = np.array([s.work / s.scale(at_s) for s in samples])
    return y, 1.0 / np.maximum(y, 0.1)


def _served(sample: CpuSample, at: tuple[float, ...], at_s: float | None) -> np.ndarray:
    """``sample``'s traffic (:meth:`CpuSample.served`) at the costs ``at`` holding at host
    speed ``at_s``: counted at its own speed's (a slower run's broker is busier)."""
    scale = sample.scale(at_s)
    if scale == 1.0:
        return sample.served(at)
    n = len(COSTS)
    return sample.served((*(round(c * scale, 3) for c in at[:n]), *at[n:]))


def at_speed(broker: dict, at_s: float | None, speed_s: float) -> dict:
    """``broker``'s costs, holding at host speed ``at_s``, for a run at ``speed_s``
    (unchanged without either)."""
    if at_s is None or not speed_s > 0:
        return broker
    return scaled_costs(broker, at_s, speed_s)


def session_record_cost(out_dir: Path) -> Costs | None:
    """A record's cost measured in ``out_dir``'s session by validate/kafka_record_cost.py's
    design (its rounds, :data:`~validate.kafka_record_cost.CSV_NAME` there), if it was."""
    from validate.kafka_record_cost import CSV_NAME, read_rounds
    from validate.kafka_record_cost import record_cost as fit_rounds

    path = out_dir / CSV_NAME
    return fit_rounds(read_rounds(path)) if path.is_file() else None


def given_record_cpu_us(design: Costs | None, shape: dict | None) -> float:
    """The record cost a session's fit is given: its own design's (``design``), else the
    models/ file's (``shape``), else 0; never below 0 (a fit of noise around nothing)."""
    if design is not None:
        return max(design.record_us, 0.0)
    return max(float((shape or {}).get("record_cpu_us", 0.0)), 0.0)


def held_out_broker(samples: Sequence[CpuSample], name: str, shape: dict | None,
                    design: Costs | None = None, shape_at_s: float | None = None
                    ) -> tuple[dict, float | None]:
    """``name``'s ``[broker]`` and the host speed its costs hold at (None: at the session's,
    unscaled): fitted on every other sample of the session where they tell the costs apart
    (:func:`separable`; a record's given by the session's ``design`` or ``shape``:
    :func:`given_record_cpu_us`), at their median speed (:func:`speed_of`); else ``shape``
    (a models/ file's), whose costs hold at ``shape_at_s`` (its ``[host_speed]``), with
    nothing fitted where ``name``'s runs all have a speed; else ``shape`` scaled on the
    :data:`CPU_FIT` runs among them (a file or runs older than the host probe; without a
    ``shape``, its own fit all the same)."""
    others = [s for s in samples if s.config != name]
    if shape is not None and not separable(others):
        if shape_at_s is not None and speed_of([s for s in samples if s.config == name]):
            return shape, shape_at_s
        # the factor from CPU_FIT's runs alone: the fit runs' few hundredths of a core of
        # work are within their idle CPU's noise
        return fit_broker([s for s in others if s.config == CPU_FIT], shape), None
    at_s = speed_of(others)
    return fit_broker(others, record_cpu_us=given_record_cpu_us(design, shape), at_s=at_s), at_s


def separable(samples: Sequence[CpuSample]) -> bool:
    """Whether ``samples`` tell the broker's costs apart: CPU configurations of every
    partition count of the ladder (each at several rates) among them."""
    return tells_costs_apart({s.config for s in samples})


def tells_costs_apart(names: Iterable[str]) -> bool:
    """Whether a session of the configurations ``names`` tells the broker's costs apart
    (:func:`separable`)."""
    parts = {CONFIGS[n].n_partitions for n in names if n in CPU_CONFIGS}
    return {CONFIGS[n].n_partitions for n in CPU_CONFIGS} <= parts


def serving_cpu_s(rec: np.ndarray) -> float:
    """The broker JVM's CPU over a run's timed span less its JIT compiler threads'
    (``broker_jit_cpu_s``, where measured): the compiler's bursts are the JVM warming up, not
    a cost of the traffic, and they land in a 4 s run or not (measured 2026-11-27 in three
    CI sessions: 0-0.40 s of a CPU_FIT run's 0.74-1.20 s, 0-0.28 s of the rung's 2.2-2.5 s),
    which moved CI's scale factor by up to 30 % either way."""
    jit = float(rec["broker_jit_cpu_s"][0]) if "broker_jit_cpu_s" in (rec.dtype.names or ()) \
        else math.nan
    return float(rec["broker_cpu_s"][0]) - (jit if math.isfinite(jit) else 0.0)


def work_cores(rec: np.ndarray) -> float:
    """What a run's traffic cost the broker (or a local cluster's JVMs): its serving CPU
    (:func:`serving_cpu_s`) per second of the timed span, beyond its idle CPU."""
    return serving_cpu_s(rec) / float(rec["timed_s"][0]) - float(rec["broker_idle_cores"][0])


def measured_cpu(runs: list[np.ndarray]) -> float:
    """The broker's serving CPU over a run (:func:`serving_cpu_s`; cores: CPU seconds per
    second of the timed span), median over runs."""
    return float(np.median([serving_cpu_s(r) / r["timed_s"][0] for r in runs]))


def fitted_broker(results: dict[str, Measured], design: Costs | None,
                  shape: dict | None) -> tuple[dict, list[str], float | None] | None:
    """The ``[broker]`` of a session (:func:`fit_broker` on every run with the broker's CPU
    measured but those of :data:`MODEL_FIT_EXCLUDES`, at the session's record cost,
    ``design``, else ``shape``'s: :func:`given_record_cpu_us`; at the runs' median host
    speed where they all have one, :func:`speed_of`), comment lines saying on what, and that
    speed; None unless those runs tell the costs apart (:func:`separable`)."""
    samples = [s for s in cpu_samples(results) if s.config != MODEL_FIT_EXCLUDES]
    if not separable(samples):
        return None
    at_s = speed_of(samples)
    broker = fit_broker(samples, record_cpu_us=given_record_cpu_us(design, shape), at_s=at_s)
    se = cost_errors(samples, broker, at_s)
    configs = sorted({s.config for s in samples})
    load = [r["load_avg"][0] for n, m in results.items() if n in configs for r in m.runs]
    from validate.kafka_record_cost import CSV_NAME
    record = (f"# Per record: {design.record_us:.2f} +- {design.record_se:.2f} us (0 if "
              "below), measured by validate/kafka_record_cost.py's design (the session's "
              f"{CSV_NAME}: one partition, 20,000 and 40,000 records/s in requests of ~400 "
              "to ~4,000; the JVM's CPU less its compiler's and collector's), not fitted on "
              "the ladder"
              if design is not None else
              f"# Per record: {broker['record_cpu_us']:g} us, the models/ file's (no design "
              f"run in this session, {CSV_NAME})")
    how = ("at its runs' host speed, [host_speed] below" if at_s is not None else
           "scaled by its own CPU fit runs")
    notes = [f"# [broker]: fitted on {len(samples)} runs of {len(configs)} configurations "
             f"(every one measured with the broker's CPU but {MODEL_FIT_EXCLUDES}, which CI",
             f"# predicts with these costs {how}): " + ", ".join(configs) + ".",
             "# Least squares on each run's CPU beyond idle (see fit_broker); 1-minute load "
             f"average {min(load, default=np.nan):.2f}-{max(load, default=np.nan):.2f}.",
             "# Standard errors from the fit's residuals (us): "
             + ", ".join(f"{COSTS[i]} {broker[COSTS[i]]:g} +- {se[COSTS[i]]:.2g}"
                         for i in FITTED) + ".",
             record + "; per byte: not told apart from per record at one message size (0).",
             "# cores: this VM's vCPUs, shared with the harness",
             "# and the neighbours, whose load is no reservation (background_cores 0; see the "
             "module docstring)."]
    broker["byte_cpu_ns"] = 0.0
    if shape is not None and shape.get("follower_cold_us") is not None:
        # a single broker's ladder has no followers: their cold start is measured apart
        broker["follower_cold_us"] = float(shape["follower_cold_us"])
        notes.append("# follower_cold_us: the models/ file's, measured by python -m "
                      "validate.kafka_cold_start --replicas 3 --write-model.")
    return broker, notes, at_s


def broker_toml(broker: tuple[dict, list[str], float | None], prov: dict[str, str],
                rows: list[dict]) -> str:
    """:func:`broker_model_path`'s text: provenance, ``[broker]``, the host speed its costs
    hold at (``[host_speed]``, where the runs had the probe) and the broker's CPU measured
    beside predicted."""
    lines = ["# The local Kafka broker's CPU costs (simbatch/kafka/broker.py); written by",
             "# validate/calibrate_kafka.py. Do not edit by hand: re-run the command.", "",
             "[provenance]"] + [f'{k} = "{v}"' for k, v in prov.items()] + [""]
    lines += broker[1] + ["[broker]"] + [f"{k} = {v}" for k, v in broker[0].items()] + [""]
    host, at_s = host_speed_model(), broker[2]
    if at_s is not None and host is not None:
        lines += host_speed_block(host.wake_floor_s, at_s, "the fit's runs' median")
    lines += ["# the broker JVM's CPU (cores), measured beside predicted with the costs fitted "
              "on the session's other runs"]
    lines += [f"# {r['config']}: measured {r['measured']:.3f} predicted {r['predicted']:.3f}"
              for r in rows if r["metric"] == "broker_cpu"]
    return "\n".join(lines) + "\n"


HOST_SPEED_NOTE = "# The host speed the costs above hold at by the broker JVM's CPU: "
"""How a broker file's ``[host_speed]`` comment begins (:func:`host_speed_block`)."""


def host_speed_block(floor_s: float, at_s: float, how: str) -> list[str]:
    """A broker file's ``[host_speed]`` table on this host's CPU, with the comment that says
    what it is and how it was measured (``how``): the lines :func:`broker_toml` and
    :func:`write_costs_speed` write."""
    import json

    from validate import kafka_models
    return [HOST_SPEED_NOTE + how + " (each run's",
            "# probe's wait lateness beyond the floor of this CPU's line in "
            "models/kafka-host-speed-loopback.toml; a run",
            "# at another speed is predicted with the costs scaled in step, "
            "validate/broker_costs.py's fit_broker and",
            "# held_out_broker; read on this CPU only).",
            "[host_speed]", f"cpu = {json.dumps(kafka_models.cpu_name())}",
            f"wake_floor_us = {floor_s * 1e6:.1f}", f"costs_at_us = {at_s * 1e6:.1f}", ""]


def costs_speed(dirs: Sequence[Path], models_dir: Path) -> tuple[float, list[str]]:
    """The host speed at which ``models_dir``'s broker costs hold by the broker JVM's CPU,
    measured on calibration sessions that took them from the file (``dirs``: each a
    session's runs, as ``--ci`` writes them): per session, the one factor that fits its
    :data:`CPU_FIT` runs' CPU (:func:`fit_broker` with the file as the shape) and those
    runs' median speed over it (``HostSpeed.cpu_costs_at``); the median over the sessions,
    and a line per session. For a file fitted before the host probe, whose ladder's runs
    cannot say it (:func:`fitted_broker`)."""
    from validate.kafka_harness import HarnessError
    shape, host = model_broker(models_dir), host_speed_model(models_dir)
    if shape is None or not shape.get("request_cpu_us") or host is None:
        raise HarnessError(f"{models_dir}: needs the broker's costs "
                           f"({broker_model_path(models_dir).name}) and a line for this "
                           f"host's CPU in the host-speed file ({no_speed_line(models_dir)})")
    held, lines = [], []
    for d in dirs:
        results = read_measurements(Path(d))
        fit = [s for s in cpu_samples(results) if s.config == CPU_FIT]
        runs = [r for m in results.values() for r in m.cpu_fit_runs or []]
        factor = (fit_broker(fit, shape)["request_cpu_us"] / shape["request_cpu_us"]
                  if fit else float("nan"))
        at = host.cpu_costs_at(runs, factor)
        if not np.isfinite(at):
            raise HarnessError(f"{d}: no {CPU_FIT} runs with the broker's CPU and the host "
                               "probe's figures")
        held.append(at)
        lines.append(f"{d}: the file's costs x {factor:.2f} fit its {len(fit)} {CPU_FIT} runs' "
                     f"CPU at a host speed of {at * factor * 1e6:.1f} us: they hold at "
                     f"{at * 1e6:.1f} us")
    return float(np.median(held)), lines


def write_costs_speed(path: Path, floor_s: float, at_s: float, how: str) -> None:
    """Set the broker file at ``path``'s ``[host_speed]`` (:func:`host_speed_block`),
    replacing the one it has."""
    lines = path.read_text().splitlines()
    if "[host_speed]" in lines:
        table = lines.index("[host_speed]")
        start = next((i for i, line in enumerate(lines[:table])
                      if line.startswith(HOST_SPEED_NOTE)), table)
        end = next((i for i in range(table + 1, len(lines))
                    if not lines[i].strip() or lines[i].startswith(("[", "#"))), len(lines))
        del lines[start:end + (end < len(lines) and not lines[end].strip())]
    at = next((i for i, line in enumerate(lines)
               if line.startswith("# the broker JVM's CPU (cores), measured beside")), len(lines))
    lines[at:at] = host_speed_block(floor_s, at_s, how)
    text = "\n".join(lines) + "\n"
    # the notes of a file fitted before the probe say how CI took its costs then
    path.write_text(text.replace("predicts with these costs scaled by its own CPU fit runs)",
                                 "predicts with these costs at its runs' host speed, "
                                 "[host_speed] below)"))
