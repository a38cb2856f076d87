"""A process holding a local broker that is sent SIGTERM (``timeout``, a job scheduler) still
stops the broker: no JVM is left running (no broker started here; its start and stop are
stood in for in the child process, which is what this checks)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

from validate.kafka_broker import HERE

CHILD = textwrap.dedent("""
    import sys, time
    import validate.kafka_broker as kb
    log = open(sys.argv[1], "a", buffering=1)
    kb.start = lambda properties=(), brokers=1: (log.write("started\\n"), {"pid": 4242,
        "pids": [4242], "bootstrap": "127.0.0.1:1", "data_dir": None})[1]
    kb.stop = lambda pid, data_dir=None: log.write(f"stopped {pid}\\n")
    with kb.KafkaBroker():
        print("ready", flush=True)
        time.sleep(60)
""")


def test_sigterm_stops_the_broker_before_the_process_ends(tmp_path):
    log = tmp_path / "broker.log"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(log)], cwd=HERE.parent,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        t0 = time.monotonic()
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=20) == 128 + signal.SIGTERM
        assert time.monotonic() - t0 < 10
    finally:
        if child.poll() is None:
            child.kill()
    assert log.read_text().splitlines() == ["started", "stopped 4242"]
