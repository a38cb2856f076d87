"""Calibration against a real Aerospike server, named by SIMBATCH_AEROSPIKE_HOST.

No Aerospike server can be installed on the project's machines: without the variable the
measuring test skips and says so. What runs everywhere: the harness's failure on an
unreachable server (bounded time, clear message), and the calibration script's fit on
recorded measurements (shared/data/aerospike-loopback, real samples from an Aerospike 8.1
server), with the same tolerances as the measuring test.
"""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from validate.aerospike_harness import (
    ENV_HOST,
    HarnessError,
    Server,
    measure,
    parse_server,
    server_from_env,
)
from validate.calibrate_aerospike import QUICK, calibrate, main, table_md, verdicts

pytest.importorskip("aerospike")
RECORDED = (Path(__file__).resolve().parents[2]
            / "shared/data/aerospike-loopback/batch_read_latency.csv")


@pytest.mark.aerospike
def test_calibration_against_the_named_server():
    server = server_from_env()
    if server is None:
        pytest.skip(f"no Aerospike server named: set {ENV_HOST}=host[:port] (and optionally "
                    "SIMBATCH_AEROSPIKE_NAMESPACE, default 'test') to measure against one")
    df = measure(server, QUICK["sizes"], QUICK["concurrencies"], samples=QUICK["samples"],
                 get_samples=QUICK["get_samples"], n_records=QUICK["n_records"])
    assert len(df) == (len(QUICK["sizes"]) * QUICK["samples"] + QUICK["get_samples"]) * 2
    _, table, quality = calibrate(df, calls=300)
    print("\n" + table_md(table))
    assert all(verdicts(quality).values()), verdicts(quality)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_server_fails_fast_with_a_clear_message():
    port = _free_port()
    t0 = time.monotonic()
    with pytest.raises(HarnessError, match=f"no Aerospike server answered at 127.0.0.1:{port}"):
        measure(Server("127.0.0.1", port), [1], [1], samples=10, get_samples=10, n_records=10)
    assert time.monotonic() - t0 < 15


@pytest.mark.parametrize("text", ["db:port", "db:0", ":3000", "db:99999"])
def test_a_bad_server_name_is_refused_naming_the_variable(text):
    with pytest.raises(HarnessError, match=f"{ENV_HOST} must be .*got {text!r}"):
        parse_server(text)


def test_the_script_without_a_server_says_what_to_set(monkeypatch, capsys):
    monkeypatch.delenv(ENV_HOST, raising=False)
    assert main([]) == 2
    assert ENV_HOST in capsys.readouterr().err


@pytest.mark.skipif(not RECORDED.is_file(), reason=f"recorded measurements not at {RECORDED}")
def test_the_script_fits_recorded_measurements_within_tolerance(tmp_path, capsys):
    df = pd.read_csv(RECORDED)
    cells = df[df.concurrency.isin(QUICK["concurrencies"]) & df.batch_size.isin(QUICK["sizes"])]
    path = tmp_path / "samples.csv"
    cells.to_csv(path, index=False)
    model = tmp_path / "model.toml"
    assert main(["--from-csv", str(path), "--model", str(model)]) == 0
    out = capsys.readouterr().out
    assert "within tolerance: c1_median yes, c1_p90 yes, c1_p99 yes, conc_small_median yes" in out
    assert "[service]" in model.read_text() and "per_record_us" in model.read_text()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
