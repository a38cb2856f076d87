"""The batcher engine with the client's CPU, judged against the real go-batcher measured in
this test job (issue 11).

The fixture builds ``validate/gobatcher`` and runs its small grid here and now (62 cells of
go-batcher v1.1.0 and v2.0.6, 1480 blocks planned, about 45 s: a v1 cell whose block time is
the phase of the cycle it meets runs 100 blocks, each after an idle spell that gives it a
random phase, ``validate/gobatcher/run.go``, ``idleBefore``; a cell whose median block time
is not known to 15 % after its planned blocks gets more, up to 60, ``runGrid``); the model
-- the measured costs of ``models/gobatcher-loopback.toml``, scaled by the host's CPU against
the machine they were measured on (fitted on the run's two cycle cells, GOMAXPROCS 1 drain
mode at N = 16 and 64, ``fit_cpu_scale``), the timers of ``models/host-loopback.toml`` and
the run's own probes for the host's stalls and wake-ups -- predicts every other cell, and the
issue's figures are checked: median block time within 15 % on >= 90 % of the cells (none of
the small grid's cells is a fit cell of the costs) and none beyond 1.5x, drain mode's batch
composition at N = 16 and 64 within 20 points, the GOMAXPROCS 1 : 2 ratio within 15 %. The
measured and predicted table is printed (``-s``).

Without a Go toolchain, or without the Go module proxy (go-batcher and its dependencies are
fetched on the first build), the tests skip and say which.
"""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
import subprocess
import sys
import tomllib

import numpy as np
import pandas as pd
import pytest

from simbatch.batching.gocpu import COSTS
from validate.calibrate_gobatcher import FIT_COSTS, compare, covers, is_fit_cell, judge, report
from validate.gobatcher_host import fit_cpu_scale, host_from_probes, scaled
from validate.gobatcher_runs import (
    HARNESS,
    ROOT,
    cells_of,
    go_from_file,
    is_cycle_cell,
    load_run,
    speed_ratio_from,
)

_PROXY = re.compile(r"proxy\.golang\.org|dial tcp|no such host|lookup |i/o timeout|"
                    r"connection refused|GOPROXY|GOFLAGS=-mod=mod|module lookup disabled",
                    re.IGNORECASE)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    if shutil.which("go") is None:
        pytest.skip("go not on PATH: the harness drives the real go-batcher and needs the Go "
                    "toolchain")
    out = tmp_path_factory.mktemp("gobatcher")
    binary = out / "gobatcher"
    build = subprocess.run(["go", "build", "-o", str(binary), "."], cwd=HARNESS,
                           capture_output=True, text=True, timeout=900)
    if build.returncode != 0:
        last = (build.stderr.strip().splitlines() or ["(no output)"])[-1]
        if _PROXY.search(build.stderr):
            pytest.skip(f"the Go module proxy is not reachable, so go-batcher cannot be "
                        f"fetched: {last}")
        pytest.fail(f"go build of validate/gobatcher failed: {build.stderr}")
    run = subprocess.run([str(binary), "-grid", "small", "-out", str(out)], cwd=HARNESS,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    return out


def test_the_harness_s_own_go_tests_pass(small_run):
    # the harness's Go tests (its grids, the reason inference, the host file's wake-up
    # splice): the small_run fixture has built the module, or skipped saying why
    run = subprocess.run(["go", "test", "./..."], cwd=HARNESS, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.fixture(scope="module")
def judged(small_run):
    blocks, probes = load_run(small_run)
    cells = cells_of(blocks)
    host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", probes, blocks)
    go = go_from_file(ROOT / "models" / "gobatcher-loopback.toml")
    # the host's CPU against the costs' machine, fitted on this run's cycle cells (the
    # GOMAXPROCS 1 drain cells of 64 pool slots at N = 16 and 64), which are then not judged
    scale = fit_cpu_scale(cells, blocks, host, go)
    print("\n" + scale.summary())
    table = compare(cells, host, scaled(go, scale.factor), reps=100, fitted=scale.cells)
    verdict = judge(table, size_of=dict(zip(cells.cell, cells["size"].astype(int))))
    report(table, verdict, out=sys.stdout)
    return cells, table, verdict


def test_the_harness_measured_every_cell_and_probed_the_host(small_run):
    blocks, probes = load_run(small_run)
    info = tomllib.loads((small_run / "run.toml").read_text())
    extended = info["cells_extended"]
    per_cell = blocks.groupby("cell").size()
    # 1480 planned; each cell extended (-settle-reps 60) adds at most 60 - 3 blocks
    assert len(per_cell) == 62 and 1480 <= len(blocks) <= 1480 + 57 * extended
    assert 0 <= extended <= 62 and per_cell.max() <= 100
    assert probes is not None and set(probes.gomaxprocs) == {1, 2}
    # go-batcher v2's own trigger reasons agree with the batch lengths
    assert "v2_reason_mismatches = 0" in (small_run / "run.toml").read_text()


def test_no_small_grid_cell_is_a_fit_cell(judged):
    cells, _, _ = judged
    assert not cells.apply(is_fit_cell, axis=1).any()


# The figures that the model does not reach yet on the recorded full grids (measured on
# this VM on a quiet machine; the model's costs measured, none fitted, so every cell is a
# prediction: `python -m validate.calibrate_gobatcher --run validate/gobatcher/data/full9 --go
# models/gobatcher-loopback.toml --reps 30`): full9, each GOMAXPROCS 2 run packed as long as
# its measured block waited (one thread at a time), the host's CPU noise fitted on full9's
# GOMAXPROCS 1 drain cycles, the item channel's runtime lock modelled (gosync.Chan.lock),
# within 15 % on 95.1 % of the 998 cells, worst 3.49x, the GOMAXPROCS 1 : 2 ratio within
# 15 % on 93 % of 499 pairs, 1 of 24 composition cells off by more than 20 points (4 and 6
# of 24 on the runs of these cells alone, data/composition and data/processors), the runs'
# flush counts covering the measured range on 76.9 % of the cells (without the lock: 94.9 %,
# 5.24x, 94 %, 2 of 24 (6 and 8), 76.3 %). The real
# go-batcher misses the worst-cell figure against itself: four other full grids judged against
# full9 as if they were predictions give 94.5-96.3 % within 15 %, worst 2.56-6.80x, 0-2
# composition cells off, flush counts covering on 81-82 % (`--repeat`); against the range of
# the five runs' medians the model is within 15 % on 98.9 % of the cells and beyond 1.5x on
# 1 (drain/mc64/all/n256, sleep: 1.62x; without the lock 99.1 % and none).
# The first full grid with every v1 block at a random phase of its cycle (`full10`,
# 2026-12-06, same command): 96.7 % within 15 %, worst 3.51x, 3 cells beyond 1.5x (none
# v1), the ratio within 15 % on 95 %, 4 of 24 composition cells off, flush counts covering
# on 76.7 %; of its 174 v1 cells 3 beyond 15 %, worst 1.19x (full9's v1 cells: 10, 1.68x).
# The first with a cell's blocks extended until its median settles (`full11`, 2026-12-06
# night; 106 cells extended, a two-mode cell to 60 blocks) and the model's woken thread
# given the packed CPU once the running thread sleeps (scheduler.py, _release_held): 97.1 %
# within 15 %, worst 1.48x (the model before: 96.7 %, 1.68x), the ratio within 15 % on
# 96 %, 3 of 24 composition cells off, flush counts covering on 76.4 % (data/README.md,
# "Medians that settle").
# The worst cells are drain mode with a CPU-burning flush at GOMAXPROCS 2 and a pool of 4,
# where the real blocks collapse into a few large flushes in some runs and not in others
# (data/README.md). A few-flush block at GOMAXPROCS 2 is a lock convoy on the item channel:
# the worker sleeps on the channel's runtime lock while the other processor puts the rest of
# the block. The model's lock makes the sleeping-flush cells of 64 transactions collapse in
# 3-27 % of the runs (measured 7-60 % by run), but those with a CPU-burning flush rarely
# (0-3 % against 0-40 %), and it finds the lock held 2-4 times less often than the real
# runtime counted (data/README.md, "The channel's lock"). On a quiet machine the small grid
# measured in the job can meet the ratio figure and sometimes the first (88.7 % within 15 %,
# worst 1.85x, ratio 90 % in a run at b35601f). Since the harness gives each v1 block a
# random phase of its cycle and runs 100 blocks of the cells that phase decides (data/
# README.md, "A random phase for v1 blocks"), seven small grids on this VM (two of them in
# CI 115 and 116) read 93.5-98.4 % within 15 %, worst 1.18-1.80x (beyond 1.5x: drain mode
# at GOMAXPROCS 2 only; no v1 cell beyond 1.23x), ratio 87-100 %, 1-3 composition cells
# off. On another VM of the same kind (2026-12-07, slower wake-ups, more stalls; data/
# README.md, "A second machine of the same kind") three small grids read 85.5-90.3 %,
# worst 1.50-1.90x, ratio 81-87 %, 3-5 composition cells off: drain mode at GOMAXPROCS 2
# collapses sooner there, as the real runs of the full grid on the two machines do against
# each other (worst 3.04x). That VM's CPU is another generation (family 25 against 26), one
# transaction's cycle 1.3-1.5x the costs' model's: with every cost scaled by that factor,
# fitted on each run's two cycle cells (fit_cpu_scale, the fixture above), the three read
# 88.3-91.7 %, worst 1.42-1.86x, ratio 86-90 %, 3-4 composition cells off (data/README.md,
# "The host's CPU against the costs' machine"); CI 130 (the first fresh-clone run with it)
# met the median and ratio tests. The full grids so, the shipped model: full11 97.6 %
# within 15 %, worst 1.48x, 3 of 24 composition cells off, ratio 96 %; full12 97.3 %,
# 1.47x, 2, 98 %; full13 96.9 %, 3.59x, 2, 95 % (unscaled 92.3 %, 4.14x, 5), and against
# the range of the three runs' medians 98.6 %, none beyond 1.5x (worst 1.49x), where
# full12's and full11's real blocks judged against full13 read 94.3 and 92.6 %, worst 3.04
# and 4.64x. Measured in this job, so not strict.
SHORT = pytest.mark.xfail(strict=False, reason="issue 11 open: how often drain mode at "
                          "GOMAXPROCS 2 collapses into a few large flushes is not yet "
                          "predicted per cell (see comment)")


@SHORT
def test_median_block_time_within_15_percent_on_90_percent_of_cells(judged):
    _, _, verdict = judged
    assert verdict.within >= 0.90, f"{verdict.within:.0%} of cells within 15 %"
    assert verdict.worst <= 1.5, f"worst cell {verdict.worst:.2f}x"


@SHORT
def test_drain_composition_shares_within_20_points(judged):
    _, _, verdict = judged
    assert len(verdict.share_rows) == 8           # N = 16, 64 x GOMAXPROCS 1, 2 x 2 flushes
    assert verdict.shares_ok, verdict.share_rows[["cell", "meas_few", "pred_few", "meas_one",
                                                  "pred_one"]]


@SHORT
def test_gomaxprocs_one_to_two_ratio_within_15_percent(judged):
    _, _, verdict = judged
    assert verdict.procs_ok, verdict.procs_rows


def test_flush_counts_cover_the_measured_range_where_drain_is_off(judged):
    # drain off, a block's batches are nearly the same in every run, measured and predicted;
    # full9: 99.7 % of 574 cells covered (full6: 99.5 %)
    _, table, _ = judged
    fixed = table[~table.drain]
    assert covers(fixed).mean() >= 0.9


@SHORT
def test_flush_counts_cover_the_measured_range_where_drain_is_on(judged):
    # full9: of 424 drain cells, the ranges meet on 92.2 %, the measured median lies in the
    # predicted range on 77.5 %, covered on 44.4 % (without the CPU noise 90.3, 76.9,
    # 40.8 %; full6 then: 91.5, 75.9, 45.8 %); nearly every
    # miss is a cell whose measured blocks sometimes collapse into fewer flushes than any of
    # the model's runs
    _, table, _ = judged
    assert covers(table[table.drain]).mean() >= 0.9


# ------------------------------------------------------------------ on the recorded run
RECORDED = HARNESS / "data" / "full6"


def test_the_recorded_run_gives_the_host_its_stalls_wake_ups_and_speeds():
    blocks, probes = load_run(RECORDED)
    host, summary = host_from_probes(ROOT / "models" / "host-loopback.toml", probes, blocks)
    # two threads busy lose more to the rest of the machine than one (per second of running)
    assert host.stall_per_s[1] > host.stall_per_s[0] > 0
    assert len(host.wake_us) == len(host.quantiles) == len(host.backoff_us)
    # runqgrab's usleep(3) is stretched to tens of microseconds by the kernel's timer slack
    assert 30 < summary["backoff_us_p50"] < 200
    # the two processors' speeds differ by well under a few per cent in most blocks
    assert summary["speed_ratio_blocks"] >= 100
    assert 1.0 <= summary["speed_ratio_p50"] < 1.03      # full6: 1.0000, full5: 1.005
    assert len(host.speed_ratio) == len(host.quantiles) and host.speed_ratio[0] >= 1.0
    assert host.speed_ratio[-1] > 1.0                      # but they do differ in some


def _spin_block(durations_a, durations_b, gap_us=5.0):
    """A GOMAXPROCS-2 spin block's flushes: two processors taking turns, each starting its
    next flush ``gap_us`` after its last, the second half a period behind the first."""
    rows = []
    for durations, t in ((durations_a, 0.0), (durations_b, 250.0)):
        for d in durations:
            rows.append({"cell_no": 7, "rep": 0, "start_us": t, "end_us": t + d})
            t += d + gap_us
    flushes = pd.DataFrame(rows).sort_values("start_us")
    blocks = pd.DataFrame([{"cell_no": 7, "rep": 0, "flush": "spin", "gomaxprocs": 2}])
    return blocks, flushes


def test_the_speed_ratio_is_the_two_processors_median_flush_ratio():
    blocks, flushes = _spin_block([500.0] * 30, [510.0] * 29 + [4000.0])   # one long stall
    ratio = speed_ratio_from(blocks, flushes)
    assert ratio.loc[(7, 0)] == pytest.approx(1.02)
    # too few flushes on a processor to tell: not a measurement
    blocks, flushes = _spin_block([500.0] * 30, [510.0] * 5)
    assert np.isnan(speed_ratio_from(blocks, flushes).loc[(7, 0)])
    # sleep flushes say nothing about the processors' speeds
    assert speed_ratio_from(blocks.assign(flush="sleep"), flushes).empty


def test_wake_ups_come_from_the_steal_probe_or_else_from_the_host_file():
    file_host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", None)
    probe = {"gomaxprocs": 2, "busy_s": 0.01, "stall_us": "", "loadavg_1m": 0.5,
             "backoff_us": "70 80 90"}
    steal = pd.DataFrame([{**probe, "wake_steal_us": "20 25 30"}])
    host, summary = host_from_probes(ROOT / "models" / "host-loopback.toml", steal)
    # the steal samples are the wake-up as they are: no back-off taken out of them
    assert min(host.wake_us) == 20.0 and max(host.wake_us) == 30.0
    assert summary["wake_us_p50"] == 25.0 and summary["backoff_us_p50"] == 80.0
    # a run probed before the steal probe: its samples hold a back-off each; the host's
    old = pd.DataFrame([{**probe, "wake_us": "85 90 95"}])
    host, summary = host_from_probes(ROOT / "models" / "host-loopback.toml", old)
    assert host.wake_us == file_host.wake_us and "host file" in summary["wake_us_p50"]
    assert min(host.backoff_us) == 70.0


def test_a_run_probed_at_gomaxprocs_2_only_gives_the_stalls_of_two_threads():
    # validate/gobatcher/data/locks/: GOMAXPROCS 2 cells only, so only two-thread probes
    probe = {"gomaxprocs": 2, "busy_s": 0.5, "stall_us": "30 40 50 60", "loadavg_1m": 0.5}
    host, summary = host_from_probes(ROOT / "models" / "host-loopback.toml",
                                     pd.DataFrame([probe]))
    rate = 4 / (0.5 - 180e-6)
    assert host.stall_per_s == (0.0, pytest.approx(rate, abs=0.01))
    assert set(host.stall_us) == {"2"} and min(host.stall_us["2"]) == 30.0
    assert "stalls_1" not in summary and summary["stalls_2"].startswith("8 per s")


PROFILES = [HARNESS / "data" / "dispatch", HARNESS / "data" / "profile-timer"]
"""The two profiled cells the shipped model's costs come from: drain on, 3 items a flush;
drain off, 100 items a flush (data/README.md)."""


def test_the_costs_are_measured_from_two_cells_profiles(tmp_path):
    # nothing in the shipped model is fitted to block times: the costs the fit used to find
    # are what the recorded CPU profiles of the real pipeline give (each goroutine's CPU per
    # flush, item or transaction, scaled to the process's CPU, less what the model charges
    # apart); a drain cell and a drain-off cell tell per-flush from per-item costs
    from validate.gobatcher_profile import PROFILED, costs_from_profile
    from validate.gobatcher_runs import fitted_cells_of

    if shutil.which("go") is None:
        pytest.skip("go not on PATH: the profile is read with go tool pprof")
    shipped = ROOT / "models" / "gobatcher-loopback.toml"
    model = go_from_file(shipped)
    # the model counts switches and selects on the host of the run its command names
    run = ROOT / tomllib.loads(shipped.read_text())["provenance"]["run"]
    blocks, probes = load_run(run)
    host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", probes, blocks)
    base = go_from_file(ROOT / "models" / "gobatcher-costs-loopback.toml")
    costs, about = costs_from_profile(PROFILES, base, host)
    assert set(costs) == set(PROFILED) >= set(FIT_COSTS)
    for name in PROFILED:
        assert costs[name] == pytest.approx(getattr(model, name), abs=0.05), name
    assert fitted_cells_of(shipped) == 0 and "# fitted" not in shipped.read_text()
    # per flush beyond the hand-off: clock reads, inflight, the pool; a four-case select
    # blocking, and finding an item; the flush goroutine's dispatchAndRecord (the drain
    # profile's 1.36 us) and, per item, the harness's completion
    assert 100 < costs["dispatch_ns"] < 2000 and 50 < costs["select_ns"] < 2000
    assert 30 < costs["select_ready_ns"] < costs["select_ns"]
    assert 1000 < costs["flush_ns"] < 3000 and 10 < costs["done_ns"] < 500
    assert 50 < costs["put_ns"] < 1000 and 100 < costs["switch_ns"] < 1000
    assert costs["cold_ns"] == 0.0
    # drain on, one processor: one flush per transaction, ~5 switches each (test_gocpu
    # counts them), no select finds an item waiting; drain off: two of three items do
    assert 4 < about["dispatch"]["switches_per_transaction"] < 6
    assert about["dispatch"]["ready_selects_per_item"] < 0.01
    assert 0.5 < about["profile-timer"]["ready_selects_per_item"] < 0.8
    assert all(p["process_cpu_s"] > p["profiled_s"] for p in about["profiles"])
    with pytest.raises(ValueError, match=str(tmp_path)):
        costs_from_profile([tmp_path], base, host)


def test_a_block_of_2856_transactions_is_predicted_from_the_profiles_of_smaller_ones():
    # held out: the costs come from blocks of 64 and 1000 transactions (PROFILES); a
    # profile of the first kind of cell at 2856 transactions (data/profile-n2856, 15,000
    # blocks) was measured beside them and used for nothing else. Its median block time and the
    # pipeline goroutines' CPU per transaction, each within 10 %
    import numpy as np

    from simbatch.batching.engine import simulate
    from simbatch.core.streams import replication_seed
    from validate.gobatcher_profile import profiled_run
    from validate.gobatcher_runs import case_for

    if shutil.which("go") is None:
        pytest.skip("go not on PATH: the profile is read with go tool pprof")
    pr = profiled_run(HARNESS / "data" / "profile-n2856")
    cell = next(pr.cells.itertuples())
    assert int(cell.n_tx) == 2856 and pr.about["transactions"] > 40_000_000
    measured_ns = sum(pr.cpu[n] for n in ("txn", "driver", "pool", "scheduler", "worker"))
    measured_ns /= pr.txns
    host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", None)
    model = go_from_file(ROOT / "models" / "gobatcher-loopback.toml")
    runs = [simulate(case_for(cell, host, model), replication_seed(1, r)) for r in range(5)]
    predicted_ns = float(np.mean([r.go_cpu_s for r in runs])) / int(cell.n_tx) * 1e9
    print(f"CPU per transaction: measured {measured_ns:.0f} ns, predicted {predicted_ns:.0f} ns;"
          f" median block: measured {np.median(cell.block_times) * 1e3:.2f} ms, predicted "
          f"{np.median([r.block_time_s for r in runs]) * 1e3:.2f} ms")
    assert predicted_ns == pytest.approx(measured_ns, rel=0.10)
    assert np.median([r.block_time_s for r in runs]) == pytest.approx(
        np.median(cell.block_times), rel=0.10)


def test_a_profile_of_a_cell_it_cannot_read_is_refused_with_the_path(tmp_path):
    # the cell must be GOMAXPROCS 1, v2.0.6, a pool, a sleep flush, errgroup fan-out: the
    # costs are read off its goroutines
    from validate.gobatcher_profile import costs_from_profile

    src = HARNESS / "data" / "dispatch"
    for name in ("cpu.prof", "run.toml"):
        shutil.copy(src / name, tmp_path / name)
    blocks = pd.read_csv(src / "blocks.csv.gz", nrows=3)
    blocks.assign(gomaxprocs=2).to_csv(tmp_path / "blocks.csv", index=False)
    host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", None)
    base = go_from_file(ROOT / "models" / "gobatcher-costs-loopback.toml")
    with pytest.raises(ValueError, match=r"blocks\.csv.*GOMAXPROCS 1"):
        costs_from_profile([tmp_path], base, host)


def test_each_simulated_run_is_packed_as_long_as_its_measured_block_waited():
    from types import SimpleNamespace

    from validate.gobatcher_host import packed_host

    host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", None)
    cell = SimpleNamespace(gomaxprocs=2, runq_waits=[0.0005, 0.0121])
    runs = [packed_host(cell, host, r).packed_us for r in range(3)]
    assert [set(p) for p in runs] == [{500.0}, {12100.0}, {500.0}]     # paired, cycling
    assert len(runs[0]) == len(host.quantiles)
    # one processor cannot be packed with itself; runs from before the measurement: as is
    assert packed_host(SimpleNamespace(gomaxprocs=1, runq_waits=[0.01]), host, 0) is host
    assert packed_host(SimpleNamespace(gomaxprocs=2, runq_waits=[]), host, 0) is host
    # a recorded run without the column gives every cell empty waits
    assert (cells_of(load_run(RECORDED)[0]).runq_waits.str.len() == 0).all()


def test_a_cell_taken_as_a_pandas_row_is_simulated_with_its_own_batcher_size():
    # cells.iloc[i] (a Series, as in a notebook) has .size = its number of fields (21), not
    # the size column: taken at face value it simulated a 4,096-item batcher as a 21-item one
    from validate.gobatcher_runs import case_for

    cells = cells_of(load_run(RECORDED)[0])
    host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", None)
    go = go_from_file(ROOT / "models" / "gobatcher-loopback.toml")
    big = cells[cells["size"] == 4096].index[0]
    row, tup = cells.loc[big], next(cells.loc[[big]].itertuples())
    assert row.size != 4096                                  # the trap itself
    assert case_for(row, host, go) == case_for(tup, host, go)
    assert case_for(row, host, go).batcher.size == 4096


def test_the_judge_takes_a_selection_without_drain_composition_cells():
    # `--only` may leave no drain, cap = all cell: the composition check has nothing to say
    table = pd.DataFrame([{"cell": f"p{p}/v2.0.6/s100-t10ms/timer/mc0/all/n16/k3/sleep500us",
                           "gomaxprocs": p, "n_tx": 16, "drain": False, "fit": False,
                           "meas_p50_s": 0.011, "pred_p50_s": 0.0115} for p in (1, 2)])
    verdict = judge(table.assign(ratio=table.pred_p50_s / table.meas_p50_s))
    assert verdict.shares_ok and verdict.share_rows.empty
    assert verdict.within == 1.0 and verdict.procs_ok


def test_the_fit_improves_the_fit_cells_of_the_recorded_run():
    import dataclasses

    from validate.calibrate_gobatcher import _log_error, fit

    blocks, probes = load_run(RECORDED)
    cells = cells_of(blocks)
    host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", probes, blocks)
    start = go_from_file(ROOT / "models" / "gobatcher-costs-loopback.toml")
    few = cells[cells.apply(is_fit_cell, axis=1) & (cells.n_tx == 1000)
                & (cells.gomaxprocs == 1)].head(4)
    fitted, values = fit(few, host, start, evaluations=12)
    assert set(values) == set(FIT_COSTS) == {"spawn_ns", "switch_ns", "cold_ns", "put_ns",
                                             "flush_ns"}
    assert _log_error(few, host, fitted, 1) < _log_error(few, host, start, 1)
    # every fitted cost moves the fit cells' block times (a cost they do not see would drift
    # wherever the optimiser leaves it), and wakep_ns, which they do not see, is not fitted
    base = _log_error(few, host, start, 1)
    for name in (*FIT_COSTS, "wakep_ns"):
        tripled = dataclasses.replace(start, **{name: 3 * max(getattr(start, name), 200.0)})
        moved = _log_error(few, host, tripled, 1) != base
        assert moved == (name in FIT_COSTS), name


# ------------------------------------------------------------------ the real system against itself
def _blocks(times_ms: dict[str, list[float]], flushes: int = 16) -> pd.DataFrame:
    """Harness block rows for drain, cap = all cells at N = 16, one per block time given."""
    rows = []
    for cell, times in times_ms.items():
        procs = int(cell[1])
        for rep, t in enumerate(times):
            rows.append({"cell": f"p{procs}/v2.0.6/s4096-t5ms/drain/mc0/all/n16/k3/{cell[3:]}",
                         "gomaxprocs": procs, "version": "v2.0.6", "timer": "first-item",
                         "size": 4096, "timeout_ms": 5.0, "drain": True, "max_concurrent": 0,
                         "fanout": "errgroup", "cap": "all", "n_tx": 16, "inputs_per_tx": 3,
                         "flush": "sleep", "flush_us": 500, "block_time_s": t / 1e3,
                         "n_flushes": flushes, "first_flush_s": math.nan, "loadavg_1m": 0.5})
    return pd.DataFrame(rows)


def test_a_run_judged_against_itself_meets_every_figure():
    from validate.calibrate_gobatcher import compare_runs

    cells = cells_of(_blocks({"p1/a": [2.0, 2.2, 2.1], "p2/a": [1.5, 1.4, 1.6]}))
    verdict = judge(compare_runs(cells, cells))
    assert verdict.holds and verdict.within == 1.0 and verdict.worst == 1.0
    assert "composition 0 of 2 cells" in verdict.summary()


def test_a_second_run_is_scored_as_a_prediction_would_be():
    from validate.calibrate_gobatcher import compare_runs

    one = cells_of(_blocks({"p1/a": [2.0, 2.0, 2.0], "p1/b": [10.0, 10.0, 10.0]}))
    # the second run: cell a twice as slow and made of one flush per block, cell b the same
    two = cells_of(pd.concat([_blocks({"p1/a": [4.0, 4.0, 4.0]}, flushes=1),
                              _blocks({"p1/b": [10.0, 10.0, 10.0]})]))
    table = compare_runs(one, two)
    assert list(table.ratio) == [2.0, 1.0]
    verdict = judge(table)
    assert verdict.within == 0.5 and verdict.worst == 2.0 and not verdict.shares_ok
    # a cell the second run lacks is left out, not compared with nothing
    assert list(compare_runs(one, two.iloc[:1]).cell) == [one.cell[0]]


def test_flush_counts_are_judged_by_whether_the_runs_cover_the_measured_range():
    from validate.calibrate_gobatcher import compare_runs, flush_ranges

    table = pd.DataFrame({
        "fit": [False, False, False, True],
        # measured 2..64 flushes: the model's 9..64 meets it but misses the collapsed blocks
        "meas_flushes": [(2, 34, 64), (16, 16, 16), (3, 20, 40), (1, 1, 1)],
        "pred_flushes": [(9, 63, 64), (16, 16, 16), (1, 25, 50), (64, 64, 64)],
    })
    # the fit cell (last) is left out; the second and third cover theirs
    assert flush_ranges(table) == (2 / 3, 1.0)
    one = cells_of(_blocks({"p1/a": [2.0, 2.0]}))
    two = cells_of(_blocks({"p1/a": [2.0, 2.0]}, flushes=1))
    verdict = judge(compare_runs(one, two))
    assert (verdict.flushes_cover, verdict.flushes_overlap) == (0.0, 0.0)
    assert not verdict.holds and "cover the measured range on 0%" in verdict.summary()


def test_the_model_is_judged_against_the_range_of_the_runs_medians():
    from validate.calibrate_gobatcher import beyond_range

    runs = [cells_of(_blocks({"p1/a": [2.0], "p1/b": [10.0], "p1/c": [5.0]})),
            cells_of(_blocks({"p1/a": [8.0], "p1/b": [12.0], "p1/c": [5.0]}))]
    table = pd.DataFrame({"cell": runs[0].cell, "pred_p50_s": [0.005, 0.006, 0.010]})
    factor = beyond_range(table, runs)
    # a: inside 2-8 ms; b: 6 ms is 10/6 below the range 10-12; c: 10 ms is 2x above 5 ms
    assert list(factor.round(4)) == [1.0, round(10 / 6, 4), 2.0]


def test_two_real_runs_of_the_full_grid_differ_by_more_than_the_worst_cell_goal():
    # the issue asks for no cell beyond 1.5x; the real go-batcher does not meet that against
    # itself: two full grids measured on this machine when it was quiet (full4 at 20:14 UTC,
    # full9 at 15:17 UTC) agree within 15 % on 96 % of the cells, but drain mode's collapse is
    # bistable, so some cells' medians move more than 1.5x between the runs
    from validate.calibrate_gobatcher import compare_runs

    one = cells_of(load_run(HARNESS / "data" / "full9")[0])
    two = cells_of(load_run(HARNESS / "data" / "full4")[0])
    verdict = judge(compare_runs(one, two), size_of=dict(zip(one.cell, one["size"])))
    assert verdict.n_cells == len(one) == 998
    assert verdict.within >= 0.90 and verdict.procs_within >= 0.90
    assert verdict.worst > 1.5
    # six cells (full4 against full9), most of them drain mode with a CPU-burning flush
    ratio = compare_runs(one, two).ratio
    assert (np.maximum(ratio, 1 / ratio) > 1.5).sum() >= 3


def test_cells_whose_real_median_moves_between_machines_are_predicted_inside_its_range():
    # full11 and full12 (2026-12-06's VM) and full13 (2026-12-07's, another VM of the same
    # kind): five cells' real medians span more than 1.5x over the three runs: four drain
    # cells (pool 4, a CPU-burning flush, GOMAXPROCS 2, N = 1,000 and 2,856: 55-90 ms on
    # 12-07, 148-269 ms on 12-06; a block collapses into one flush once the two processors'
    # flush cycles fall into step, sooner on 12-07's machine, whose hand-off cycle is 2.5x
    # slower; data/README.md, "A second machine of the same kind") and one timer cell
    # (cap = all, N = 2,856, spin: 10.8-16.6 ms). No one run is the cell's value, so the
    # model, with full13's host, is judged against the range: its median inside it or
    # within 15 % of it (measured: inside for four, 1.14x above the highest for one)
    from validate.calibrate_gobatcher import beyond_range

    blocks, probes = load_run(HARNESS / "data" / "full13")
    runs = [cells_of(blocks)] + [cells_of(load_run(HARNESS / "data" / name)[0])
                                 for name in ("full12", "full11")]
    medians = pd.concat([r.set_index("cell").block_times.map(np.median) for r in runs], axis=1)
    moving = medians.index[medians.max(axis=1) > 1.5 * medians.min(axis=1)]
    assert len(moving) >= 4
    host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", probes, blocks)
    table = compare(runs[0][runs[0].cell.isin(moving)], host,
                    go_from_file(ROOT / "models" / "gobatcher-loopback.toml"), reps=100)
    factor = beyond_range(table, runs)
    assert len(factor) == len(moving)
    assert (factor <= 1.15).all(), factor
    # against full13 alone the same predictions are up to 4x off
    assert (np.maximum(table.ratio, 1 / table.ratio) > 1.5).any()


def test_the_host_cpu_scale_fitted_on_the_cycle_cells_predicts_the_other_machine_s_cells():
    # The same harness on two VMs of the same kind but another CPU family (AMD EPYC family
    # 26 on 2026-12-06, full12; family 25 on 2026-12-07, full13) read one transaction's
    # cycle at GOMAXPROCS 1 (the cycle cells' median gap between flush starts) at 3.70 and
    # 5.05 us, where the costs' model reads 3.64: one factor on every cost, fitted on those
    # eight cells of the judged run, is the host's speed (data/README.md, "The host's CPU
    # against the costs' machine"). Predicted with it, not fitted: the drain-off cells of
    # N = 2856 with a sleep flush, whose block time is mostly the client's CPU (spawns,
    # Puts, receives, completions); on full13 94.6 % within 15 % with it (x1.39), 82.1 %
    # without (5 runs a cell; 56 cells); the whole grid 96.9 % / 3.59x against 92.3 % /
    # 4.14x, and full12's 97.3 % / 1.47x against 97.2 % / 1.48x (100 runs a cell).
    go = go_from_file(ROOT / "models" / "gobatcher-loopback.toml")
    factors = {}
    for name in ("full12", "full13"):
        blocks, probes = load_run(HARNESS / "data" / name)
        cells = cells_of(blocks)
        host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", probes, blocks)
        scale = fit_cpu_scale(cells, blocks, host, go)
        assert len(scale.rows) == 8 and scale.cells.isdisjoint(
            cells[~cells.apply(is_cycle_cell, axis=1)].cell)
        factors[name] = scale.factor
    assert 0.9 <= factors["full12"] <= 1.1 and 1.25 <= factors["full13"] <= 1.6, factors
    heavy = cells[cells.cell.str.contains(r"/timer/.*/n2856/k3/sleep")]
    assert len(heavy) >= 50
    within = {}
    for label, model in (("scaled", scaled(go, factors["full13"])), ("as measured", go)):
        ratio = compare(heavy, host, model, reps=5).ratio
        within[label] = float((abs(ratio - 1) <= 0.15).mean())
    assert within["scaled"] >= 0.90 and within["as measured"] < within["scaled"] - 0.05, within


def test_sysmon_strands_flush_goroutines_as_often_as_the_harness_saw_at_gomaxprocs_2():
    # the harness's drain blocks with a CPU-burning flush sometimes hold one flush for tens
    # of milliseconds (full9: 500 us of work, up to 1.4 s): sysmon cut the time slice the
    # goroutines pass round through runnext, and the flush goroutine it preempted waited in
    # the global queue. The model strands them too (before it modelled sysmon: never); more
    # often at GOMAXPROCS 2 than at 1, as measured (full9, one run per cell: measured 12 % /
    # 40 %, predicted 11 % / 51 % of a cell's blocks at GOMAXPROCS 1 / 2 with 15 runs per cell)
    from validate.calibrate_gobatcher import stranded_shares

    blocks, probes = load_run(HARNESS / "data" / "full9")
    cells = cells_of(blocks)
    host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", probes, blocks)
    go = go_from_file(ROOT / "models" / "gobatcher-loopback.toml")
    spin = cells[cells.cell.str.contains("v2.0.6/.*/drain/.*/spin", regex=True)]
    shares = stranded_shares(compare(spin, host, go, reps=1))
    (meas_1, pred_1, n_1), (meas_2, pred_2, n_2) = shares[1], shares[2]
    assert n_1 == n_2 == 102
    assert meas_2 > meas_1 and pred_2 > pred_1
    assert abs(pred_2 - meas_2) <= 0.20


def test_the_cpu_the_model_lacks_is_split_into_its_costs():
    # synthetic cells whose measured CPU exceeds the model's by exactly 1 us a transaction,
    # 2 us a flush, 3 % of the block's time and 300 us a block: the judge's fit finds them
    from validate.calibrate_gobatcher import cpu_missing

    rng = np.random.default_rng(4)
    n_tx, flushes, block = rng.integers(16, 3000, 12), rng.integers(1, 900, 12), \
        rng.uniform(0.002, 0.4, 12)
    pred = rng.uniform(0.001, 0.01, 12)
    table = pd.DataFrame({"gomaxprocs": 1, "flush": "sleep", "fit": [True] * 3 + [False] * 9,
                          "n_tx": n_tx, "meas_flushes": [(0, float(f), 0) for f in flushes],
                          "meas_p50_s": block, "pred_cpu_s": pred,
                          "meas_cpu_s": pred + 1e-6 * n_tx + 2e-6 * flushes + 0.03 * block
                          + 300e-6})
    got = cpu_missing(table)
    assert got is not None and got["cells"] == 12
    assert [round(got[k], 6) for k in ("per_tx_us", "per_flush_us", "per_s", "fixed_us")] \
        == [1.0, 2.0, 0.03, 300.0]
    assert got["r2"] == pytest.approx(1.0)
    # a GOMAXPROCS 2 or spin table has nothing to say
    assert cpu_missing(table.assign(gomaxprocs=2)) is None


@pytest.mark.parametrize("args", [["--run", "MISSING"],
                                  ["--run", str(HARNESS / "data" / "full9"), "--repeat",
                                   "MISSING"]])
def test_a_run_directory_without_blocks_is_refused_by_name(tmp_path, capsys, args):
    from validate.calibrate_gobatcher import main

    missing = str(tmp_path / "nothing")
    with pytest.raises(SystemExit) as exit_:
        main([a.replace("MISSING", missing) for a in args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"{args[-2]} {missing}: no blocks.csv" in err and "Traceback" not in err


def test_the_model_scaled_to_a_run_s_machine_is_written_and_reads_back_at_its_speed(tmp_path,
                                                                                   capsys):
    # --go MODEL --out FILE: the model scaled to the run's machine (fit_cpu_scale on its
    # cycle cells), the way a user calibrates the engine to theirs from a small grid;
    # small-1207/a is this project's second machine (x1.46 against the shipped costs)
    from validate.calibrate_gobatcher import main

    run = HARNESS / "data" / "small-1207" / "a"
    shipped = ROOT / "models" / "gobatcher-loopback.toml"
    out = tmp_path / "gobatcher-mine.toml"
    one = "p1/v2.0.6/s4096-t5ms/timer/mc64/all/n16/k3/sleep500us"
    assert main(["--run", str(run), "--go", str(shipped), "--out", str(out),
                 "--only", one, "--reps", "3"]) == 0
    written = tomllib.loads(out.read_text())
    factor = written["provenance"]["cpu_scale"]
    assert 1.3 <= factor <= 1.6 and written["provenance"]["run"] == str(run)
    base, mine = go_from_file(shipped), go_from_file(out)
    for name in COSTS:
        assert getattr(mine, name) == pytest.approx(getattr(base, name) * factor, abs=0.06)
    # judged on the same run, the written model needs no more scaling
    capsys.readouterr()
    assert main(["--run", str(run), "--go", str(out), "--only", one, "--reps", "3"]) == 0
    again = re.search(r"host CPU scale: x([0-9.]+)", capsys.readouterr().out)
    assert again is not None and float(again.group(1)) == pytest.approx(1.0, abs=0.03)
    # writing it needs the scale
    with pytest.raises(SystemExit) as exit_:
        main(["--run", str(run), "--go", str(shipped), "--out", str(out), "--cpu-scale",
              "off", "--only", one])
    assert exit_.value.code == 2
    assert "--out with --go" in capsys.readouterr().err


def test_a_cell_selection_that_matches_nothing_is_refused_by_name(capsys):
    from validate.calibrate_gobatcher import main

    with pytest.raises(SystemExit) as exit_:
        main(["--run", str(RECORDED), "--go", str(ROOT / "models" / "gobatcher-loopback.toml"),
              "--only", "p9/no-such-cell"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--only 'p9/no-such-cell': no cell of" in err and "Traceback" not in err


@pytest.mark.parametrize("args,message", [
    (["--run", "FLUSHLESS"], "--run FLUSHLESS: no flushes.csv or flushes.csv.gz there"),
    (["--only", "(["], "--only '([': not a regular expression"),
    (["--host", "MISSING"], "--host MISSING: cannot read it"),
    (["--go", "NOT_TOML"], "--go NOT_TOML: not TOML"),
    (["--costs", "NO_TABLE"], "--costs NO_TABLE: no [go] table in it"),
])
def test_an_input_it_cannot_use_is_refused_by_name_before_the_run_is_read(tmp_path, capsys,
                                                                           args, message):
    from validate.calibrate_gobatcher import main

    paths = {"FLUSHLESS": tmp_path / "flushless", "MISSING": tmp_path / "missing.toml",
             "NOT_TOML": tmp_path / "not.toml", "NO_TABLE": tmp_path / "no-table.toml"}
    paths["FLUSHLESS"].mkdir()
    (paths["FLUSHLESS"] / "blocks.csv").write_text("cell_no,rep\n0,0\n")
    paths["NOT_TOML"].write_text("[go\n")
    paths["NO_TABLE"].write_text("[host]\nwake_us = 30.0\n")
    argv = ["--run", str(RECORDED), *args] if args[0] != "--run" else args
    with pytest.raises(SystemExit) as exit_:
        main([str(paths.get(a, a)) for a in argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    for name, path in paths.items():
        message = message.replace(name, str(path))
    assert message in err and "Traceback" not in err, err


# ------------------------------------------------------------------ the CPU's run-to-run noise
def test_a_run_without_cycle_blocks_cannot_fit_the_noise_and_says_why(tmp_path, capsys):
    from validate.calibrate_gobatcher import main
    from validate.gobatcher_runs import read_csv

    small = HARNESS / "data" / "small"
    blocks = read_csv(small / "blocks.csv")
    keep = blocks[blocks.gomaxprocs == 2]                   # no GOMAXPROCS 1 drain cycle
    keep.to_csv(tmp_path / "blocks.csv", index=False)
    flushes = read_csv(small / "flushes.csv")
    flushes.merge(keep[["cell_no", "rep"]]).to_csv(tmp_path / "flushes.csv", index=False)
    with pytest.raises(SystemExit) as exit_:
        main(["--run", str(tmp_path), "--go", str(ROOT / "models" / "gobatcher-loopback.toml"),
              "--fit-noise"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"--fit-noise: {tmp_path}: no GOMAXPROCS 1 drain-mode block" in err
    assert "Traceback" not in err


def test_spreads_are_taken_from_serial_cycle_blocks_and_spin_flushes_only():
    from validate.gobatcher_runs import spreads_from

    cell = {"gomaxprocs": 1, "drain": True, "cap": "all", "max_concurrent": 64, "n_tx": 16}
    blocks = pd.DataFrame([
        {**cell, "cell_no": 1, "rep": 0, "flush": "sleep", "n_flushes": 16},   # a cycle block
        {**cell, "cell_no": 1, "rep": 1, "flush": "sleep", "n_flushes": 5},    # drained: no
        {**cell, "cell_no": 2, "rep": 0, "flush": "spin", "n_flushes": 16}])   # spin flushes
    gaps = [3.0, 3.5, 4.0, 4.5, 5.0] * 3                                       # 15 gaps
    starts = np.concatenate([[0.0], np.cumsum(gaps)])
    rows = [{"cell_no": 1, "rep": 0, "start_us": s, "end_us": s + 1000} for s in starts]
    rows += [{"cell_no": 1, "rep": 1, "start_us": 9.0 * i, "end_us": 0.0} for i in range(5)]
    rows += [{"cell_no": 2, "rep": 0, "start_us": 600.0 * i, "end_us": 600.0 * i + d}
             for i, d in enumerate([490.0, 500.0, 500.0, 510.0] * 4)]
    out = spreads_from(blocks, pd.DataFrame(rows))
    assert out.loc[(1, 0), "cycle_spread"] == pytest.approx(0.25)   # IQR 1 us / median 4 us
    assert (1, 1) not in out.index
    assert out.loc[(2, 0), "flush_spread"] == pytest.approx(5.0 / 500.0)   # 497.5-502.5
    assert np.isnan(out.loc[(2, 0), "cycle_spread"])
    # after each spin flush, the gap to the next one's start: 600 us apart, 490-510 long
    assert out.loc[(2, 0), "after_flush_p50_us"] == pytest.approx(100.0)
    assert out.loc[(2, 0), "after_flush_p90_us"] == pytest.approx(110.0)
    assert np.isnan(out.loc[(1, 0), "after_flush_p50_us"])             # a sleep flush: none


def test_a_flush_stranded_over_the_next_gives_no_gap_after_it():
    from validate.gobatcher_runs import after_flush_gaps

    start = np.array([700.0, 0.0, 100.0])          # any order: taken by start
    end = np.array([1200.0, 650.0, 600.0])         # the first overlaps the second
    assert after_flush_gaps(start, end).tolist() == [100.0]


def test_the_cpu_noise_fitted_on_drain_cycles_predicts_the_spread_of_spin_flushes():
    # [host] cpu_noise_ns is fitted on full9's GOMAXPROCS 1 drain blocks of one flush per
    # transaction (cycles of ~3.6 us, spread 0.20); a 500 us spin flush is 140 such cycles'
    # worth of CPU, so the same noise predicts it about 12 times narrower, which the
    # measured flushes show (full9: 0.025, full6: 0.014; predicted 0.019-0.022)
    from validate.gobatcher_host import model_spreads
    from validate.gobatcher_runs import is_cycle_cell, is_spin_cell

    blocks, probes = load_run(HARNESS / "data" / "full9")
    cells = cells_of(blocks)
    host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", probes, blocks)
    go = go_from_file(ROOT / "models" / "gobatcher-loopback.toml")
    assert host.cpu_noise_ns == 83.5
    chosen = cells[cells.apply(is_cycle_cell, axis=1)
                   | (cells.apply(is_spin_cell, axis=1) & (cells.n_tx.astype(int) <= 64))]
    cycle, flush, *_ = model_spreads(chosen, host, go, reps=3)
    meas_cycle = blocks.cycle_spread.median()
    meas_flush = blocks.flush_spread.median()
    assert meas_cycle == pytest.approx(0.20, abs=0.01)
    assert cycle == pytest.approx(meas_cycle, abs=0.03)          # the fit
    assert 0.5 < flush / meas_flush < 2.0                         # the prediction
    # without the noise the model's cycles are all alike, its spin flushes too
    still = model_spreads(chosen, dataclasses.replace(host, cpu_noise_ns=0.0), go, reps=1)
    assert still[0] < 0.02 and still[1] < 0.005


def test_runs_packed_onto_one_cpu_are_serial_as_the_measured_packed_blocks_are():
    # full9, GOMAXPROCS 2, drain, cap = all, a sleep flush: the blocks whose threads waited
    # over 200 us for a CPU made about one flush per transaction in 80-100 % of the cases,
    # the others in 16-50 %; the model's runs, each packed as its paired block, follow
    # (one thread at a time while packed: 93-100 % and 4-62 % at 60 runs a cell)
    from validate.calibrate_gobatcher import predict
    from validate.gobatcher_host import packed_host

    blocks, probes = load_run(HARNESS / "data" / "full9")
    cells = cells_of(blocks)
    host, _ = host_from_probes(ROOT / "models" / "host-loopback.toml", probes, blocks)
    go = go_from_file(ROOT / "models" / "gobatcher-loopback.toml")
    chosen = cells[cells.cell.str.fullmatch(
        r"p2/v2\.0\.6/s4096-t5ms/drain/mc(?:0|64)/all/n(?:16|64)/k3/sleep500us")]
    assert len(chosen) == 4
    meas = {True: [], False: []}
    pred = {True: [], False: []}
    for cell in chosen.itertuples():
        n = int(cell.n_tx)
        for wait, flushes in zip(cell.runq_waits, cell.flushes):
            meas[wait > 200e-6].append(flushes >= 0.9 * n)
        runs = predict(cell, host, go, reps=30)
        for r, flushes in enumerate(runs.flushes):
            packed = packed_host(cell, host, r).packed_us[0] > 200.0
            pred[packed].append(flushes >= 0.9 * n)
    assert np.mean(meas[True]) >= 0.8 and np.mean(meas[False]) <= 0.5
    assert np.mean(pred[True]) >= 0.8                     # at half speed: 0.0-0.5
    assert np.mean(pred[False]) <= 0.5
