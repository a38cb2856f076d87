package main

import (
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
