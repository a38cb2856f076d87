"""Contract tests over every configuration class and every engine.

* every configuration class is default-constructible;
* a bad value of every field of every section of every engine, given in a scenario file, is
  refused in the one format naming the file, the section path, the field and the value;
* every engine: the same seed gives identical output, a different seed different output;
* the Python API's cases check their own arguments.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

import pandas as pd
import pytest

import simbatch
from simbatch.core import config as cfg
from simbatch.core.distributions import Constant, Discrete, Empirical, Exponential, LogNormal
from simbatch.core.engine import engines, sections
from simbatch.core.errors import ConfigError
from simbatch.planning.scenario import ScenarioSettings, Tolerance, load_scenario

ENGINES = engines()


def config_classes() -> list[type]:
    """Every configuration class reachable from an engine's case, plus the shared ones."""
    seen: dict[type, None] = {}

    def visit(tp: typing.Any) -> None:
        for base, _ in cfg._leaves(tp):
            if cfg.is_config(base) and base not in seen:
                seen[base] = None
                for annotation in cfg.fields_of(base).values():
                    visit(annotation)

    for engine in ENGINES.values():
        visit(engine.case_type)
    for extra in (Constant, LogNormal, Exponential, Discrete, Empirical, Tolerance,
                  ScenarioSettings):
        visit(extra)
    return list(seen)


CLASSES = config_classes()


def test_every_engine_and_its_sections_are_reached():
    assert set(ENGINES) == {"batcher", "kafka", "contention"}
    names = {c.__name__ for c in CLASSES}
    assert {"BatcherConfig", "ServiceConfig", "StatsConfig", "ClientConfig", "HostConfig",
            "KafkaProducerConfig", "OuterBatcherConfig", "ConsumerConfig", "KafkaWorkload",
            "CPUConfig", "MapCosts", "MapWorkload", "BlockWorkload",
            "OpenLoopWorkload"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_default_constructible(cls):
    instance = cls()
    assert dataclasses.replace(instance) == instance


def _field_paths(engine) -> list[tuple[tuple[str, ...], str, type]]:
    """(section path, field, owner class) of every field of every section of ``engine``;
    a tagged section (the batcher's workload) contributes each kind's fields."""
    out = []

    def walk(path: tuple[str, ...], tp: typing.Any, kind: str | None) -> None:
        for base, meta in cfg._leaves(tp):
            if not cfg.is_config(base):
                continue
            tags = [m.tag for m in meta if isinstance(m, cfg.Tag)]
            for name, annotation in cfg.fields_of(base).items():
                inner = cfg._strip(annotation)[0]
                if cfg.is_config(inner):
                    walk((*path, name), inner, None)
                elif name != "kind":
                    out.append((path, name, base, tags[0] if tags else kind))

    for section, tp in sections(engine).items():
        walk((section,), cfg.fields_of(engine.case_type)[section], None)
    return out


CASES = [(kind, path, name, owner, tag) for kind, engine in ENGINES.items()
         for path, name, owner, tag in _field_paths(engine)]


def _toml(value) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


@pytest.mark.parametrize("kind,path,name,owner,tag", CASES,
                         ids=[f"{k}:{'.'.join(p)}.{n}" for k, p, n, _, _ in CASES])
def test_a_bad_value_of_every_field_is_refused_in_the_one_format(tmp_path, kind, path, name,
                                                                  owner, tag):
    lines = [f'[scenario]\nkind = "{kind}"\n', f"[{'.'.join(path)}]"]
    if tag is not None:
        lines.append(f'kind = "{tag}"')
    lines.append(f"{name} = \"not-a-valid-value\"")
    file = tmp_path / "bad.toml"
    file.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as info:
        load_scenario(file)
    message = str(info.value)
    assert message.startswith(f"{file}: [{'.'.join(path)}] {name}: "), message
    assert re.search(rf"The '{name}' parameter of {owner.__name__} must .+; "
                     r"got 'not-a-valid-value'\.$", message), message


def _engine_cases():
    from simbatch.batching import Case, ServiceConfig
    from simbatch.contention import ContentionCase, CPUConfig, MapWorkload
    from simbatch.kafka import KafkaCase, KafkaWorkload

    return {
        "batcher": Case(service=ServiceConfig(noise="lognormal", sigma=0.3)),
        "kafka": KafkaCase(workload=KafkaWorkload(n_messages=300, feed="poisson",
                                                  interval_ms=2.0)),
        "contention": ContentionCase(cpu=CPUConfig(cores=4),
                                     map=MapWorkload(n_tx=20_000, n_subtrees=8)),
    }


@pytest.mark.parametrize("kind", sorted(ENGINES))
def test_same_seed_same_output_different_seed_different_output(kind):
    case = _engine_cases()[kind]
    a, b, c = (simbatch.simulate(case, seed) for seed in (5, 5, 6))
    frames_a, frames_b = a.frames(), b.frames()
    assert frames_a.keys() == frames_b.keys()
    for name in frames_a:
        pd.testing.assert_frame_equal(frames_a[name], frames_b[name])
    engine = ENGINES[kind]
    assert engine.run_metrics(a) == engine.run_metrics(b)
    assert engine.run_metrics(a) != engine.run_metrics(c)


@pytest.mark.parametrize("kind", sorted(ENGINES))
def test_every_declared_metric_is_reported(kind):
    engine = ENGINES[kind]
    run = simbatch.simulate(_engine_cases()[kind], 1)
    assert set(engine.run_metrics(run)) == set(engine.metrics)


@pytest.mark.parametrize("kwargs,field", [
    ({"batcher": None}, "batcher"), ({"workload": 5}, "kind"), ({"service": "fast"}, "service"),
    ({"host": {"timer_overshoot_us": -1}}, "timer_overshoot_us"), ({"bogus": 1}, "bogus")])
def test_the_python_api_checks_a_case_s_own_arguments(kwargs, field):
    from simbatch.batching import Case

    with pytest.raises(ConfigError, match=rf"The '{field}' parameter of \S+ must"):
        Case(**kwargs)


def test_simulate_refuses_what_is_not_a_case():
    with pytest.raises(ConfigError, match="The 'case' parameter of simulate must"):
        simbatch.simulate({"workload": {}}, 1)
    with pytest.raises(ConfigError, match="The 'seed' parameter of simulate must"):
        simbatch.batching.simulate(simbatch.batching.Case(), -1)


def test_the_one_message_shape_is_built_in_one_place():
    # no module builds the message by hand: the template lives in simbatch/core/errors.py
    root = Path(simbatch.__file__).parent
    offenders = [p for p in root.rglob("*.py")
                 if "parameter of" in p.read_text() and p.name != "errors.py"
                 and "must be" in p.read_text() and "f\"The '" in p.read_text()]
    assert offenders == []
