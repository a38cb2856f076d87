"""Bad input: one clear error naming the file, the key and the value; exit status 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from simbatch.batcher import BatcherConfig
from simbatch.cli import main
from simbatch.errors import ConfigError
from simbatch.producers import BlockWorkload
from simbatch.service import ServiceConfig

GOOD = """
[workload]
kind = "block"
n_transactions = 5
[batcher]
size = 10
timeout_ms = 5
"""


def run_cli(tmp_path, text, *extra, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    code = main(["run", str(path), "--replications", "1", *extra])
    err = capsys.readouterr().err
    return code, err, str(path)


@pytest.mark.parametrize("text,key,value", [
    (GOOD.replace("timeout_ms = 5", "timeout_ms = -5"), "timeout_ms", "-5"),
    (GOOD.replace("size = 10", "size = 0"), "size", "0"),
    (GOOD.replace("size = 10", "size = \"ten\""), "size", "'ten'"),
    (GOOD.replace("size = 10", "size = 10.5"), "size", "10.5"),
    (GOOD.replace("size = 10", "sise = 10"), "sise", None),
    (GOOD + "\n[bogus]\nx = 1\n", "bogus", None),
    (GOOD.replace('kind = "block"', 'kind = "blocky"'), "kind", "'blocky'"),
    (GOOD + '\n[service]\nnoise = "gaussian"\n', "noise", "'gaussian'"),
    (GOOD + "\n[[cases]]\nname = \"a\"\nbatcher = { drain = 1 }\n", "drain", "1"),
    # the client statistics (table R3): unknown variant, negative costs, zero cores
    (GOOD + '\n[service]\nstats_variant = "sometimes"\n', "stats_variant", "'sometimes'"),
    (GOOD + "\n[service]\nstats_write_ns = -1\n", "stats_write_ns", "-1"),
    (GOOD + "\n[service]\nstats_command_types = 0\n", "stats_command_types", "0"),
    (GOOD + "\n[service]\napp_ns_per_record = -5\n", "app_ns_per_record", "-5"),
    (GOOD + "\n[service]\nclient_cores = 0\n", "client_cores", "0"),
])
def test_scenario_errors_name_file_key_and_value(tmp_path, capsys, text, key, value):
    code, err, path = run_cli(tmp_path, text, capsys=capsys)
    assert code == 2
    assert path in err and key in err
    if value is not None:
        assert f"got {value}" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_missing_file(tmp_path, capsys):
    code = main(["run", str(tmp_path / "nope.toml")])
    err = capsys.readouterr().err
    assert code == 2 and "nope.toml" in err and "no such scenario file" in err


def test_bad_override(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, GOOD, "--set", "batcher.timeout_ms=-1", capsys=capsys)
    assert code == 2 and "timeout_ms" in err and "-1" in err


def test_cli_process_exits_2_without_traceback(tmp_path):
    path = tmp_path / "neg.toml"
    path.write_text(GOOD.replace("timeout_ms = 5", "timeout_ms = -5"))
    proc = subprocess.run([sys.executable, "-m", "simbatch.cli", "run", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "timeout_ms" in proc.stderr


@pytest.mark.parametrize("cls,kwargs,field", [
    (BatcherConfig, {"size": 0}, "size"),
    (BatcherConfig, {"timeout_ms": -1}, "timeout_ms"),
    (BatcherConfig, {"dispatch": "pool"}, "max_concurrent"),
    (BatcherConfig, {"drain": True, "tick_ms": 5.0}, "drain"),
    (ServiceConfig, {"fixed_us": float("nan")}, "fixed_us"),
    (ServiceConfig, {"max_in_flight": 0}, "max_in_flight"),
    (BlockWorkload, {"fanout": "errgroup"}, "cap"),
    (BlockWorkload, {"n_transactions": True}, "n_transactions"),
])
def test_config_errors_use_the_one_format(cls, kwargs, field):
    with pytest.raises(ConfigError, match=rf"The '{field}' parameter of {cls.__name__} must"):
        cls(**kwargs)


@pytest.mark.parametrize("cls", [BatcherConfig, ServiceConfig, BlockWorkload])
def test_configs_are_default_constructible(cls):
    cls()


KAFKA = """
[scenario]
kind = "kafka"
[workload]
n_messages = 10
[producer]
n_partitions = 4
"""


@pytest.mark.parametrize("text,key,value", [
    (KAFKA.replace("n_partitions = 4", "n_partitions = 0"), "n_partitions", "0"),
    (KAFKA.replace("n_partitions = 4", "n_partitions = -3"), "n_partitions", "-3"),
    (KAFKA.replace("n_partitions = 4", "linger_ms = -1"), "linger_ms", "-1"),
    (KAFKA + '\n[outer]\nlinger_ms = -10\n', "linger_ms", "-10"),
    (KAFKA.replace("n_partitions = 4", 'semantics = "sarama"'), "semantics", "'sarama'"),
    (KAFKA.replace("n_partitions = 4", "partitons = 4"), "partitons", None),
    (KAFKA + "\n[batcher]\nsize = 3\n", "batcher", None),
    (KAFKA.replace("n_messages = 10", 'n_messages = 3\nfeed = "trace"\ngaps_ms = [1.0]'),
     "gaps_ms", "'1 gaps'"),
    (KAFKA.replace("n_messages = 10", 'n_messages = 3\nfeed = "trace"\ngaps_ms = [1.0, -2.0]'),
     "gaps_ms", "-2.0"),
    (KAFKA.replace("n_messages = 10", "n_messages = 3\ngaps_ms = [1.0, 2.0]"),
     "gaps_ms", "'2 gaps'"),
])
def test_kafka_scenario_errors(tmp_path, capsys, text, key, value):
    code, err, path = run_cli(tmp_path, text, capsys=capsys)
    assert code == 2 and path in err and key in err, err
    if value is not None:
        assert f"got {value}" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


CONTENTION = """
[scenario]
kind = "contention"
[cpu]
cores = 4
[map]
n_tx = 1000
n_subtrees = 2
"""


@pytest.mark.parametrize("text,key,value", [
    (CONTENTION.replace("cores = 4", "cores = 0"), "cores", "0"),
    (CONTENTION.replace("n_subtrees = 2", "n_buckets = 0"), "n_buckets", "0"),
    (CONTENTION + "\n[costs]\nput_ns = -3\n", "put_ns", "-3"),
    (CONTENTION.replace("n_subtrees = 2", 'design = "lockfree"'), "design", "'lockfree'"),
    (CONTENTION.replace("n_subtrees = 2", 'exists = "maybe"'), "exists", "'maybe'"),
    (CONTENTION.replace("cores = 4", "cors = 4"), "cors", None),
])
def test_contention_scenario_errors(tmp_path, capsys, text, key, value):
    code, err, path = run_cli(tmp_path, text, capsys=capsys)
    assert code == 2 and path in err and key in err, err
    if value is not None:
        assert f"got {value}" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
