"""What a Kafka run reports: latencies per message and per request, and how many messages
the producer held.

* ``latency_{mean,p50,p90,p99,max}_s``: publish to consume, per message (teranode's
  ``linger_latency_regression_test.go``: percentile = ``sorted[floor((n - 1) p)]``, numpy's
  ``method="lower"``), pooled over replications;
* ``producer_latency_{p50,p99}_s``: publish (into the outer batcher) to the broker's
  acknowledgement, per message: the producer end to end;
* ``client_latency_{p50,p99}_s``: Produce (handed to the client) to the acknowledgement: the
  client alone (franz-go's record promise);
* ``request_latency_{p50,p99,max}_s``: per produce request, sent to answered: the broker
  write latency a client's hooks see (franz-go ``HookBrokerE2E``);
* ``request_latency_p99_dash_s``: the same p99 as teranode's metrics read it: each request
  observed, when its answer is read, into a Prometheus histogram with teranode's buckets
  (:data:`TERANODE_LATENCY_BUCKETS_S`, whose lowest ends at 64 ms), and
  ``histogram_quantile(0.99, ...)`` of the whole run (:func:`histogram_quantile`). Any p99
  under 64 ms reads 63.4 ms;
* ``request_latency_p99_dash_{mean,max}_s``: the same per :data:`DASHBOARD_WINDOW_S` window
  with requests, as a dashboard's panel plots it, and the mean and largest over the run
  (:func:`dashboard_quantile`);
* ``outer_buffered_{mean,max}``: messages published and not yet handed to Produce (the outer
  batcher's buffer, teranode's buffered-messages gauge), time-weighted mean over the run and
  its peak, per producer (mean over producers, and the largest);
* ``outer_gauge_{mean,max}``: the same count as teranode's gauge samples it: the drain
  goroutine updates its buffered-count gauge once every 64 passes of its loop (a pass per
  message received, mostly), so here at every 64th message a producer publishes, the count
  it finds held (mean over samples and producers, and the largest); short peaks between
  samples are not seen, as on the dashboard;
* ``client_buffered_{mean,max}``: records between Produce and their acknowledgement
  (franz-go's buffered records, the ``MaxBufferedRecords`` count), likewise;
* ``broker_cpu_cores``: the broker JVM's CPU over the run, in cores (all brokers; 0 without
  the broker's CPU model, ``[broker] cores``);
* ``requests``, ``records_per_request``, ``outer_flushes``, ``duration_s`` (first publish to
  last consume), ``throughput_msgs_per_s``.
"""

from __future__ import annotations

import numpy as np

QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
METRICS = ("latency_mean_s", *(f"latency_{q}_s" for q, _ in QUANTILES), "latency_max_s",
           "producer_latency_p50_s", "producer_latency_p99_s", "client_latency_p50_s",
           "client_latency_p99_s", "request_latency_p50_s", "request_latency_p99_s",
           "request_latency_max_s", "request_latency_p99_dash_s",
           "request_latency_p99_dash_mean_s",
           "request_latency_p99_dash_max_s", "outer_buffered_mean", "outer_buffered_max",
           "outer_gauge_mean", "outer_gauge_max",
           "client_buffered_mean", "client_buffered_max", "broker_cpu_cores", "requests",
           "records_per_request", "outer_flushes", "duration_s", "throughput_msgs_per_s")
"""Every metric of a Kafka case (see the module docstring)."""


def quantile(values: np.ndarray, q: float) -> float:
    """The published rule, ``sorted[floor((n - 1) q)]``; NaN for no values."""
    if values.size == 0:
        return float("nan")
    return float(np.quantile(values, q, method="lower"))


def latency_metrics(latency: np.ndarray) -> dict[str, float]:
    """Mean, percentiles (``method="lower"``, the published rule) and maximum, seconds."""
    m = {"latency_mean_s": float(latency.mean())}
    for name, q in QUANTILES:
        m[f"latency_{name}_s"] = quantile(latency, q)
    m["latency_max_s"] = float(latency.max())
    return m


TERANODE_LATENCY_BUCKETS_S = (0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384,
                              32.768, 65.536, 131.072)
"""The upper bounds of teranode's ``util.MetricsBucketsMilliLongSeconds`` (``util/metrics.go``,
unchanged since bsv-blockchain 706e75931, 2024-01-29), the buckets of its Kafka producer's
``e2e_duration_seconds`` (a produce request's write to its response's read) and
``produce_request_latency_seconds`` (the same plus the wait before the write) histograms,
which franz-go's ``HookBrokerE2E`` feeds (``util/kafka/metrics.go`` and
``producer_hooks.go``, e.g. icellan/teranode 6e0e7638)."""

DASHBOARD_WINDOW_S = 60.0
"""The window of a dashboard's ``rate(..._bucket[1m])``: assumed (teranode's dashboards are
not published), windows taken end to end from the run's start."""


def histogram_quantile(q: float, values: np.ndarray,
                       bounds: tuple[float, ...] = TERANODE_LATENCY_BUCKETS_S) -> float:
    """Prometheus's ``histogram_quantile(q, ...)`` of ``values`` observed into a histogram
    with these upper bounds and ``+Inf`` (``promql/quantile.go``, ``bucketQuantile``): the
    rank ``q x count`` is found in the first bucket whose cumulative count reaches it and
    interpolated linearly inside it, the lowest bucket starting at 0; a rank in the ``+Inf``
    bucket gives the largest finite bound. A value on a bound counts in that bound's bucket
    (``le``). NaN for no values.

    Examples
    --------
    >>> histogram_quantile(0.99, np.array([0.001, 0.004, 0.010]))   # all under 64 ms
    0.06336
    >>> histogram_quantile(0.5, np.array([0.1, 0.1, 0.2, 0.2]))     # rank 2 of (64, 128]
    0.128
    """
    if values.size == 0:
        return float("nan")
    edges = np.asarray(bounds, dtype=np.float64)
    cum = np.cumsum(np.bincount(np.searchsorted(edges, values, side="left"),
                                minlength=edges.size + 1))
    rank = q * float(cum[-1])
    b = int(np.searchsorted(cum[:-1], rank, side="left"))
    if b == edges.size:
        return float(edges[-1])
    start, below = (0.0, 0) if b == 0 else (float(edges[b - 1]), int(cum[b - 1]))
    return float(start + (edges[b] - start) * (rank - below) / (cum[b] - below))


def dashboard_quantile(q: float, at_s: np.ndarray, values: np.ndarray,
                       window_s: float = DASHBOARD_WINDOW_S) -> tuple[float, float]:
    """(mean, largest) over the ``window_s`` windows with observations of
    :func:`histogram_quantile` of the values observed in each (observed at ``at_s``): a
    dashboard's panel of ``histogram_quantile(q, rate(..._bucket[window]))`` over the run,
    averaged or read at its peak. NaN for no values.

    Examples
    --------
    >>> dashboard_quantile(0.99, np.array([1.0, 2.0, 61.0]), np.array([0.01, 0.02, 0.1]))
    (0.09536, 0.12736)
    """
    if values.size == 0:
        return float("nan"), float("nan")
    window = np.floor(at_s / window_s).astype(np.int64)
    order = np.argsort(window, kind="stable")
    _, first = np.unique(window[order], return_index=True)
    p = [histogram_quantile(q, v) for v in np.split(values[order], first[1:])]
    return float(np.mean(p)), float(max(p))


def held(start: np.ndarray, end: np.ndarray, span_s: float) -> tuple[float, float]:
    """(time-weighted mean, peak) of how many of the intervals ``[start, end)`` are open at
    once, over ``span_s`` seconds."""
    if start.size == 0 or span_s <= 0:
        return 0.0, 0.0
    mean = float((end.sum() - start.sum()) / span_s)
    starts = start if _sorted(start) else np.sort(start)
    ends = end if _sorted(end) else np.sort(end)
    # at each start: intervals started by then minus those ended by then (an interval
    # ending at an instant is closed before one starting then is counted)
    open_now = np.arange(1, starts.size + 1) - np.searchsorted(ends, starts, side="right")
    return mean, float(open_now.max())


def _sorted(values: np.ndarray) -> bool:
    return bool((values[1:] >= values[:-1]).all())


def per_producer(producer: np.ndarray | None, k: int, start: np.ndarray, end: np.ndarray,
                 span_s: float) -> tuple[float, float]:
    """:func:`held` per producer: (mean of the means, largest peak)."""
    if producer is None or k == 1:
        return held(start, end, span_s)
    results = [held(start[producer == p], end[producer == p], span_s) for p in range(k)]
    return float(np.mean([m for m, _ in results])), float(max(x for _, x in results))


GAUGE_EVERY = 64
"""The drain goroutine updates its buffered-count gauge every 64 passes of its loop."""


def gauge(publish: np.ndarray, handed: np.ndarray, every: int = GAUGE_EVERY
          ) -> tuple[float, float]:
    """(mean, peak) of one producer's held messages sampled at every ``every``-th publish:
    the messages published before it and not yet handed on (``handed`` is non-decreasing:
    the outer batcher hands messages on in order). NaN without a sample.

    Examples
    --------
    >>> gauge(np.array([0.0, 1, 2, 3]), np.array([2.5, 2.5, 2.5, 3.5]), every=2)
    (0.5, 1.0)
    """
    at = np.arange(every - 1, publish.size, every)
    if at.size == 0:
        return float("nan"), float("nan")
    done = np.minimum(np.searchsorted(handed, publish[at], side="right"), at)
    held = at - done
    return float(held.mean()), float(held.max())


def gauge_per_producer(producer: np.ndarray | None, k: int, publish: np.ndarray,
                       handed: np.ndarray) -> tuple[float, float]:
    """:func:`gauge` per producer: (mean of the means, largest peak)."""
    if producer is None or k == 1:
        return gauge(publish, handed)
    results = [gauge(publish[producer == p], handed[producer == p]) for p in range(k)]
    sampled = [r for r in results if np.isfinite(r[0])]
    if not sampled:
        return float("nan"), float("nan")
    return float(np.mean([m for m, _ in sampled])), float(max(x for _, x in sampled))
