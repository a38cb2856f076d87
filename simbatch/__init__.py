"""simbatch: a discrete-event simulator and capacity planner for batching pipelines.

``import simbatch`` registers the three engines (:mod:`simbatch.batching`,
:mod:`simbatch.kafka`, :mod:`simbatch.contention`) and gives the planning face's entry
points: :func:`load_scenario`, :func:`run_scenario`, :func:`simulate`.
"""

__version__ = "0.2.0"

from . import native  # noqa: E402

native.check()  # compiled modules (simbatch compile) run only as the sources compiled

from . import batching, contention, kafka  # noqa: E402  (registers the engines)
from .core.engine import engine_of  # noqa: E402
from .planning.scenario import load_scenario  # noqa: E402
from .planning.sweep import run_scenario  # noqa: E402


def simulate(case, seed: int = 0):
    """One run of any engine's case with ``seed`` (the run's own seed).

    >>> import simbatch
    >>> run = simbatch.simulate(simbatch.kafka.KafkaCase(), seed=1)
    >>> len(run.frames()["messages"])
    200
    """
    return engine_of(case).simulate(case, seed)


__all__ = ["__version__", "batching", "contention", "kafka", "load_scenario", "run_scenario",
           "simulate"]
