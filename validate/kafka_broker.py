"""Fetch Apache Kafka's jars from Maven Central and run a single-node KRaft broker on loopback.

``python -m validate.kafka_broker fetch``      download org.apache.kafka:kafka_2.13 and its
                                               runtime dependencies (Maven) into
                                               validate/.kafka/<version>/libs
``python -m validate.kafka_broker start``      start a broker on a free loopback port with a
                                               temporary data directory (tmpfs if any);
                                               prints JSON {"pid", "pids", "bootstrap",
                                               "data_dir"}; waits until
                                               the port accepts connections;
                                               ``--brokers N``: a cluster of N
``python -m validate.kafka_broker stop PID...  stop them by process id and remove the data
    [--data-dir DIR]``                         directory

In Python: ``with KafkaBroker() as broker: broker.bootstrap`` does start and stop, always
cleaning up (the broker is killed by its pid, its data directory removed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

KAFKA_VERSION = os.environ.get("SIMBATCH_KAFKA_VERSION", "3.9.1")
HERE = Path(__file__).resolve().parent
CACHE = HERE / ".kafka" / KAFKA_VERSION
LOG4J = HERE / "kafka-log4j.properties"
"""The brokers' logging: warnings to each node's log, the request log off (see the file)."""
POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>simbatch</groupId><artifactId>kafka-broker-fetch</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>
      <version>{v}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId>
      <version>1.7.36</version></dependency>
  </dependencies>
</project>
"""


class BrokerError(RuntimeError):
    """The broker could not be fetched, started or reached."""


def fetch(version: str = KAFKA_VERSION) -> Path:
    """Download the broker's jars (once); returns the libs directory."""
    libs = HERE / ".kafka" / version / "libs"
    if libs.is_dir() and any(libs.glob("kafka_2.13-*.jar")):
        return libs
    work = libs.parent
    work.mkdir(parents=True, exist_ok=True)
    (work / "pom.xml").write_text(POM.format(v=version))
    cmd = ["mvn", "-q", "-B", "-f", str(work / "pom.xml"), "dependency:copy-dependencies",
           f"-DoutputDirectory={libs}", "-DincludeScope=runtime"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        raise BrokerError(f"Maven could not fetch org.apache.kafka:kafka_2.13:{version}:\n"
                          + proc.stdout[-2000:] + proc.stderr[-2000:])
    return libs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise BrokerError("java not found on PATH (Java 17 is needed for the Kafka broker)")
    return java


def _run_class(libs: Path, main: str, args: list[str], **kw) -> subprocess.Popen:
    cp = os.pathsep.join(str(p) for p in sorted(libs.glob("*.jar")))
    extra = os.environ.get("SIMBATCH_KAFKA_JVM_OPTS", "").split()   # after ours: they win
    return subprocess.Popen([_java(), "-Xms256m", "-Xmx512m",
                             f"-Dlog4j.configuration={LOG4J.as_uri()}", *extra, "-cp", cp,
                             main, *args], **kw)


def set_log_level(bootstrap: str, nodes: int, logger: str, level: str,
                  libs: Path | None = None) -> None:
    """Set ``logger`` to ``level`` on nodes 1 to ``nodes`` of the running cluster at
    ``bootstrap``, at run time (Kafka's dynamic broker loggers, ``kafka.admin.ConfigCommand
    --entity-type broker-loggers``)."""
    cp = os.pathsep.join(str(p) for p in sorted((libs or fetch()).glob("*.jar")))
    for node in range(1, nodes + 1):
        try:
            done = subprocess.run(
                [_java(), "-cp", cp, "kafka.admin.ConfigCommand", "--bootstrap-server",
                 bootstrap.split(",")[0], "--alter", "--entity-type", "broker-loggers",
                 "--entity-name", str(node), "--add-config", f"{logger}={level}"],
                capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired as exc:
            raise BrokerError(f"setting {logger} to {level} on node {node} at {bootstrap} "
                              f"took over {exc.timeout:.0f} s") from exc
        if done.returncode != 0:
            raise BrokerError(f"setting {logger} to {level} on node {node} at {bootstrap} "
                              f"failed: {(done.stderr or done.stdout)[-1500:]}")


def data_parent() -> str | None:
    """Where the broker's data directory goes: ``SIMBATCH_KAFKA_DATA_PARENT``, else tmpfs
    (/dev/shm) when there is one. On this VM's disk, KRaft's metadata-log fsyncs stalled acks
    by 50-130 ms in 4 of 6 identical sparse runs, against 1 of 6 on tmpfs (the recorded
    Aerospike data used an in-memory namespace for the same reason)."""
    chosen = os.environ.get("SIMBATCH_KAFKA_DATA_PARENT")
    if chosen:
        return chosen
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def start(libs: Path | None = None, timeout_s: float = 90.0,
          properties: tuple[str, ...] = (), brokers: int = 1) -> dict:
    """Format storage and start a KRaft cluster on loopback of ``brokers`` nodes (node 1
    broker and controller, the others brokers of its quorum); wait until every node accepts
    connections. ``properties``: more ``key=value`` lines for each node's
    server.properties (e.g. ``num.io.threads=2``), after the defaults, so they win. Returns
    ``{"pid", "pids", "bootstrap", "data_dir"}``: ``pid`` is node 1's, ``bootstrap`` lists
    every node."""
    bad = [p for p in properties if "=" not in p or not p.split("=", 1)[0].strip()]
    if bad:
        raise BrokerError(f"a broker property must read key=value; got {bad[0]!r}")
    if not isinstance(brokers, int) or brokers < 1:
        raise BrokerError(f"brokers must be a whole number of at least 1; got {brokers!r}")
    libs = libs or fetch()
    data = Path(tempfile.mkdtemp(prefix="simbatch-kafka-", dir=data_parent()))
    ports, ctrl = [free_port() for _ in range(brokers)], free_port()
    cluster = str(uuid.uuid4())
    pids: list[int] = []
    try:
        for node, port in enumerate(ports, start=1):
            listeners = f"PLAINTEXT://127.0.0.1:{port}"
            if node == 1:
                listeners += f",CONTROLLER://127.0.0.1:{ctrl}"
            props = data / (f"node{node}.properties" if brokers > 1 else "server.properties")
            props.write_text("\n".join([
                f"process.roles={'broker,controller' if node == 1 else 'broker'}",
                f"node.id={node}", f"controller.quorum.voters=1@127.0.0.1:{ctrl}",
                f"listeners={listeners}", f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
                "controller.listener.names=CONTROLLER", "inter.broker.listener.name=PLAINTEXT",
                "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                f"log.dirs={data / (f'logs{node}' if brokers > 1 else 'logs')}",
                "num.partitions=1", "offsets.topic.replication.factor=1",
                "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
                "group.initial.rebalance.delay.ms=0", "auto.create.topics.enable=true",
                *properties, ""]))
            fmt = subprocess.run(
                [_java(), "-cp", os.pathsep.join(str(p) for p in libs.glob("*.jar")),
                 "kafka.tools.StorageTool", "format", "-t", cluster, "-c", str(props)],
                capture_output=True, text=True, timeout=120)
            if fmt.returncode != 0:
                raise BrokerError(f"formatting KRaft storage failed: {fmt.stderr[-2000:]}")
            name = f"broker{node}.log" if brokers > 1 else "broker.log"
            with open(data / name, "w") as log:
                proc = _run_class(libs, "kafka.Kafka", [str(props)], stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
            pids.append(proc.pid)
            _wait_for(proc, port, data / name, time.monotonic() + timeout_s, timeout_s)
    except BaseException:
        stop_all(pids, str(data))
        raise
    return {"pid": pids[0], "pids": pids, "data_dir": str(data),
            "bootstrap": ",".join(f"127.0.0.1:{port}" for port in ports)}


def _wait_for(proc: subprocess.Popen, port: int, log: Path, deadline: float,
              timeout_s: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BrokerError(f"the broker exited with {proc.returncode}:\n"
                              f"{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    raise BrokerError(f"the broker did not accept connections within {timeout_s:.0f} s")


def stop(pid: int, data_dir: str | None = None, timeout_s: float = 20.0) -> None:
    """Stop the broker by its process id (TERM, then KILL) and remove its data directory."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.2)
        except ProcessLookupError:
            break
    else:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if data_dir:
        shutil.rmtree(data_dir, ignore_errors=True)


def stop_all(pids: list[int], data_dir: str | None = None) -> None:
    """Stop every node of a cluster (:func:`stop`) and remove its data directory."""
    for pid in pids[1:]:
        stop(pid)
    if pids:
        stop(pids[0], data_dir)
    elif data_dir:
        shutil.rmtree(data_dir, ignore_errors=True)


class KafkaBroker:
    """Context manager: a running local cluster (one node unless ``brokers``), always
    stopped and cleaned up; ``properties`` and ``brokers`` as :func:`start`'s; ``pid`` is
    node 1's, ``pids`` every node's. A SIGTERM to the process (``timeout``, a job
    scheduler) while it runs becomes ``SystemExit``, so the broker is stopped then too: the
    default action would end the process at once and leave the broker's JVM running."""

    def __init__(self, properties: tuple[str, ...] = (), brokers: int = 1) -> None:
        self.properties = properties
        self.brokers = brokers
        self._previous: object = None

    def __enter__(self) -> KafkaBroker:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, _terminated)
        info = start(properties=self.properties, brokers=self.brokers)
        self.pid, self.bootstrap, self.data_dir = info["pid"], info["bootstrap"], info["data_dir"]
        self.pids: list[int] = info["pids"]
        return self

    def __exit__(self, *exc) -> None:
        try:
            stop_all(self.pids, self.data_dir)
        finally:
            if self._previous is not None:
                signal.signal(signal.SIGTERM, self._previous)  # type: ignore[arg-type]
                self._previous = None


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fetch", allow_abbrev=False)
    sp = sub.add_parser("start", allow_abbrev=False)
    sp.add_argument("--brokers", type=int, default=1)
    st = sub.add_parser("stop", allow_abbrev=False)
    st.add_argument("pid", type=int, nargs="+")
    st.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    try:
        if args.cmd == "fetch":
            print(fetch())
        elif args.cmd == "start":
            print(json.dumps(start(brokers=args.brokers)))
        else:
            stop_all(args.pid, args.data_dir)
    except BrokerError as exc:
        print(f"kafka_broker: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
