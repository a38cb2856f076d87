"""The engine interface and its registry.

An engine simulates one family of mechanisms (the batcher pipeline, the Kafka producer
stack, the bucket map). Each declares its case type (a configuration whose fields are the
scenario's sections), simulates one replication from (case, seed), turns runs into metrics
and estimates a case's work. Scenario loading, sweeps, the command line and plots call this
interface; none of them switches on the kind.

An engine registers itself when its package is imported; ``import simbatch`` imports all
three.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import numpy as np
import pandas as pd

from .config import Str, config, section_fields
from .errors import ConfigError
from .work import Bounds, Work


@config
class CaseBase:
    """What every engine's case has besides its sections: a ``name``; ``params``, the
    parameters the scenario set for this case (``"section.field"`` to value, from its
    ``[[cases]]`` entry, its sweep values and ``--set``); ``models``, the models/ files its
    sections loaded."""

    name: Str = "default"
    params: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False)
    models: tuple[Str, ...] = dataclasses.field(default=(), compare=False)


@dataclasses.dataclass
class Run:
    """One replication of a case; engines subclass it with their records."""

    case: Any
    seed: int
    replication: int = 0
    scenario: str = ""

    def frames(self) -> dict[str, pd.DataFrame]:
        """The run's per-record DataFrames (documented by each engine), each with
        ``scenario``, ``case``, ``replication`` and ``seed`` columns."""
        frames = self._frames()
        for frame in frames.values():
            frame["scenario"] = self.scenario
            frame["case"] = self.case.name
            frame["replication"] = self.replication
            frame["seed"] = self.seed
        return frames

    def _frames(self) -> dict[str, pd.DataFrame]:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class PlotSpec:
    """A plot an engine's results call for: ``kind`` is ``"cdf"`` (latency samples),
    ``"percentiles"`` (``metrics`` against the swept ``x``) or ``"scaling"`` (``metrics[0]``
    against ``x`` with a USL fit)."""

    kind: str
    x: str = ""
    metrics: tuple[str, ...] = ()


class Engine(Protocol):
    """What the planning face needs of an engine."""

    @property
    def kind(self) -> str:
        """The scenario kind (``[scenario] kind``)."""
        ...

    @property
    def case_type(self) -> type:
        """The case: a configuration whose fields besides :class:`CaseBase`'s are the
        scenario's sections."""
        ...

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every metric a run reports."""
        ...

    @property
    def plots(self) -> tuple[PlotSpec, ...]:
        ...

    @property
    def report_metrics(self) -> tuple[str, ...]:
        """What a recommendation shows of each configuration by default (p50, p99,
        throughput or their engine's counterparts)."""
        ...

    def simulate(self, case: Any, seed: int, *, bounds: Bounds | None = None) -> Any:
        """One run of ``case`` with ``seed`` (a :class:`Run`)."""
        ...

    def run_metrics(self, run: Any) -> dict[str, float]: ...

    def pool(self, run: Any) -> dict[str, np.ndarray]:
        """What :meth:`pooled_metrics` needs of a run (small arrays, shipped back from a
        worker process in place of the run); ``"latency"``, if there, feeds CDF plots."""
        ...

    def pooled_metrics(self, pools: list[dict[str, np.ndarray]]) -> dict[str, float]:
        """Metrics taken over the pooled records of all runs (latency percentiles)."""
        ...

    def work(self, case: Any) -> Work: ...

    def scaled_load(self, case: Any, factor: float) -> dict[str, Any]:
        """The workload parameters (dotted keys) that put ``factor`` times the case's load
        on it: how a planner asks how far its answer moves if the workload moves."""
        ...

    def headline_for(self, summaries: list[Any]) -> tuple[str, ...]:
        """The metrics the command line's table shows for these results."""
        ...


_ENGINES: dict[str, Engine] = {}


def register(engine: Engine) -> Engine:
    _ENGINES[engine.kind] = engine
    return engine


def engines() -> dict[str, Engine]:
    return dict(_ENGINES)


def engine_for(kind: str) -> Engine:
    """The engine of scenario kind ``kind``."""
    if kind not in _ENGINES:
        raise ConfigError.parameter("Scenario", "kind", "one of " + ", ".join(
            repr(k) for k in _ENGINES), kind, path=("scenario", "kind"))
    return _ENGINES[kind]


def engine_of(case: Any) -> Engine:
    """The engine whose case type ``case`` is."""
    for engine in _ENGINES.values():
        if isinstance(case, engine.case_type):
            return engine
    raise ConfigError.parameter("simulate", "case", "a case of one of the engines (" + ", ".join(
        e.case_type.__module__ + "." + e.case_type.__name__ for e in _ENGINES.values()) + ")",
        type(case).__name__)


def sections(engine: Engine) -> dict[str, type]:
    """The scenario sections of an engine: its case type's configuration fields."""
    return dict(section_fields(engine.case_type))
