"""Scenario files (TOML): sections, named cases, sweep axes, published figures.

Layout of a scenario file::

    [scenario]            # name, description, kind, replications, seed, tolerance
    [<section>]           # one table per section of the engine's case (batcher: host,
                          #   workload, batcher, service with [service.client] and
                          #   [service.stats]; kafka: workload, outer, producer, consumer;
                          #   contention: cpu, costs, map)
    [[cases]]             # name, per-section overrides, published = { metric = figure }
    [sweep]               # "section.field" = [values...]: crossed with the cases

One configuration path: a section (or nested table) maps onto one configuration class, and
``model = "path"`` in any table merges the models/ file's table at the same path under that
table's own keys (recorded in the case's ``models``). Layers apply in order: the file's
sections (each over its model), a case's overrides, its sweep values, then ``--set
section.field=value`` overrides; the parameters a case's entry, sweep and ``--set`` set are
its ``params``, and its label is its name followed by its swept values.

Every value is checked before anything runs: an unknown key, a wrong type, a bad value, a
section given as a scalar, an unknown published metric, a file that is not UTF-8 TOML, each
raises :class:`~simbatch.core.errors.ConfigError` naming the file (and the layer the value
came from), the section path, the key and the value.
"""

from __future__ import annotations

import copy
import itertools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from ..core.config import Int, NonNeg, PosInt, Str, at, config, fields_of, is_config
from ..core.engine import Engine, engine_for, sections
from ..core.errors import ConfigError
from ..core.results import param_columns

META = "scenario"
CASES = "cases"
SWEEP = "sweep"
RESERVED = (META, CASES, SWEEP)


@config
class Tolerance:
    """A prediction matches a figure when within ``rel`` of it, or within ``abs`` (same unit
    as the figure) where the figure is below ``abs_below``."""

    rel: NonNeg = 0.10
    abs: NonNeg = 0.0
    abs_below: NonNeg = 0.0

    def allowed(self, published: float) -> float:
        allowed = self.rel * abs(published)
        if abs(published) < self.abs_below:
            allowed = max(allowed, self.abs)
        return allowed

    def holds(self, predicted: float, published: float) -> bool:
        return abs(predicted - published) <= self.allowed(published)


@config
class ScenarioSettings:
    """The ``[scenario]`` table."""

    name: Str | None = None
    description: Str = ""
    kind: Str = "batcher"
    replications: Annotated[PosInt, at.Le(1_000_000)] = 3
    seed: Annotated[Int, at.Ge(0)] = 1
    tolerance: Tolerance = Tolerance()


@dataclass
class Scenario:
    """A loaded scenario: its engine, its cases (each with its ``params`` and ``models``),
    published figures by case label, and run settings."""

    name: str
    path: Path
    engine: Engine
    cases: list[Any]
    published: dict[str, dict[str, float]] = field(default_factory=dict)
    tolerance: Tolerance = field(default_factory=Tolerance)
    replications: int = 3
    seed: int = 1
    description: str = ""
    axes: tuple[str, ...] = ()
    bases: dict[str, str] = field(default_factory=dict)      # label -> its [[cases]] name
    models: dict[str, dict[str, Any]] = field(default_factory=dict)   # file -> provenance
    origins: dict[str, dict[tuple[str, ...], str]] = field(default_factory=dict, repr=False)
    layers: dict[str, _Layers] = field(default_factory=dict, repr=False)

    @property
    def kind(self) -> str:
        return self.engine.kind

    def derive(self, base: str, params: dict[str, Any], label: str, origin: str,
               keep: bool = True) -> Any:
        """A new case: case ``base``'s values with the dotted ``params`` set over them (by
        ``origin``, e.g. a question's knob), labelled ``label``, its params those of
        ``base`` and these. Checked like any case; an error names where each value came
        from. ``keep``: remember it (its layers and origins) under ``label``."""
        layers = self.layers[base].copy()
        for key, value in params.items():
            layers.set(tuple(key.split(".")), value, origin)
        base_case = next(c for c in self.cases if c.name == base)
        merged = {**base_case.params, **params}
        self.origins[label] = layers.origin
        try:
            case = self.engine.case_type(name=label, params=merged, models=tuple(layers.models),
                                         **layers.values)
        except ConfigError as exc:
            raise self.locate(exc, label) from None
        finally:
            if not keep:
                del self.origins[label]
        if keep:
            self.layers[label] = layers
            self.models.update(layers.models)
        return case

    def merge(self, sections: dict[str, Any], origin: str, base_dir: Path) -> None:
        """Merge further section tables (a question's inline sections) into every case."""
        for case in self.cases:
            layers = self.layers[case.name]
            for section, table in sections.items():
                layers.merge(table, origin, (section,), base_dir)
            self.origins[case.name] = layers.origin
            self.models.update(layers.models)
        self.cases = [self._rebuild(case) for case in self.cases]

    def _rebuild(self, case: Any) -> Any:
        layers = self.layers[case.name]
        try:
            return self.engine.case_type(name=case.name, params=case.params,
                                         models=tuple(layers.models), **layers.values)
        except ConfigError as exc:
            raise self.locate(exc, case.name) from None

    def locate(self, error: ConfigError, label: str) -> ConfigError:
        """``error``, raised for case ``label``, said to come from where its value was set."""
        return error.at(_where(self.origins.get(label, {}), error.path, str(self.path),
                               self.engine.case_type))


# ------------------------------------------------------------------ reading files
def read_toml(path: Path, what: str = "scenario") -> dict[str, Any]:
    """A TOML file's tables; an unreadable, non-UTF-8 or invalid file is a ConfigError."""
    if not path.is_file():
        raise ConfigError.parameter(what.capitalize(), "file", f"an existing {what} file",
                                    str(path)).at(str(path))
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError.parameter(what.capitalize(), "file", "UTF-8 text",
                                    f"byte {exc.object[exc.start]:#04x} at offset {exc.start}"
                                    ).at(str(path)) from None
    except OSError as exc:
        raise ConfigError.parameter(what.capitalize(), "file", "a readable file",
                                    exc.strerror).at(str(path)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError.parameter(what.capitalize(), "file", "valid TOML",
                                    str(exc)).at(str(path)) from None


def parse_override(text: str) -> tuple[str, Any]:
    """``"batcher.size=200"`` -> ``("batcher.size", 200)``; the value is read as a TOML
    value, else taken as a string (``--set producer.semantics=librdkafka``)."""
    if not isinstance(text, str) or "=" not in text:
        raise ConfigError.parameter("--set", "override", "section.field=value", text)
    key, raw = (part.strip() for part in text.split("=", 1))
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    if not key or any(not part.isidentifier() for part in key.split(".")) or "." not in key:
        raise ConfigError.parameter("--set", "override", "section.field=value", text)
    return key, value


# ------------------------------------------------------------------ layered values
def _annotation(case_type: type, path: tuple[str, ...]) -> Any:
    from ..core.config import _leaves  # the members of a union, for a tagged section

    tp: Any = case_type
    for name in path:
        candidates = [b for b, _ in _leaves(tp) if is_config(b)] if not is_config(tp) else [tp]
        for cls in candidates:
            if name in fields_of(cls):
                tp = fields_of(cls)[name]
                break
        else:
            return None
    return tp


def _is_table(case_type: type, path: tuple[str, ...]) -> bool:
    """Whether the value at ``path`` is a table that layers merge into (a section or a
    nested configuration), rather than a value that replaces (a distribution table)."""
    if len(path) == 1:
        return True
    from ..core.config import _strip

    base, _ = _strip(_annotation(case_type, path))
    return is_config(base)


class _Layers:
    """Nested section values and, per leaf path, the layer that set it last."""

    def __init__(self, case_type: type, scenario_path: Path) -> None:
        self.case_type = case_type
        self.scenario_path = scenario_path
        self.values: dict[str, Any] = {}
        self.origin: dict[tuple[str, ...], str] = {}
        self.models: dict[str, dict[str, Any]] = {}

    def copy(self) -> _Layers:
        other = _Layers(self.case_type, self.scenario_path)
        other.values = copy.deepcopy(self.values)
        other.origin = dict(self.origin)
        other.models = dict(self.models)
        return other

    def merge(self, table: Any, origin: str, path: tuple[str, ...], base_dir: Path) -> None:
        """Merge ``table`` at ``path`` (a table path), loading its ``model = ...`` first."""
        if not isinstance(table, dict):
            raise ConfigError.parameter(
                "the scenario", ".".join(path), "a table", table, path=path).at(
                f"{origin}: [{'.'.join(path)}]")
        table = dict(table)
        model = table.pop("model", None)
        if model is not None:
            self._merge_model(model, origin, path, base_dir)
        for key, value in table.items():
            sub = (*path, key)
            if isinstance(value, dict) and _is_table(self.case_type, sub):
                self.merge(value, origin, sub, base_dir)
            else:
                self.set(sub, value, origin)

    def set(self, path: tuple[str, ...], value: Any, origin: str) -> None:
        node = self.values
        for name in path[:-1]:
            child = node.get(name)
            if not isinstance(child, dict):
                child = node[name] = {}
            node = child
        node[path[-1]] = copy.deepcopy(value)
        for known in [p for p in self.origin if p[:len(path)] == path]:
            del self.origin[known]
        self.origin[path] = origin

    def _merge_model(self, model: Any, origin: str, path: tuple[str, ...],
                     base_dir: Path) -> None:
        section = ".".join(path)
        where = f"{origin}: [{section}] model"
        if not isinstance(model, str):
            raise ConfigError.parameter("the scenario", "model", "a path to a models/ file",
                                        model, path=(*path, "model")).at(where)
        model_path = (base_dir / model) if not Path(model).is_absolute() else Path(model)
        try:
            data = read_toml(model_path, "model")
        except ConfigError as exc:
            raise ConfigError.parameter("the scenario", "model", "a readable models/ TOML "
                                        f"file ({exc.message})", model,
                                        path=(*path, "model")).at(where) from None
        node: Any = data
        for name in path:
            node = node.get(name) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            raise ConfigError.parameter("the scenario", "model", f"a models/ file with a "
                                        f"[{section}] table", model,
                                        path=(*path, "model")).at(where)
        if "model" in node:
            raise ConfigError.parameter("the scenario", "model", "a models/ file whose "
                                        f"[{section}] table loads no model itself", model,
                                        path=(*path, "model")).at(where)
        self.models[str(model_path)] = dict(data.get("provenance", {}))
        self.merge(node, f"{model_path} (model of {origin} [{section}])", path,
                   model_path.parent)


def _where(origins: dict[tuple[str, ...], str], path: tuple[str, ...], default: str,
           case_type: type) -> str:
    """Where the value at ``path`` came from: the layer, the section path (the longest
    prefix that is a table) and the key within it (dotted below a value's own table)."""
    if not path:
        return default
    depth = 1
    while depth < len(path) - 1 and _is_table(case_type, path[:depth + 1]):
        depth += 1
    section, key = ".".join(path[:depth]), ".".join(path[depth:])
    origin = origins.get(path)
    if origin is None:
        near = [o for p, o in origins.items() if p[:len(path)] == path or p[:-1] == path[:-1]]
        origin = near[-1] if near else default
    return f"{origin}: [{section}] {key}" if key else f"{origin}: [{section}]"


def _flatten(table: dict[str, Any], case_type: type, prefix: tuple[str, ...] = ()
             ) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        path = (*prefix, key)
        if key == "model":
            continue
        if isinstance(value, dict) and _is_table(case_type, path):
            out.update(_flatten(value, case_type, path))
        else:
            out[".".join(path)] = value
    return out


# ------------------------------------------------------------------ loading
def _meta(data: dict[str, Any], path: Path) -> ScenarioSettings:
    raw = data.get(META, {})
    if not isinstance(raw, dict):
        raise ConfigError.parameter("the scenario", META, "a table", raw).at(str(path))
    try:
        return ScenarioSettings(**raw)
    except ConfigError as exc:
        key = exc.path[-1] if exc.path else ""
        raise exc.at(f"{path}: [{'.'.join([META, *exc.path[:-1]])}] {key}") from None


def _check_top(data: dict[str, Any], engine: Engine, path: Path) -> dict[str, type]:
    secs = sections(engine)
    allowed = (*RESERVED, *secs)
    for key, value in data.items():
        if key not in allowed:
            raise ConfigError.parameter(
                f"a {engine.kind!r} scenario", key, "one of its tables (" + ", ".join(
                    allowed) + ")", value if not isinstance(value, dict) else "a table",
                path=(key,)).at(f"{path}: [{key}]")
    cases = data.get(CASES, [])
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        raise ConfigError.parameter("the scenario", CASES, "an array of tables ([[cases]])",
                                    cases).at(f"{path}: [[cases]]")
    sweep = data.get(SWEEP, {})
    if not isinstance(sweep, dict):
        raise ConfigError.parameter("the scenario", SWEEP, "a table of lists", sweep).at(
            f"{path}: [sweep]")
    for key, values in sweep.items():
        if not isinstance(values, list) or not values:
            raise ConfigError.parameter("the scenario", key, "a non-empty list of values",
                                        values).at(f"{path}: [sweep] {key}")
        if "." not in key or key.split(".")[0] not in secs:
            raise ConfigError.parameter("the scenario", key, "section.field with a section "
                                        "of " + ", ".join(secs), key).at(f"{path}: [sweep]")
    return secs


def _published(figures: Any, engine: Engine, where: str) -> dict[str, float]:
    if not isinstance(figures, dict):
        raise ConfigError.parameter("the case", "published", "a table of metric = figure",
                                    figures).at(where)
    out = {}
    for metric, value in figures.items():
        if metric not in engine.metrics:
            raise ConfigError.parameter(
                "the case", f"published.{metric}", f"a metric of a {engine.kind!r} case ("
                + ", ".join(engine.metrics) + ")", value).at(f"{where}.{metric}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or value != value or value in (float("inf"), float("-inf")):
            raise ConfigError.parameter("the case", f"published.{metric}", "a finite number",
                                        value).at(f"{where}.{metric}")
        out[metric] = float(value)
    return out


def load_scenario(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Scenario:
    """Read, check and expand a scenario file into cases.

    Examples
    --------
    >>> sc = load_scenario("scenarios/r1-decorate-fanout.toml")
    >>> [c.name for c in sc.cases][:2], sc.cases[1].params
    (['sequential', 'cap=1'], {'workload.cap': 1})
    """
    path = Path(path)
    data = read_toml(path)
    if not data:       # a file saved empty, or all comments: the defaults would run unasked
        raise ConfigError.parameter("the scenario file", "contents", "at least one table "
                                    "([scenario], [workload], ...: see scenarios/)",
                                    "nothing").at(str(path))
    return scenario_from_data(data, path, overrides)


def scenario_from_data(data: dict[str, Any], path: Path,
                       overrides: list[str] | tuple[str, ...] = ()) -> Scenario:
    """A scenario from tables already read (``path``: the file they came from, which errors
    name and ``model =`` paths are relative to)."""
    meta = _meta(data, path)
    try:
        engine = engine_for(meta.kind)
    except ConfigError as exc:
        raise exc.at(f"{path}: [scenario] kind") from None
    secs = _check_top(data, engine, path)
    base = _Layers(engine.case_type, path)
    for section in secs:
        if section in data:
            base.merge(data[section], str(path), (section,), path.parent)
    axes = list(data.get(SWEEP, {}).items())
    try:
        parsed = [parse_override(o) for o in overrides]
    except ConfigError as exc:
        raise exc.at(f"{path}: --set") from None
    swept = {key for key, _ in axes}
    for key, value in parsed:
        where = f"{path}: --set {key}"
        if key in swept:
            raise ConfigError.parameter(
                "--set", key, "a parameter the scenario does not sweep (remove it from "
                "[sweep] to set it)", value).at(where)
        if key.split(".")[0] not in secs:
            raise ConfigError.parameter("--set", key, "section.field with a section of "
                                        + ", ".join(secs), key).at(where)
    columns = param_columns([k for k, _ in axes])
    raw_cases = data.get(CASES) or [{"name": meta.name or path.stem}]
    scenario = Scenario(name=meta.name or path.stem, path=path, engine=engine, cases=[],
                        tolerance=meta.tolerance, replications=meta.replications,
                        seed=meta.seed, description=meta.description,
                        axes=tuple(k for k, _ in axes))
    for i, raw in enumerate(raw_cases):
        raw = dict(raw)
        name = raw.pop("name", f"case{i}")
        if not isinstance(name, str):
            raise ConfigError.parameter("the case", "name", "a string", name).at(
                f"{path}: [[cases]] #{i + 1}")
        origin = f"{path} [[cases]] {name!r}"
        figures = _published(raw.pop("published", {}), engine, f"{origin}: published")
        layers = base.copy()
        for section, table in raw.items():
            if section not in secs:
                raise ConfigError.parameter(
                    f"a {engine.kind!r} case", section, "one of name, published, " + ", ".join(
                        secs), table if not isinstance(table, dict) else "a table",
                    path=(section,)).at(f"{origin}: {section}")
            layers.merge(table, origin, (section,), path.parent)
        case_params = _flatten(raw, engine.case_type)
        for combo in itertools.product(*[values for _, values in axes]):
            case_layers = layers.copy()
            params = dict(case_params)
            label = name
            for (key, _), value in zip(axes, combo):
                case_layers.set(tuple(key.split(".")), value, f"{path} [sweep] {key!r}")
                params[key] = value
                label += f" {columns[key]}={value}"
            for key, value in parsed:
                case_layers.set(tuple(key.split(".")), value, f"{path} --set {key}={value!r}")
                params[key] = value
            if label in scenario.bases:
                raise ConfigError.parameter("the scenario", "cases", "cases with distinct "
                                            "names", label).at(f"{origin}: name")
            scenario.bases[label] = name
            scenario.origins[label] = case_layers.origin
            scenario.layers[label] = case_layers
            scenario.models.update(case_layers.models)
            try:
                case = engine.case_type(name=label, params=params,
                                        models=tuple(case_layers.models), **case_layers.values)
            except ConfigError as exc:
                raise scenario.locate(exc, label) from None
            scenario.cases.append(case)
            if figures:
                scenario.published[label] = figures
    return scenario
