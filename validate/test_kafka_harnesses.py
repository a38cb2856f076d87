"""The three client harnesses and the calibration against a broker named by
``SIMBATCH_KAFKA_BOOTSTRAP``: where nothing listens, each fails with one clear line within
10 s; on the real broker, the outer batcher's deadline timer does what it says in every
harness, and each records the host's speed through the run. The Go and Java harnesses are
built by the ``harnesses`` fixture (skipped, with the reason, where ``go`` or
``mvn``/``java`` is missing)."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from validate.calibrate_kafka import models_dir_for
from validate.conftest import need
from validate.kafka_broker import free_port
from validate.kafka_grid import CI_CONFIGS
from validate.kafka_harness import ENV, HERE, HarnessConfig, HarnessError, harness_command, run

pytestmark = pytest.mark.kafka


@pytest.fixture
def nowhere(monkeypatch):
    """SIMBATCH_KAFKA_BOOTSTRAP set to a loopback port where nothing listens."""
    address = f"127.0.0.1:{free_port()}"
    monkeypatch.setenv(ENV, address)
    return address


@pytest.mark.parametrize("client", ["librdkafka", "franz-go", "java"])
def test_a_harness_pointed_where_nothing_listens_fails_in_one_line_within_10_s(
        nowhere, harnesses, client):
    need(harnesses, client)
    t0 = time.monotonic()
    with pytest.raises(HarnessError) as info:
        run(None, HarnessConfig(client=client, n_messages=5))    # the broker from the env
    assert time.monotonic() - t0 < 10
    message = str(info.value)
    assert "\n" not in message and f"no Kafka broker reachable at {nowhere}" in message


@pytest.mark.parametrize("client", ["franz-go", "java"])
def test_the_go_and_java_harnesses_take_the_broker_from_the_env(nowhere, harnesses, client,
                                                                  tmp_path):
    # the binaries on their own (no broker flag): exit 2, one line on stderr, within 10 s
    need(harnesses, client)
    cmd = harness_command(client, None, HarnessConfig(client=client), tmp_path / "x.csv")
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert time.monotonic() - t0 < 10
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"no Kafka broker reachable at {nowhere}" in lines[0], lines


def test_the_calibration_pointed_where_nothing_listens_fails_in_one_line(nowhere, tmp_path):
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "validate.calibrate_kafka", "--ci",
                           "--out-dir", str(tmp_path), "--models-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, cwd=HERE.parent)
    assert time.monotonic() - t0 < 10
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("calibrate_kafka: error: no Kafka broker "
                                                   f"reachable at {nowhere}"), lines


def test_a_calibration_of_a_subset_writes_its_models_beside_its_measurements(tmp_path):
    # the whole grid refits the models the scenarios use; --ci or --configs (which may lack
    # the runs a parameter is fitted on) writes them into --out-dir unless told otherwise
    out = str(tmp_path / "meas")
    assert models_dir_for(None, None, out) == HERE.parent / "models"
    assert models_dir_for(None, ["linger10-p8-250ps-dense"], out) == tmp_path / "meas"
    assert models_dir_for(None, list(CI_CONFIGS), out) == tmp_path / "meas"
    assert models_dir_for(str(tmp_path / "m"), ["x"], out) == tmp_path / "m"


@pytest.mark.parametrize("client", ["librdkafka", "franz-go", "java"])
def test_the_deadline_timer_flushes_its_linger_after_the_first_message(kafka_broker,
                                                                       harnesses, client):
    # 24 messages 25 ms apart, deadline 100 ms, client linger 0: every message waits in the
    # outer batcher at most 100 ms (+ the client and the broker), the first of each batch
    # about that long, and the last batch waits for its timer, not for the end of the feed
    need(harnesses, client)
    cfg = HarnessConfig(client=client, n_messages=24, interval_ms=25, linger_ms=0,
                        outer_linger_ms=100, outer_timer="deadline", warmup_s=0.5)
    rec = run(kafka_broker["bootstrap"], cfg)
    held = rec["produce_s"] - rec["publish_s"]
    flush = np.concatenate([[0], np.cumsum(np.diff(rec["produce_s"]) > 0.010)])
    heads = [held[flush == k].max() for k in np.unique(flush)]   # each batch's first message
    assert len(heads) >= 5
    assert all(0.080 < h < 0.130 for h in heads), heads   # the last batch too
    # every harness records the host's speed through the run (validate/host_probe.py): a
    # fixed piece of work and a round trip between two processes took tens of microseconds,
    # a 50 ms wait woke within 50 ms
    assert 1e-6 < rec["host_work_s"][0] < 0.05, rec["host_work_s"][0]
    assert 0.0 <= rec["host_wake_s"][0] < 0.05, rec["host_wake_s"][0]
    assert 1e-6 < rec["host_trip_s"][0] < 0.05, rec["host_trip_s"][0]


def test_the_brokers_threads_are_grouped_by_the_names_the_kernel_keeps():
    import os

    from validate.broker_jvm import THREAD_GROUPS, thread_usage

    def group(name: str) -> str | None:
        comm = name[:15]                    # /proc/PID/task/TID/comm keeps 15 characters
        return next((g for g, pattern in THREAD_GROUPS if pattern.match(comm)), None)

    assert group("data-plane-kafka-network-thread-1-ListenerName(PLAINTEXT)-PLAINTEXT-0") \
        == "data"
    assert group("data-plane-kafka-request-handler-3") == "data"
    assert [group(n) for n in ("C2 CompilerThread0", "C1 CompilerThread0")] == ["jit", "jit"]
    assert [group(n) for n in ("GC Thread#1", "G1 Conc#0", "G1 Refine#0")] == ["gc"] * 3
    assert group("kafka-scheduler-0") is None and group("ExpirationReaper-1-Produce") is None
    # a process with none of them (this one) has zero of each; no process, NaN
    assert thread_usage(os.getpid()) == {"data_cpu_s": 0.0, "jit_cpu_s": 0.0, "gc_cpu_s": 0.0,
                                         "data_switches": 0.0, "data_preempted": 0.0,
                                         "data_runq_s": 0.0}
    assert all(v != v for v in thread_usage(None).values())


def test_a_clusters_cpu_is_its_processes_summed():
    import subprocess
    import sys
    import time

    from validate.broker_jvm import _cpu_s, _threads, process_cpu_s

    # two processes that burn 0.2 s of CPU and stop themselves, so the sum holds still
    burn = ("import os, signal, time\nt = time.process_time()\n"
            "while time.process_time() - t < 0.2: pass\nos.kill(os.getpid(), signal.SIGSTOP)")
    burners = [subprocess.Popen([sys.executable, "-c", burn]) for _ in range(2)]
    try:
        deadline = time.monotonic() + 30
        for b in burners:
            while open(f"/proc/{b.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "T":
                assert time.monotonic() < deadline, "the burner never stopped"
                time.sleep(0.01)
        pids = tuple(b.pid for b in burners)
        assert _cpu_s(pids) == sum(process_cpu_s(p) for p in pids) >= 0.3
        assert _threads(pids) == {key: 0.0 for key in _threads(pids)}   # no broker threads
        assert _cpu_s(()) != _cpu_s(())                                  # none: NaN
        assert all(v != v for v in _threads(()).values())
    finally:
        for b in burners:
            b.kill()
            b.wait()


def test_the_clients_internal_latency_is_the_median_of_its_statistics_windows():
    import json

    from validate.kafka_harness import internal_latency

    def window(*brokers):
        return json.dumps({"brokers": {f"b{i}": b for i, b in enumerate(brokers)}})

    def lat(p50_us, p99_us, cnt=5, nodeid=1):
        return {"nodeid": nodeid, "int_latency": {"p50": p50_us, "p99": p99_us, "cnt": cnt}}

    windows = [window(lat(10_240, 11_070)), window(lat(10_300, 12_100)),
               window(lat(10_240, 11_130), lat(0, 0, cnt=0)),      # a broker with none
               window(lat(0, 0, nodeid=-1)),                       # the bootstrap entry
               window(lat(10_370, 16_270))]
    assert internal_latency(windows) == pytest.approx((0.010270, 0.011615))
    nan = internal_latency([window(lat(0, 0, cnt=0))])
    assert all(v != v for v in nan) and all(v != v for v in internal_latency([]))


def test_a_threads_cpu_is_read_to_the_scheduler_s_nanosecond_not_the_clock_tick():
    # a tick (10 ms) is what 75 requests/s add to a warm broker's request path over a
    # 3 s round (validate/kafka_record_cost.py), so the threads' CPU is read finer: a thread
    # that works 3 ms between two waits reads as about 3 ms, where ticks would read 0 or 10
    # (read while it waits, as a broker's request threads mostly are: a running thread's
    # count is brought up to date only at the scheduler's next tick or switch)
    import os
    import threading
    import time

    from validate.broker_jvm import _tasks, _thread_cpu_s

    go, done, leave = threading.Event(), threading.Event(), threading.Event()

    def work() -> None:
        go.wait()
        t0 = time.thread_time()
        while time.thread_time() - t0 < 0.003:
            pass
        done.set()
        leave.wait()

    worker = threading.Thread(target=work)
    worker.start()
    pid, tid = os.getpid(), str(worker.native_id)

    def now() -> float:
        time.sleep(0.02)                          # the worker is waiting by then
        fields = next(f for t, _, f in _tasks(pid) or [] if t == tid)
        return _thread_cpu_s(pid, tid, fields)

    before = now()
    go.set()
    done.wait()
    used = now() - before
    leave.set()
    worker.join()
    assert 0.003 <= used < 0.0045, used
    # without the scheduler's file, user + system from stat, in ticks
    fields = ["0"] * 11 + ["3", "2"]
    assert _thread_cpu_s(None, "1", fields) == 5 / os.sysconf("SC_CLK_TCK")
