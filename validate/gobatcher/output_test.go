package main

import (
	"slices"
	"testing"
	"time"
)

func TestEveryRowHasOneFieldPerColumn(t *testing.T) {
	c := cell{procs: 2, key: batcherKey{version: v2, size: 100, timeout: 10 * time.Millisecond,
		drain: true}, fan: fanout{kind: "all"}, nTx: 2, k: 3, flush: flushSpec{kind: "sleep",
		d: 500 * time.Microsecond}, no: 7}
	res := blockResult{c: c, spawned: -1, otherP: 42 * time.Microsecond}
	if got := len(res.row()); got != len(blockColumns) {
		t.Errorf("blocks.csv row has %d fields for %d columns", got, len(blockColumns))
	}
	fl := []flushRec{{startNs: 1500, endNs: 2500, size: 3, p: 1}}
	for _, row := range flushRows(c, 0, 1000, fl) {
		if len(row) != len(flushColumns) {
			t.Errorf("flushes.csv row has %d fields for %d columns", len(row), len(flushColumns))
		}
		if row[len(row)-1] != "1" {
			t.Errorf("flush processor %q, want 1", row[len(row)-1])
		}
	}
	items := []item{{putNs: 1100, putP: 0, doneNs: 2500}, {putNs: 1200, putP: 1, doneNs: 2500}}
	rows := itemRows(c, 3, 1000, items)
	if len(rows) != 2 || len(rows[1]) != len(itemColumns) {
		t.Fatalf("items.csv rows %v, want 2 of %d fields", rows, len(itemColumns))
	}
	if want := []string{"7", "3", "1", "0.2", "1", "1.5"}; !slices.Equal(rows[1], want) {
		t.Errorf("items.csv row %v, want %v (times in us from the block's start)", rows[1], want)
	}
}

func TestUsOrEmptyLeavesWhatWasNotObservedEmpty(t *testing.T) {
	if got := usOrEmpty(-1); got != "" {
		t.Errorf("usOrEmpty(-1) = %q, want empty", got)
	}
	if got := usOrEmpty(1560 * time.Nanosecond); got != "1.6" {
		t.Errorf("usOrEmpty(1.56us) = %q, want 1.6", got)
	}
}

func TestBlockStartIsOnTheKernelsMonotonicClock(t *testing.T) {
	// the column is read against `perf record -k CLOCK_MONOTONIC`: the block's start, as
	// epochMonoNs + an offset from epoch, must fall between two direct readings of that clock
	before := monotonicNs()
	start := epochMonoNs + now()
	after := monotonicNs()
	if before < 0 || epochMonoNs < 0 {
		t.Fatalf("CLOCK_MONOTONIC not read: %d, epoch %d", before, epochMonoNs)
	}
	if slack := int64(50 * time.Microsecond); start < before-slack || start > after+slack {
		t.Errorf("block start %d ns not within [%d, %d] (+-50 us)", start, before, after)
	}
	if got := monoOrEmpty(1_500_000_007); got != "1.500000007" {
		t.Errorf("monoOrEmpty = %q, want 1.500000007", got)
	}
	if got := monoOrEmpty(-1); got != "" {
		t.Errorf("monoOrEmpty(-1) = %q, want empty", got)
	}
}
