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


def _sweep(tmp_path):
    import simbatch

    text = (ROOT / "scenarios/kafka-partitions-linger-sweep.toml").read_text().replace(
        '"../models/', f'"{ROOT}/models/').replace("n_messages = 4000", "n_messages = 200")
    text = text.replace("[1, 4, 16, 64, 256, 1024]", "[64, 1, 8]")      # out of order
    path = tmp_path / "s.toml"
    path.write_text(text)
    scenario = simbatch.load_scenario(path)
    return scenario, simbatch.run_scenario(scenario, replications=2)


def test_the_percentile_plot_draws_one_line_per_linger_in_ascending_partitions(tmp_path):
    from simbatch.planning.plots import percentile_plot

    scenario, summaries = _sweep(tmp_path)
    data = percentile_plot(summaries, "producer.n_partitions",
                           ("latency_p50_s", "latency_p99_s"), tmp_path / "p.png", "t")
    assert data.title == "t" and set(data.series) == {"latency_p50_s", "latency_p99_s"}
    for metric, lines in data.series.items():
        assert set(lines) == {"linger_ms=0", "linger_ms=10", "linger_ms=100"}
        for label, points in lines.items():
            assert [p[0] for p in points] == [1, 8, 64]            # numeric, ascending
            linger = int(label.split("=")[1])
            for x, y, half in points:
                s = next(s for s in summaries if s.params == {
                    "producer.linger_ms": linger, "producer.n_partitions": x})
                assert (y, half) == (s.metrics[metric], s.ci95[metric])


def test_the_cdf_splits_into_panels_beyond_eight_lines(tmp_path):
    from simbatch.planning.plots import cdf_plot

    _, summaries = _sweep(tmp_path)                 # nine cases: three panels of three
    data = cdf_plot(summaries, tmp_path / "c.png")
    assert len(data.series) == 3 and all(len(v) == 3 for v in data.series.values())
    for lines in data.series.values():
        for points in lines.values():
            ys = [p[1] for p in points]
            assert ys == sorted(ys) and 0 < ys[0] and ys[-1] <= 1
