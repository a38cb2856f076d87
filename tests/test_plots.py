"""The CLI saves latency CDFs and the percentile-versus-partitions plot as PNG files."""

from __future__ import annotations

from simhelp import ROOT

from simbatch.cli import main


def test_sweep_writes_cdf_and_percentile_pngs(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    text = (ROOT / "scenarios/kafka-partitions-linger-sweep.toml").read_text().replace(
        '"../models/', f'"{ROOT}/models/')
    scenario.write_text(text.replace("n_messages = 4000", "n_messages = 200")
                        .replace("[1, 4, 16, 64, 256, 1024]", "[1, 8, 64]"))
    assert main(["run", str(scenario), "--replications", "1", "--plots", str(tmp_path)]) == 0
    for suffix in ("cdf", "percentiles"):
        png = tmp_path / f"kafka-partitions-linger-sweep-{suffix}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert "latency_p99 (ms)" in capsys.readouterr().out
