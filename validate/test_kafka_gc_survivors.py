"""validate/kafka_gc_survivors.py: each young collection read from jstat, by phase."""

import pytest

from validate.kafka_gc_survivors import collections, main, table

HEAD = " S0C    S1C    S0U    S1U      EC       EU        OC         OU      YGC   YGCT\n"


def _line(s0u, s1u, eu, ou, ygc, ygct):
    return f" 0.0 0.0 {s0u} {s1u} 65536.0 {eu} 300000.0 {ou} {ygc} {ygct}\n"


def test_each_collection_gets_its_pause_survivors_and_phase():
    lines = [(0.0, HEAD), (0.1, _line(0, 2560, 60000, 150000, 7, 0.100)),
             (0.2, _line(2560, 0, 1000, 150000, 8, 0.104)),      # 4 ms, 2.5 MB left
             (0.3, _line(2560, 0, 64000, 150000, 8, 0.104)),
             (0.4, _line(0, 7680, 2000, 153000, 9, 0.110)),      # 6 ms, 7.5 MB, after
             (0.45, " 0.0 0.0 7680")]                             # cut short as jstat stops
    rows = collections(lines, {"steady": 0.0, "after new topics": 0.35})
    assert [r["phase"] for r in rows] == ["steady", "after new topics"]
    assert [r["pause_ms"] for r in rows] == pytest.approx([4.0, 6.0])
    assert [r["survivors_mb"] for r in rows] == pytest.approx([2.5, 7.5])
    assert rows[1]["old_mb"] == pytest.approx(153000 / 1024)
    text = table(rows, 0.0)
    assert "| 0.4 | after new topics | 6 | 7.50 | 149.4 |" in text
    assert collections([], {}) == []


@pytest.mark.parametrize("option,value", [("--rate", "0"), ("--topics", "-1"),
                                          ("--after-s", "-5")])
def test_a_bad_option_is_refused_before_a_broker_starts(option, value, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([option, value])
    assert exit_.value.code == 2
    assert option in capsys.readouterr().err
