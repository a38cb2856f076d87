"""validate/kafka_threads.py's input checks, and the broker's extra properties (no broker
is started: the checks come first)."""

from __future__ import annotations

import pytest

from validate.kafka_broker import BrokerError, start
from validate.kafka_threads import main, parse_setting, properties


def test_a_setting_reads_name_network_and_io_threads():
    assert parse_setting("percore=1,2") == ("percore", (1, 2))
    assert properties((1, 2)) == ("num.network.threads=1", "num.io.threads=2")


@pytest.mark.parametrize("text", ["percore=1", "percore=0,2", "=1,2", "percore:1,2"])
def test_a_malformed_setting_is_refused_with_its_text(text):
    with pytest.raises(ValueError, match="NAME=NET,IO") as err:
        parse_setting(text)
    assert repr(text) in str(err.value)


@pytest.mark.parametrize(("argv", "says"), [
    (["--threads", "x=1"], "--threads must read NAME=NET,IO"),
    (["--configs", "linger10-p32-sparse"], "'linger10-p32-sparse' is not a dense"),
    (["--reps", "0"], "--reps must be at least 1; got 0"),
    (["--from-csv", "--out-dir", "/nonexistent/threads"], "no such directory"),
])
def test_bad_arguments_get_one_line_naming_the_option_and_value(argv, says, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def test_a_broker_property_that_is_not_key_value_is_refused_before_anything_starts():
    with pytest.raises(BrokerError, match="key=value; got 'num.io.threads'"):
        start(properties=("num.io.threads",))
