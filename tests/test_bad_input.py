"""Bad input: one clear line naming the file, the section, the key and the value; exit 2;
never a traceback, never a hang. And what a user gets back: labels, tables, JSON, pipes."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from simhelp import ROOT

from simbatch.cli import main
from simbatch.core.errors import ConfigError
from simbatch.planning.scenario import load_scenario

GOOD = """
[workload]
kind = "block"
n_transactions = 5
[batcher]
size = 10
timeout_ms = 5
"""


def run_cli(tmp_path, text, *extra, capsys, data: bytes | None = None):
    path = tmp_path / "bad.toml"
    if data is None:
        path.write_text(text)
    else:
        path.write_bytes(data)
    code = main(["run", str(path), "--replications", "1", *extra])
    captured = capsys.readouterr()
    return code, captured.err, str(path), captured.out


def one_line_error(err: str, path: str) -> None:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"simbatch: error: {path}"), err
    assert " parameter of " in err and " must " in err and "; got " in err, err


@pytest.mark.parametrize("text,where,value", [
    (GOOD.replace("timeout_ms = 5", "timeout_ms = -5"), "[batcher] timeout_ms", "-5"),
    (GOOD.replace("size = 10", "size = 0"), "[batcher] size", "0"),
    (GOOD.replace("size = 10", "size = \"ten\""), "[batcher] size", "'ten'"),
    (GOOD.replace("size = 10", "size = 10.5"), "[batcher] size", "10.5"),
    (GOOD.replace("size = 10", "sise = 10"), "[batcher] sise", "10"),
    (GOOD + "\n[bogus]\nx = 1\n", "[bogus]", "'a table'"),
    (GOOD.replace('kind = "block"', 'kind = "blocky"'), "[workload] kind", "'blocky'"),
    (GOOD + '\n[service]\nnoise = "gaussian"\n', "[service] noise", "'gaussian'"),
    (GOOD + "\n[[cases]]\nname = \"a\"\nbatcher = { drain = 1 }\n", "[batcher] drain", "1"),
    (GOOD + "\n[host]\ntimer_overshoot_us = -90\n", "[host] timer_overshoot_us", "-90"),
    # the client statistics (table R3): unknown variant, negative costs, zero cores
    (GOOD + '\n[service.stats]\nvariant = "sometimes"\n', "[service.stats] variant",
     "'sometimes'"),
    (GOOD + "\n[service.stats]\nwrite_ns = -1\n", "[service.stats] write_ns", "-1"),
    (GOOD + "\n[service.stats]\ncommand_types = 0\n", "[service.stats] command_types", "0"),
    (GOOD + "\n[service.client]\napp_ns_per_record = -5\n",
     "[service.client] app_ns_per_record", "-5"),
    (GOOD + "\n[service.client]\ncores = 0\n", "[service.client] cores", "0"),
    # shapes: a section given as a number or a list, a case section as a number
    (GOOD + "\n[[cases]]\nname = \"a\"\nworkload = 5\n", "[workload]", "5"),
    ("batcher = [1, 2]\n" + GOOD.replace("[batcher]\nsize = 10\ntimeout_ms = 5", ""),
     "[batcher]", "[1, 2]"),
    (GOOD + "\n[service]\nfixed_us = inf\n", "[service] fixed_us", "inf"),
    (GOOD + "\n[service]\nfixed_us = nan\n", "[service] fixed_us", "nan"),
    (GOOD.replace("n_transactions = 5", "n_transactions = 100000000000000000000"),
     "[workload] n_transactions", "100000000000000000000"),
    (GOOD.replace("n_transactions = 5", "inputs_per_tx = 1e19"), "[workload] inputs_per_tx",
     "1e+19"),
    (GOOD.replace("n_transactions = 5", "inputs_per_tx = { kind = \"normal\" }"),
     "[workload] inputs_per_tx.kind", "'normal'"),
    (GOOD.replace("n_transactions = 5", "inputs_per_tx = { kind = \"constant\", mean = 2 }"),
     "[workload] inputs_per_tx.mean", "2"),
    (GOOD.replace("size = 10", "size = 10\ntick_ms = 1e-9"), "[batcher] tick_ms", "1e-09"),
    (GOOD + "\n[[cases]]\nname = \"a\"\npublished = { no_such_metric = 1.0 }\n",
     "published.no_such_metric", "1.0"),
    (GOOD + "\n[scenario]\nreplications = 1e9\n", "[scenario] replications", "1000000000.0"),
    (GOOD + "\n[service]\nmodel = \"no-such-model.toml\"\n", "[service] model",
     "'no-such-model.toml'"),
    # counts that would make one object each before the run starts, and a Go runtime cost
    # that would be run in billions of slices: bounded, not a hang
    (GOOD + "\n[go]\ngomaxprocs = 1000000\n", "[go] gomaxprocs", "1000000"),
    (GOOD + "\n[go]\ngomaxprocs = 2\nspawn_ns = 1e12\n", "[go] spawn_ns", "1000000000000.0"),
    (GOOD + "\n[service.stats]\ncommand_types = 1000000\n", "[service.stats] command_types",
     "1000000"),
    (GOOD.replace("size = 10", "size = 10\ndispatch = \"pool\"\nmax_concurrent = 100000000"),
     "[batcher] max_concurrent", "100000000"),
])
def test_scenario_errors_name_file_section_key_and_value(tmp_path, capsys, text, where, value):
    code, err, path, _ = run_cli(tmp_path, text, capsys=capsys)
    assert code == 2
    one_line_error(err, path)
    assert where in err and f"got {value}." in err, err


def test_a_file_that_is_not_utf8_is_refused(tmp_path, capsys):
    code, err, path, _ = run_cli(tmp_path, "", capsys=capsys,
                                 data=GOOD.encode() + b"\n# \xff\xfe\n")
    assert code == 2 and "UTF-8" in err and "0xff" in err
    one_line_error(err, path)


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_an_empty_scenario_file_is_refused_rather_than_run_on_defaults(tmp_path, capsys, text):
    code, err, path, out = run_cli(tmp_path, text, capsys=capsys)
    assert code == 2 and out == "", out
    one_line_error(err, path)
    assert "'contents' parameter of the scenario file" in err and "got 'nothing'." in err, err


def test_missing_file(tmp_path, capsys):
    code = main(["run", str(tmp_path / "nope.toml")])
    err = capsys.readouterr().err
    assert code == 2 and "nope.toml" in err and "an existing scenario file" in err


@pytest.mark.parametrize("override,where", [
    ("batcher.timeout_ms=-1", "--set batcher.timeout_ms"),
    ("batcher=3", "--set"),
    ("nosuch.size=3", "--set nosuch.size"),
    ("batcher.sise=3", "[batcher] sise"),
])
def test_bad_override(tmp_path, capsys, override, where):
    code, err, path, _ = run_cli(tmp_path, GOOD, "--set", override, capsys=capsys)
    assert code == 2 and where in err, err
    one_line_error(err, path if where.startswith(("--set", "[")) else "")


def test_a_run_too_big_to_finish_is_refused_before_it_starts(tmp_path, capsys):
    text = GOOD.replace("n_transactions = 5", "n_transactions = 50000000")
    code, err, path, _ = run_cli(tmp_path, text, capsys=capsys)
    assert code == 2 and "[workload] n_transactions" in err and "--max-events" in err
    one_line_error(err, path)


def test_a_periodic_timer_that_would_not_let_the_run_end_is_stopped(tmp_path, capsys):
    # a 1 us cycle timer over a 10 s service: ten million firings, beyond --max-events
    text = GOOD.replace("timeout_ms = 5", 'timeout_ms = 0.001\ntimer = "cycle"\n'
                        'dispatch = "background"') + "[service]\nfixed_us = 1e7\n"
    code, err, path, _ = run_cli(tmp_path, text, "--max-events", "100000", capsys=capsys)
    assert code == 2 and "[batcher] timeout_ms" in err and "timer firings" in err, err
    one_line_error(err, path)


@pytest.mark.parametrize("option,value,message", [
    ("--out", "{tmp}/plain/out.json", "must be a path ending in .csv or .parquet"),
    ("--out", "/proc/no-such-dir/out.csv", "must be a file that can be written"),
    ("--out", "{tmp}/a-directory.csv", "must be a file that can be written"),
    ("--plots", "/proc/no-such-dir/plots", "must be a directory that can be written"),
    ("--plots", "{tmp}/bad.toml", "must be a directory that can be written"),
    ("--workers", "100000", "must be an integer from 1 to"),
    ("--scheduler", "not-an-address", "must be the address of a reachable Dask scheduler"),
])
def test_a_bad_option_is_refused_in_one_line_before_the_run(tmp_path, capsys, option, value,
                                                            message):
    # refused before the run, not after it (an output path used to fail once the run was
    # done, with a traceback); the scenario would take a while, the refusal does not
    text = GOOD.replace("n_transactions = 5", "n_transactions = 200000")
    (tmp_path / "a-directory.csv").mkdir()
    code, err, _, out = run_cli(tmp_path, text, option, value.format(tmp=tmp_path),
                                capsys=capsys)
    assert code == 2 and out == "", (err, out)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"'{option[2:]}' parameter" in err and message in err, err
    assert err.startswith("simbatch: error: The '"), err   # not placed in the file


def test_a_refused_scenario_leaves_no_output_directory_behind(tmp_path, capsys):
    # the output paths are checked before the scenario is read, without making anything
    text = GOOD.replace("timeout_ms = 5", "timeout_ms = -5")
    code, err, path, _ = run_cli(tmp_path, text, "--out", str(tmp_path / "new/deeper/t.csv"),
                                 "--plots", str(tmp_path / "plots/here"), capsys=capsys)
    assert code == 2 and "[batcher] timeout_ms" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]
    # and a good one makes them when it writes
    code, err, _, _ = run_cli(tmp_path, GOOD, "--out", str(tmp_path / "new/deeper/t.csv"),
                              capsys=capsys)
    assert code == 0 and (tmp_path / "new/deeper/t.csv").is_file(), err


def test_cli_process_exits_2_without_traceback(tmp_path):
    path = tmp_path / "neg.toml"
    path.write_text(GOOD.replace("timeout_ms = 5", "timeout_ms = -5"))
    proc = subprocess.run([sys.executable, "-m", "simbatch.cli", "run", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "timeout_ms" in proc.stderr


def test_a_closed_pipe_ends_quietly():
    proc = subprocess.run(f"{sys.executable} -m simbatch.cli run "
                          f"{ROOT}/scenarios/r1-decorate-fanout.toml --replications 1 --json "
                          "| head -c 10", shell=True, capture_output=True, text=True)
    assert proc.stderr == "" and len(proc.stdout) == 10


def test_version_and_help():
    from simbatch import __version__

    out = subprocess.run([sys.executable, "-m", "simbatch.cli", "--version"],
                         capture_output=True, text=True).stdout
    # after simbatch compile it names the compiled modules too (tests/test_native.py)
    assert out.strip().startswith(f"simbatch {__version__}")
    helptext = subprocess.run([sys.executable, "-m", "simbatch.cli", "run", "--help"],
                              capture_output=True, text=True).stdout
    for option in ("--replications", "--seed", "--set", "--json", "--out", "--plots",
                   "--max-events"):
        assert option in helptext


def test_json_never_carries_non_finite_numbers(tmp_path, capsys):
    # an open-loop workload whose transactions have no inputs: no item latencies at all
    text = ('[workload]\nkind = "open_loop"\nn_transactions = 3\ninputs_per_tx = 0\n'
            '[batcher]\nsize = 10\n')
    code, err, _, out = run_cli(tmp_path, text, "--json", capsys=capsys)
    assert code == 0, err
    doc = json.loads(out)                       # json.loads refuses NaN only if asked:
    assert "NaN" not in out and "Infinity" not in out
    assert doc["cases"][0]["metrics"]["item_latency_p99_s"] is None
    assert doc["simbatch"] and doc["command"].startswith("simbatch run")


SAME_NAME = """
[scenario]
kind = "kafka"
[workload]
n_messages = 20
[sweep]
"outer.linger_ms" = [1, 10]
"producer.linger_ms" = [0, 5]
"producer.n_partitions" = [1, 4]
"""


def test_two_swept_fields_with_one_name_get_distinct_labels_and_columns(tmp_path):
    path = tmp_path / "same.toml"
    path.write_text(SAME_NAME)
    scenario = load_scenario(path)
    labels = [c.name for c in scenario.cases]
    assert len(set(labels)) == len(labels) == 8
    assert "same outer.linger_ms=1 producer.linger_ms=5 n_partitions=4" in labels
    assert scenario.cases[0].params == {"outer.linger_ms": 1, "producer.linger_ms": 0,
                                        "producer.n_partitions": 1}
    out = tmp_path / "t.csv"
    assert main(["run", str(path), "--replications", "1", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert {"outer.linger_ms", "producer.linger_ms", "n_partitions"} <= set(table.columns)
    runs = pd.read_csv(tmp_path / "t.runs.csv")
    assert len(runs) == 8 and {"seed", "replication", "latency_p99_s"} <= set(runs.columns)


def test_set_on_a_swept_field_is_refused(tmp_path):
    path = tmp_path / "same.toml"
    path.write_text(SAME_NAME)
    with pytest.raises(ConfigError, match=r"--set producer.n_partitions: .*does not sweep"):
        load_scenario(path, ["producer.n_partitions=8"])


def test_the_partition_sweep_writes_a_parquet_table_with_its_parameters(tmp_path):
    out = tmp_path / "t.parquet"
    scenario = ROOT / "scenarios/kafka-partitions-linger-sweep.toml"
    assert main(["run", str(scenario), "--replications", "1", "--out", str(out)]) == 0
    table = pd.read_parquet(out)
    assert {"n_partitions", "linger_ms", "latency_p99_s", "latency_p99_s_ci95"} <= set(
        table.columns)
    assert sorted(table.n_partitions.unique()) == [1, 4, 16, 64, 256, 1024]


def test_a_probe_phase_with_nothing_to_probe_runs_and_reports_no_work(tmp_path, capsys):
    # phases = "probe" with no probes: no CPU at all, so no share of it at the lock's line
    # (this divided by zero)
    path = tmp_path / "probe0.toml"
    path.write_text('[scenario]\nkind = "contention"\n[map]\nn_tx = 1000\nphases = "probe"\n'
                    "n_probes = 0\n")
    code = main(["run", str(path), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    metrics = json.loads(captured.out)["cases"][0]["metrics"]
    assert metrics["probe_s"] == 0 and metrics["rlock_cpu_share"] == 0, metrics
