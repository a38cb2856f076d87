package main

import (
	"math"
	"slices"
	"time"
)

// quantile of an ascending slice by simbatch's rule (README: sorted[floor((n-1)p)]), so the
// harness and the simulator report the same statistic.
func quantile[T any](sorted []T, p float64) T {
	return sorted[int(float64(len(sorted)-1)*p)]
}

// latencyQuantiles are the item latencies (Put to completion) of one block, in seconds.
type latencyQuantiles struct{ p50, p90, p99, max float64 }

func itemLatencies(items []item) latencyQuantiles {
	lat := make([]int64, len(items))
	for i, it := range items {
		lat[i] = it.doneNs - it.putNs
	}
	slices.Sort(lat)
	s := func(ns int64) float64 { return time.Duration(ns).Seconds() }
	return latencyQuantiles{s(quantile(lat, 0.5)), s(quantile(lat, 0.9)), s(quantile(lat, 0.99)),
		s(lat[len(lat)-1])}
}

// flushSummary is a block's flushes: batch sizes, and how many were full (len == size) or
// partial. Which trigger fired is inferred from the length: without drain mode a batch is
// dispatched at len == size (size trigger) or below it by the timer; the harness never
// calls Trigger or Close mid-run. With drain mode every batch is a drain flush.
type flushSummary struct {
	n, full, partial int
	sizeMin, sizeMax int
	sizeP50          int
	sizeMean         float64
	byReason         map[string]int
}

func summarizeFlushes(fl []flushRec, key batcherKey) flushSummary {
	s := flushSummary{n: len(fl), byReason: map[string]int{}}
	if len(fl) == 0 {
		return s
	}
	sizes := make([]int, len(fl))
	total := 0
	for i, f := range fl {
		sizes[i] = f.size
		total += f.size
		if f.size == key.size {
			s.full++
		} else {
			s.partial++
		}
		s.byReason[inferReason(f.size, key)]++
	}
	slices.Sort(sizes)
	s.sizeMin, s.sizeMax, s.sizeP50 = sizes[0], sizes[len(sizes)-1], quantile(sizes, 0.5)
	s.sizeMean = float64(total) / float64(len(fl))
	return s
}

// inferReason is the trigger of one flush as far as its length tells (see flushSummary).
// v2's own report (reasonCounts) is compared with it per block.
func inferReason(size int, key batcherKey) string {
	switch {
	case key.drain:
		return "drain"
	case size == key.size:
		return "size"
	}
	return "timeout"
}

// settleTol and settleLevel: a cell's median block time is settled once the distribution-free
// confidence interval of the median at settleLevel lies within settleTol of the median: the
// judge (validate/calibrate_gobatcher.py) holds the model's median to 15 % of the measured
// one, which a median known no better than that cannot test.
const (
	settleTol   = 0.15
	settleLevel = 0.95
)

// medianSettled reports whether the median of the block times is settled (see settleTol).
// The interval is the order statistics x(l), x(n+1-l), with l the largest rank for which
// P(Bin(n, 1/2) < l) <= (1 - settleLevel) / 2: the textbook interval for a median that
// assumes nothing of the distribution, so a bimodal cell's (drain mode's few large flushes
// or one per transaction) stays wide however many blocks it has. Below 6 blocks no l
// reaches the level and the interval is the whole range, x(1) to x(n).
func medianSettled(times []time.Duration) bool {
	n := len(times)
	if n == 0 {
		return false
	}
	x := slices.Clone(times)
	slices.Sort(x)
	l := medianRank(n)
	m := float64(quantile(x, 0.5))
	return float64(x[n-l]) <= (1+settleTol)*m && float64(x[l-1]) >= m/(1+settleTol)
}

// medianRank is the rank l of medianSettled's interval for n blocks (at least 1).
func medianRank(n int) int {
	tail := (1 - settleLevel) / 2
	pmf := math.Pow(0.5, float64(n)) // P(Bin(n, 1/2) = 0)
	cdf, l := 0.0, 1
	for k := 0; k < n; k++ {
		cdf += pmf // P(Bin <= k) = P(Bin < k+1)
		if cdf > tail {
			break
		}
		l = k + 1
		pmf *= float64(n-k) / float64(k+1)
	}
	return max(l, 1)
}
