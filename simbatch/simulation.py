"""The builder: wires producers, batcher and service for one replication, and runs it.

A run is a pure function of (case, seed): one ``numpy.random.SeedSequence`` per run is split
into one named ``Generator`` per random source (``inputs``, ``keys``, ``arrivals``,
``service``), so two cases run with the same seed see the same workload (common random
numbers), and replications use independent child seeds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import simpy

from .batcher import Batcher, BatcherConfig
from .errors import check_int
from .producers import BlockWorkload, OpenLoopWorkload, Producers
from .records import Recorder
from .service import BatchService, ServiceConfig

STREAMS = ("inputs", "keys", "arrivals", "service")


@dataclass(frozen=True, kw_only=True)
class Case:
    """One configuration to simulate: a workload, a batcher, a service model.

    Examples
    --------
    >>> run = simulate(Case(workload=BlockWorkload(n_transactions=3)), seed=1)
    >>> round(run.block_time_s, 4)   # 3 x (10 ms timer + 0.5 ms service)
    0.0315
    """

    name: str = "default"
    workload: BlockWorkload | OpenLoopWorkload = field(default_factory=BlockWorkload)
    batcher: BatcherConfig = field(default_factory=BatcherConfig)
    service: ServiceConfig = field(default_factory=ServiceConfig)


@dataclass
class Run:
    """The records of one replication and its labels."""

    case: Case
    recorder: Recorder
    seed: int
    replication: int
    end_s: float
    scenario: str = ""

    @property
    def block_time_s(self) -> float:
        """Time from the first Put to the last transaction's completion (seconds)."""
        return self.end_s

    def frames(self) -> dict[str, pd.DataFrame]:
        return self.recorder.frames(scenario=self.scenario, case=self.case.name,
                                    replication=self.replication, seed=self.seed)


def rng_streams(seed: np.random.SeedSequence | int) -> dict[str, np.random.Generator]:
    """One independent ``Generator`` per named random source."""
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    children = seq.spawn(len(STREAMS))
    return {name: np.random.default_rng(child) for name, child in zip(STREAMS, children)}


def simulate(case: Case, seed: int = 0, *, replication: int = 0, scenario: str = "") -> Run:
    """Run ``case`` once. Replication ``r`` of seed ``s`` uses child ``r`` of ``SeedSequence(s)``.

    Parameters
    ----------
    case : Case
    seed : int
        Base seed of the experiment.
    replication : int
        Which independent replication of that seed to run.
    """
    check_int("simulate", "seed", seed)
    check_int("simulate", "replication", replication)
    child = np.random.SeedSequence(seed).spawn(replication + 1)[replication]
    rngs = rng_streams(child)
    env = simpy.Environment()
    recorder = Recorder()
    producers = Producers(env, case.workload, recorder, rngs)
    service = BatchService(env, case.service, rngs["service"], recorder,
                           on_done=producers.items_done)
    batcher = Batcher(env, case.batcher, service, on_enqueue=recorder.enqueued)
    batcher.start()
    all_done = producers.start(batcher)
    env.run(until=all_done)
    end = env.now
    batcher.close()
    env.run(until=batcher.process)
    return Run(case=case, recorder=recorder, seed=seed, replication=replication, end_s=end,
               scenario=scenario)


def replicate(case: Case, replications: int = 1, seed: int = 0, *,
              scenario: str = "") -> list[Run]:
    """``replications`` independent runs of ``case``."""
    check_int("replicate", "replications", replications, minimum=1)
    return [simulate(case, seed, replication=r, scenario=scenario) for r in range(replications)]
