"""validate/host_probe.py: the probe beside a harness run gives the medians of its span,
and says NaN rather than failing when it cannot run."""

from __future__ import annotations

import math
import time

from validate.host_probe import HostProbe, probe, work


def test_the_probe_gives_the_span_s_medians():
    p = HostProbe()
    time.sleep(0.2)
    p.start()
    time.sleep(0.4)
    work_s, wake_s, trip_s = p.stop()
    assert 1e-7 < work_s < 0.05 and 0.0 <= wake_s < 0.05, (work_s, wake_s)
    assert 1e-7 < trip_s < 0.05, trip_s


def test_a_probe_that_cannot_answer_gives_nan():
    p = HostProbe()
    p.kill()
    assert all(math.isnan(x) for x in p.stop())


def test_the_work_is_fixed():
    assert work() == sum(i * i for i in range(1000))


def test_the_loop_ends_at_its_input_s_end(monkeypatch):
    import io

    import validate.host_probe as hp

    monkeypatch.setattr(hp.sys, "stdin", io.StringIO(""))
    monkeypatch.setattr(hp.select, "select", lambda r, w, x, t: (r, [], []))
    out = probe(0.001)
    assert out["samples"] == 0 and math.isnan(out["work_s"]) and math.isnan(out["trip_s"])
