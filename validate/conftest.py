"""Fixtures for the calibration suite: a real single-node Kafka broker, started here."""

from __future__ import annotations

import shutil

import pytest

from validate.kafka_broker import fetch, start, stop


@pytest.fixture(scope="session")
def kafka_libs():
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not on PATH: the Kafka broker needs Java 17 and Maven")
    return fetch()


@pytest.fixture(scope="session")
def kafka_broker(kafka_libs):
    info = start(kafka_libs)
    try:
        yield info
    finally:
        stop(info["pid"], info["data_dir"])
