"""simbatch recommend --verify on question (c) scaled to the loopback broker: the recommended
lingers meet the p99 constraint on the real broker, predicted within 25 % of measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from simbatch.planning.recommend import recommend
from validate.verify import markdown, verify

pytestmark = pytest.mark.kafka
pytest.importorskip("confluent_kafka")
QUESTION = Path(__file__).resolve().parents[1] / "questions/c-lingers-loopback.toml"


def test_the_recommendation_holds_on_the_real_broker(kafka_broker):
    rec = recommend(QUESTION)
    results = verify(rec, top=1, bootstrap=kafka_broker["bootstrap"])
    print("\n" + markdown(results))
    best = results[0]
    assert best.params == rec.params
    assert best.constraints == {"latency_p99_s <= 0.05": True}
    for metric in ("latency_p50_s", "latency_p99_s"):
        assert best.within[metric], (metric, best.measured, best.predicted)
