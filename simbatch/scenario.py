"""Scenario files (TOML): workload, configuration, named cases, sweep axes, published figures.

Layout of a scenario file::

    [scenario]                 # name, description, replications, seed, tolerance
    [host]                     # timer_overshoot_us: how late the host's timers fire
    [workload]                 # kind = "block" | "open_loop", then that workload's fields
    [batcher]                  # BatcherConfig fields
    [service]                  # ServiceConfig fields; model = "path" loads a models/ file
    [[cases]]                  # name, overrides per section, [cases.published] figures
    [sweep]                    # "section.field" = [values...]: cross product over cases

Every key is checked: an unknown key, a wrong type or a bad value raises
:class:`~simbatch.errors.ConfigError` naming the file, the key path and the value. A
``--set section.field=value`` override is applied to every case last.
"""

from __future__ import annotations

import copy
import itertools
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .batcher import BatcherConfig
from .errors import ConfigError, check_int, check_number
from .producers import BlockWorkload, OpenLoopWorkload
from .service import ServiceConfig
from .simulation import Case

BATCHER_SECTIONS = ("workload", "batcher", "service", "host")
KAFKA_SECTIONS = ("workload", "outer", "producer", "consumer")
CONTENTION_SECTIONS = ("cpu", "costs", "map")
CASE_SECTIONS = tuple(dict.fromkeys(BATCHER_SECTIONS + KAFKA_SECTIONS + CONTENTION_SECTIONS))
SECTIONS = ("scenario", "cases", "sweep", *CASE_SECTIONS)
WORKLOADS = {"block": BlockWorkload, "open_loop": OpenLoopWorkload}
SCENARIO_KEYS = ("name", "description", "kind", "replications", "seed", "tolerance")
TOLERANCE_KEYS = ("rel", "abs", "abs_below")
HOST_KEYS = ("timer_overshoot_us",)


@dataclass(frozen=True, kw_only=True)
class Tolerance:
    """A prediction matches a figure when within ``rel`` of it, or within ``abs`` (same unit
    as the figure) where the figure is below ``abs_below``."""

    rel: float = 0.10
    abs: float = 0.0
    abs_below: float = 0.0

    def __post_init__(self) -> None:
        for name in TOLERANCE_KEYS:
            check_number("Tolerance", name, getattr(self, name))

    def allowed(self, published: float) -> float:
        allowed = self.rel * abs(published)
        if abs(published) < self.abs_below:
            allowed = max(allowed, self.abs)
        return allowed

    def holds(self, predicted: float, published: float) -> bool:
        return abs(predicted - published) <= self.allowed(published)


@dataclass
class Scenario:
    """A loaded scenario: its cases, published figures by case, and run settings."""

    name: str
    path: Path
    cases: list
    published: dict[str, dict[str, float]] = field(default_factory=dict)
    tolerance: Tolerance = field(default_factory=Tolerance)
    replications: int = 3
    seed: int = 1
    description: str = ""
    kind: str = "batcher"


class _Where:
    """Prefixes errors with the file and the key path."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.path}: {key}: {message}")

    def unknown(self, key: str, allowed) -> ConfigError:
        return self.error(key, "unknown key; allowed here: " + ", ".join(sorted(allowed)))


def _read(path: Path) -> dict:
    if not path.is_file():
        raise ConfigError(f"{path}: no such scenario file.")
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}.") from None


def parse_override(text: str) -> tuple[str, Any]:
    """``"batcher.size=200"`` -> ``("batcher.size", 200)``; the value is read as TOML."""
    if "=" not in text:
        raise ConfigError(f"--set {text!r}: expected section.field=value.")
    key, raw = text.split("=", 1)
    key = key.strip()
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    if key.count(".") != 1 or key.split(".")[0] not in CASE_SECTIONS:
        raise ConfigError(f"--set {text!r}: the key must be section.field with section one "
                          f"of {', '.join(CASE_SECTIONS)}; got {key!r}.")
    return key, value


def _init_fields(cls) -> set[str]:
    return {f.name for f in fields(cls) if f.init}


def _build(cls, values: dict, where: _Where, section: str):
    allowed = _init_fields(cls)
    for key in values:
        if key not in allowed:
            raise where.unknown(f"[{section}] {key}", allowed)
    try:
        return cls(**values)
    except ConfigError as exc:
        raise where.error(f"[{section}]", str(exc)) from None
    except TypeError as exc:
        raise where.error(f"[{section}]", f"bad value: {exc}") from None


def _with_model(raw: dict, where: _Where, section: str) -> dict:
    """``model = "path"`` in a section loads that models/ file's table of the same name as
    the base; the scenario's own keys win."""
    values = dict(raw)
    model = values.pop("model", None)
    if model is None:
        return values
    if not isinstance(model, str):
        raise where.error(f"[{section}] model", f"must be a path string; got {model!r}.")
    model_path = (where.path.parent / model).resolve()
    if not model_path.is_file():
        raise where.error(f"[{section}] model", f"no such model file: {model!r}.")
    base = dict(_read(model_path).get(section, {}))
    base.update(values)
    return base


def _make_case(name: str, sections: dict, where: _Where) -> Case:
    host = sections.get("host", {})
    for key in host:
        if key not in HOST_KEYS:
            raise where.unknown(f"[host] {key}", HOST_KEYS)
    overshoot = host.get("timer_overshoot_us", 0.0)
    workload = dict(sections.get("workload", {}))
    kind = workload.pop("kind", "block")
    if kind not in WORKLOADS:
        raise where.error("[workload] kind", f"must be one of {', '.join(map(repr, WORKLOADS))}; "
                                             f"got {kind!r}.")
    batcher = {"timer_overshoot_us": overshoot, **sections.get("batcher", {})}
    service = {"timer_overshoot_us": overshoot,
               **_with_model(sections.get("service", {}), where, "service")}
    return Case(name=name, workload=_build(WORKLOADS[kind], workload, where, "workload"),
                batcher=_build(BatcherConfig, batcher, where, "batcher"),
                service=_build(ServiceConfig, service, where, "service"))


def _make_kafka_case(name: str, sections: dict, where: _Where):
    from .kafka_producer import KafkaProducerConfig
    from .kafka_sim import ConsumerConfig, KafkaCase, KafkaWorkload
    from .outer_batcher import OuterBatcherConfig

    outer = dict(sections.get("outer", {}))
    if outer.get("linger_ms") == "none":
        outer["linger_ms"] = None
    return KafkaCase(name=name,
                     workload=_build(KafkaWorkload, sections.get("workload", {}), where,
                                     "workload"),
                     outer=_build(OuterBatcherConfig, outer, where, "outer"),
                     producer=_build(KafkaProducerConfig, sections.get("producer", {}), where,
                                     "producer"),
                     consumer=_build(ConsumerConfig, sections.get("consumer", {}), where,
                                     "consumer"))


def _make_contention_case(name: str, sections: dict, where: _Where):
    from .bucketmap import ContentionCase, MapCosts, MapWorkload
    from .cpu import CPUConfig

    return ContentionCase(name=name,
                          cpu=_build(CPUConfig, _with_model(sections.get("cpu", {}), where,
                                                            "cpu"), where, "cpu"),
                          costs=_build(MapCosts, _with_model(sections.get("costs", {}), where,
                                                             "costs"), where, "costs"),
                          map=_build(MapWorkload, sections.get("map", {}), where, "map"))


KINDS = {"batcher": (BATCHER_SECTIONS, _make_case), "kafka": (KAFKA_SECTIONS, _make_kafka_case),
         "contention": (CONTENTION_SECTIONS, _make_contention_case)}


def _apply(sections: dict, dotted: str, value: Any, where: _Where, allowed) -> None:
    section, key = dotted.split(".", 1)
    if section not in allowed:
        raise where.error(dotted, f"the section must be one of {', '.join(allowed)}.")
    sections.setdefault(section, {})[key] = value


def _figures(figures: dict, where: _Where, case: str) -> dict[str, float]:
    out = {}
    for key, value in figures.items():
        try:
            out[key] = check_number("published", key, value, minimum=-float("inf"))
        except ConfigError as exc:
            raise where.error(f"[[cases]] {case}: published.{key}", str(exc)) from None
    return out


def load_scenario(path: str | Path, overrides: list[str] | tuple = ()) -> Scenario:
    """Read, check and expand a scenario file into cases.

    Examples
    --------
    >>> sc = load_scenario("scenarios/r1-decorate-fanout.toml")   # doctest: +SKIP
    >>> [c.name for c in sc.cases][:2]                            # doctest: +SKIP
    ['sequential', 'cap=1']
    """
    path = Path(path)
    where = _Where(path)
    data = _read(path)
    for key in data:
        if key not in SECTIONS:
            raise where.unknown(key, SECTIONS)
    meta = data.get("scenario", {})
    for key in meta:
        if key not in SCENARIO_KEYS:
            raise where.unknown(f"[scenario] {key}", SCENARIO_KEYS)
    kind = meta.get("kind", "batcher")
    if kind not in KINDS:
        raise where.error("[scenario] kind", f"must be one of {', '.join(map(repr, KINDS))}; "
                                             f"got {kind!r}.")
    allowed, make_case = KINDS[kind]
    for key in data:
        if key in CASE_SECTIONS and key not in allowed:
            raise where.error(key, f"is not a section of a {kind!r} scenario; allowed: "
                                   f"{', '.join(allowed)}.")
    tol_raw = meta.get("tolerance", {})
    for key in tol_raw:
        if key not in TOLERANCE_KEYS:
            raise where.unknown(f"[scenario.tolerance] {key}", TOLERANCE_KEYS)
    try:
        tolerance = Tolerance(**tol_raw)
        replications = check_int("scenario", "replications", meta.get("replications", 3),
                                 minimum=1)
        seed = check_int("scenario", "seed", meta.get("seed", 1))
    except ConfigError as exc:
        raise where.error("[scenario]", str(exc)) from None
    base = {s: data.get(s, {}) for s in allowed}
    parsed = [parse_override(o) if isinstance(o, str) else o for o in overrides]
    raw_cases = data.get("cases") or [{"name": meta.get("name", path.stem)}]
    sweep = data.get("sweep", {})
    axes = list(sweep.items())
    for key, values in axes:
        if not isinstance(values, list) or not values:
            raise where.error(f"[sweep] {key}", f"must be a non-empty list; got {values!r}.")
    cases, published = [], {}
    for i, raw in enumerate(raw_cases):
        raw = dict(raw)
        name = raw.pop("name", f"case{i}")
        figures = raw.pop("published", {})
        for key in raw:
            if key not in allowed:
                raise where.unknown(f"[[cases]] {name}: {key}", ("name", "published", *allowed))
        for combo in itertools.product(*[v for _, v in axes]) if axes else [()]:
            sections = copy.deepcopy(base)
            for section, values in raw.items():
                sections[section] = {**sections.get(section, {}), **values}
            label = name
            for (key, _), value in zip(axes, combo):
                _apply(sections, key, value, where, allowed)
                label += f" {key.split('.')[-1]}={value}"
            for key, value in parsed:
                _apply(sections, key, value, where, allowed)
            cases.append(make_case(label, sections, where))
            if figures:
                published[label] = _figures(figures, where, name)
    return Scenario(name=meta.get("name", path.stem), path=path, cases=cases,
                    published=published, tolerance=tolerance, replications=replications,
                    seed=seed, description=meta.get("description", ""), kind=kind)
