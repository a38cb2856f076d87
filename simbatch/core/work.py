"""How much work a run is, checked before it starts, and a guard for what only the run shows.

Each engine estimates a case's work (:class:`Work`: simulation events and record memory)
from its parameters before anything runs; a scenario whose runs would exceed the bounds
(:class:`Bounds`) is refused with an error naming the parameter that makes it big, instead
of hanging or exhausting memory. What no estimate can know beforehand, how long a run lasts
and so how often a periodic timer fires, is guarded while it runs: a timer that has fired
``Bounds.max_events`` times stops the run with an error naming the timer's parameter.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import ConfigError


def _physical_memory() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 * 2.0**30


@dataclass(frozen=True)
class Work:
    """Estimated events and record bytes of one run; ``driver`` names the parameter that
    makes it big (``"section.field"``) and ``value`` its value, for the error."""

    events: float
    memory_bytes: float
    driver: str
    value: object = None


@dataclass(frozen=True)
class Bounds:
    """Per run: at most ``max_events`` events and ``max_memory_bytes`` of records; per
    scenario, at most ``max_total_events`` events over all cases and replications."""

    max_events: float = 2e8
    max_memory_bytes: float = 0.5 * _physical_memory()
    max_total_events: float = 1e9


# What a run costs besides its events (building the case's objects, its random streams,
# the summary), in events of the same cost: thousands of tiny replications are not free.
RUN_OVERHEAD_EVENTS = 2_000


def check_work(label: str, work: Work, replications: int, bounds: Bounds) -> float:
    """Raise if one run of a case is beyond ``bounds``; returns its events x replications."""
    if work.events > bounds.max_events:
        raise ConfigError.parameter(
            "the run", work.driver, f"small enough for a run of at most {bounds.max_events:.3g} "
            f"events (--max-events); case {label!r} needs about {work.events:.3g}",
            work.value, path=tuple(work.driver.split(".")))
    if work.memory_bytes > bounds.max_memory_bytes:
        raise ConfigError.parameter(
            "the run", work.driver, f"small enough for the run's records to fit in "
            f"{bounds.max_memory_bytes / 2**30:.3g} GiB; case {label!r} needs about "
            f"{work.memory_bytes / 2**30:.3g} GiB", work.value,
            path=tuple(work.driver.split(".")))
    return (work.events + RUN_OVERHEAD_EVENTS) * replications


def check_total(total_events: float, bounds: Bounds, replications: int) -> None:
    """Raise if all runs of a scenario together are beyond ``bounds``."""
    if total_events > bounds.max_total_events:
        raise ConfigError.parameter(
            "Scenario", "replications", f"few enough that all cases and replications stay "
            f"within {bounds.max_total_events:.3g} events; they need about "
            f"{total_events:.3g} (fewer replications, cases or sweep values)", replications,
            path=("scenario", "replications"))


class EventGuard:
    """Counts the firings of a run's periodic timers and stops a run that would not end.

    ``fired(owner, field, value)`` is called at each firing; past ``limit`` it raises
    :class:`ConfigError` naming the timer's parameter.
    """

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.count = 0

    def fired(self, owner: str, field: str, value: float, now: float) -> None:
        self.count += 1
        if self.count > self.limit:
            raise ConfigError.parameter(
                owner, field, f"large enough for the run to end within {self.limit:.3g} timer "
                f"firings (it had fired that often after {now:.3g} simulated seconds)", value)
