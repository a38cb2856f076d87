"""The capacity planner: shipped questions against an exhaustive sweep, the closed form of
question (a), infeasible and bad questions, determinism on every executor, the plots."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from simhelp import ROOT

import simbatch
from simbatch.core.errors import ConfigError
from simbatch.core.results import summarize
from simbatch.core.streams import replication_seed
from simbatch.planning.executors import DaskExecutor, SerialExecutor, Task
from simbatch.planning.question import load_question
from simbatch.planning.recommend import recommend
from simbatch.planning.search import interval, statistic

QUESTIONS = sorted((ROOT / "questions").glob("*.toml"))
# reduced spaces where the full question is slow; the search and the sweep see the same
REDUCED = {
    "c-lingers-franzgo": ["workload.duration_s=1.25"],
    "c-lingers-librdkafka": ["workload.duration_s=1.25"],
    "d-client-stats-fix": ["workload.n_transactions=2048"],
}


def exhaustive(q) -> list[tuple[dict, np.ndarray, dict]]:
    """Every combination of the knobs' values, run at the question's replications on the
    same seeds, without the search: (params, per-run objective values, metrics)."""
    import itertools

    engine = q.scenario.engine
    keys = list(q.knobs)
    out = []
    for i, values in enumerate(itertools.product(*[q.knobs[k].grid() for k in keys])):
        params = dict(zip(keys, values))
        if not all(c.holds(float(params[c.name])) for c in q.knob_constraints):
            continue
        case = q.scenario.derive(q.base, params, f"sweep {i}", "test", keep=False)
        tasks = [Task(engine.kind, case, replication_seed(q.settings.seed, r), r,
                      simbatch.core.work.Bounds())
                 for r in range(q.settings.replications)]
        s = summarize(engine, case.name, SerialExecutor().run(tasks), params)
        o = q.objective
        runs = (np.full(len(s.runs), float(params[o.metric])) if o.metric in params
                else s.runs[o.metric].to_numpy())
        out.append((params, runs, s.metrics))
    return out


def best_of(q, sweep):
    o = q.objective
    sign = 1 if o.goal == "minimize" else -1
    feasible = [(p, v, m) for p, v, m in sweep
                if all(c.holds(m[c.name]) for c in q.metric_constraints)]
    return min(feasible, key=lambda x: sign * statistic(x[1], o.statistic))


@pytest.mark.parametrize("path", QUESTIONS, ids=[p.stem for p in QUESTIONS])
def test_recommendation_is_the_best_of_an_exhaustive_sweep(path):
    q = load_question(path, REDUCED.get(path.stem, []))
    rec = recommend(load_question(path, REDUCED.get(path.stem, [])))
    sweep = exhaustive(q)
    o = q.objective
    if not rec.feasible:                     # then nothing in the sweep is either
        assert not any(all(c.holds(m[c.name]) for c in q.metric_constraints)
                       for _, _, m in sweep)
        return
    best_params, best_values, _ = best_of(q, sweep)
    ours = next(v for p, v, _ in sweep if p == rec.params)
    assert rec.params == best_params or abs(
        statistic(ours, o.statistic) - statistic(best_values, o.statistic)) <= interval(
        best_values, o.statistic), (rec.params, best_params)


def test_a_agrees_with_the_closed_form_where_every_flush_is_a_timer_flush():
    rec = recommend(ROOT / "questions/a-fanout-cap.toml")
    q = rec.question
    case = q.scenario.cases[0]
    n = case.workload.n_transactions
    late = case.host.timer_overshoot_us / 1e6
    per_flush = case.batcher.timeout_ms / 1e3 + late + case.service.fixed_us / 1e6 + late
    checked = 0
    for cand in rec.candidates:
        cap = cand.params["workload.cap"]
        if cap * 3 < case.batcher.size:          # at most 3 inputs: never a size flush
            assert cand.value("block_time_s") == pytest.approx(
                math.ceil(n / cap) * per_flush, rel=1e-9), cap
            checked += 1
    assert checked >= 5
    # the smallest cap under the 50 ms budget, and the budget binds
    assert rec.params == {"workload.cap": 128} and rec.bindings[0].binds


def test_a_range_knob_is_refined_to_the_exact_boundary(tmp_path):
    text = (ROOT / "questions/a-fanout-cap.toml").read_text()
    text = text.replace('"workload.cap" = { values = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, '
                        '1024, 2048, 4096] }',
                        '"workload.cap" = { min = 1, max = 512, scale = "log", points = 5, '
                        'integer = true }')
    text = text.replace("n_transactions = 3000", "n_transactions = 300").replace(
        '"../scenarios', f'"{ROOT}/scenarios').replace("sensitivity = [0.5, 1.5]",
                                                         "sensitivity = []")
    text = text.replace("block_time_s <= 0.050", "block_time_s <= 0.030")
    path = tmp_path / "range.toml"
    path.write_text(text)
    rec = recommend(path)
    feasible = []
    for cap in range(1, 513):       # the same space, every value of it, the same 3 seeds
        q = rec.question
        case = q.scenario.derive(q.base, {"workload.cap": cap}, f"cap {cap}", "test",
                                 keep=False)
        block = np.mean([simbatch.simulate(case, replication_seed(1, r)).block_time_s
                         for r in range(3)])
        if block <= 0.030:
            feasible.append(cap)
    assert rec.params == {"workload.cap": min(feasible)}
    assert len(rec.candidates) < 40          # found by refinement, not by trying them all


def test_an_infeasible_question_names_the_constraint_and_the_closest(tmp_path):
    text = (ROOT / "questions/b-drain-concurrent.toml").read_text().replace(
        "[objective]", 'constraints = ["item_latency_p99_s <= 0.000001"]\n\n[objective]'
    ).replace('"../scenarios', f'"{ROOT}/scenarios').replace("sensitivity = [0.5, 1.5]",
                                                            "sensitivity = []")
    path = tmp_path / "impossible.toml"
    path.write_text(text)
    rec = recommend(path)
    assert not rec.feasible and rec.closest is not None
    text = rec.markdown()
    assert "No configuration meets the constraints" in text
    assert "`item_latency_p99_s <= 1e-06`" in text and "The closest:" in text
    best_p99 = min(c.value("item_latency_p99_s") for c in rec.candidates)
    assert rec.chosen.value("item_latency_p99_s") == best_p99


@pytest.mark.parametrize("edit,where", [
    (("metric = \"block_time_s\"", "metric = \"no_such_metric\""), "[objective] metric"),
    (("goal = \"minimize\"", "goal = \"least\""), "[objective] goal"),
    (("[knobs]", "[knobs]\n\"batcher.sise\" = { values = [1] }"), "[batcher] sise"),
    (("[knobs]", "[knobs]\n\"batcher.size\" = { min = 10 }"), "[knobs] batcher.size"),
    (("[knobs]", "[knobs]\n\"batcher.size\" = { values = [0] }"), "[batcher] size"),
    # a range over a whole-number field without integer = true: says to set it
    (("[knobs]", "[knobs]\n\"batcher.size\" = { min = 10, max = 100 }"),
     "[knobs] batcher.size: The 'integer' parameter of Knob must be true: batcher.size takes "
     "whole numbers"),
    (("seed = 7", "seed = 7\nconstraints = [\"p99 is small\"]"), "[question] constraints"),
    (("seed = 7", "seed = 7\nconstraints = [\"bogus_metric <= 3\"]"),
     "[question] constraints"),
    (("replications = 3", "replications = 0"), "[question] replications"),
    (('case = "fan-out 64 timer"', 'case = "no such case"'), "[question] case"),
    (("[current]", "[curent]"), "[curent]"),
])
def test_a_bad_question_is_refused_in_the_one_format(tmp_path, edit, where):
    text = (ROOT / "questions/b-drain-concurrent.toml").read_text().replace(
        '"../scenarios', f'"{ROOT}/scenarios')
    assert edit[0] in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(ConfigError) as info:
        load_question(path)
    message = str(info.value)
    assert where in message and " parameter of " in message and "; got " in message, message


def test_same_seed_same_recommendation_on_every_executor():
    from distributed import Client, LocalCluster

    path = ROOT / "questions/b-drain-concurrent.toml"
    serial = recommend(path)
    again = recommend(path)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        dask = recommend(path, executor=DaskExecutor(client=client))
    for other in (again, dask):
        assert other.params == serial.params
        pd.testing.assert_frame_equal(other.table, serial.table)
        assert other.markdown() == serial.markdown()


def test_the_recommendation_plot_draws_every_candidate_in_order(tmp_path):
    from simbatch.planning.plots import recommendation_plot

    rec = recommend(ROOT / "questions/b-drain-concurrent.toml")
    data = recommendation_plot(rec, tmp_path / "r.png")
    assert Path(data.path).read_bytes()[:4] == b"\x89PNG"
    series = data.series["objective"]
    assert set(series) == {"drain=False", "drain=True"}      # one line per other knob value
    for label, points in series.items():
        xs = [p[0] for p in points]
        assert xs == sorted(xs) == [4, 16, 64, 256, 1024, 4096]
        drain = label.endswith("True")
        for x, y, _ in points:
            cand = next(c for c in rec.candidates if c.params == {
                "batcher.drain": drain, "workload.cap": x})
            assert y == cand.objective(rec.question.objective)


def test_cli_recommend_writes_markdown_json_png_and_table(tmp_path, capsys):
    from simbatch.cli import main

    assert main(["recommend", str(ROOT / "questions/b-drain-single-producer.toml"),
                 "--workers", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "**Recommended:** `batcher.drain = True`" in out
    for suffix in (".md", ".json", ".png", ".csv"):
        assert (tmp_path / f"b-drain-single-producer{suffix}").stat().st_size > 100
