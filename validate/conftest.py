"""Fixtures for the calibration suite: the Kafka broker (a user's cluster named by
``SIMBATCH_KAFKA_BOOTSTRAP=host:port``, else a real single-node broker started here) and the
Go and Java harnesses (built here; a test that needs one is skipped, saying why, where ``go``
or ``mvn``/``java`` is missing)."""

from __future__ import annotations

import shutil

import pytest

from validate.kafka_broker import fetch, start, stop
from validate.kafka_harness import (
    HarnessUnavailable,
    build_franzgo,
    build_javaproducer,
    user_bootstrap,
)


@pytest.fixture(scope="session")
def kafka_libs():
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not on PATH: the Kafka broker needs Java 17 and Maven")
    return fetch()


@pytest.fixture(scope="session")
def kafka_broker(request):
    user = user_bootstrap()
    if user is not None:                 # the user's cluster replaces the local broker
        yield {"pid": None, "bootstrap": user, "data_dir": None}
        return
    info = start(request.getfixturevalue("kafka_libs"))
    try:
        yield info
    finally:
        stop(info["pid"], info["data_dir"])


@pytest.fixture(scope="session")
def harnesses() -> dict[str, str]:
    """Which clients can be measured here: ``{client: ""}`` for the available ones and
    ``{client: reason}`` for the others (the Go and Java harnesses are built now)."""
    status = {"librdkafka": ""}
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        status["librdkafka"] = "confluent-kafka is not installed"
    for client, build in (("franz-go", build_franzgo), ("java", build_javaproducer)):
        try:
            build()
            status[client] = ""
        except HarnessUnavailable as exc:
            status[client] = str(exc)
    return status


def need(harnesses: dict[str, str], client: str) -> None:
    """Skip, saying why, unless ``client``'s harness is available."""
    if harnesses[client]:
        pytest.skip(harnesses[client])


@pytest.fixture
def listed_cpu(monkeypatch) -> str:
    """This host taken as the first CPU the shipped host-speed file has a line for
    (models/kafka-host-speed-loopback.toml), for the tests of what is done with a line, which
    hold on any host; returns its name."""
    import validate.kafka_models as km

    cpu = next(iter(km.host_speed_lines()))
    monkeypatch.setattr(km, "cpu_name", lambda: cpu)
    return cpu
