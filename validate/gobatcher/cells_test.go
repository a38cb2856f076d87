package main

import (
	"testing"
	"time"
)

func testOptions() gridOptions {
	return gridOptions{procs: []int{1, 2}, reps: 3, focusReps: 30, k: 3,
		flushD: 500 * time.Microsecond, maxBlock: 2 * time.Second, sizeTimers: shippedAndR1}
}

func TestQuantileIsSimbatchsFloorRule(t *testing.T) {
	s := []int{10, 20, 30, 40}
	for p, want := range map[float64]int{0: 10, 0.5: 20, 0.99: 30, 1: 40} {
		if got := quantile(s, p); got != want {
			t.Errorf("quantile(%v, %v) = %d; want %d", s, p, got, want)
		}
	}
}

func TestInferReason(t *testing.T) {
	timer := batcherKey{version: v2, size: 100}
	drain := timer
	drain.drain = true
	cases := []struct {
		key  batcherKey
		size int
		want string
	}{{timer, 100, "size"}, {timer, 99, "timeout"}, {drain, 100, "drain"}, {drain, 1, "drain"}}
	for _, c := range cases {
		if got := inferReason(c.size, c.key); got != c.want {
			t.Errorf("inferReason(%d, drain=%v) = %q; want %q", c.size, c.key.drain, got, c.want)
		}
	}
}

func TestGridsHaveUniqueCells(t *testing.T) {
	full, _ := fullGrid(testOptions())
	for name, cells := range map[string][]cell{"small": smallGrid(testOptions()), "full": full} {
		seen := map[string]bool{}
		for _, c := range cells {
			if seen[c.id()] {
				t.Errorf("%s grid: %s twice", name, c.id())
			}
			seen[c.id()] = true
		}
	}
}

func TestFullGridKeepsR1AndTheLargestBlockAtCapAll(t *testing.T) {
	full, _ := fullGrid(testOptions())
	var r1, all2856 int
	for _, c := range full {
		if c.isR1() {
			r1++
		}
		if c.fan.kind == "all" && c.nTx == 2856 && c.key.drain {
			all2856++
		}
	}
	if r1 != 2*5 { // seq, cap 1, 4, 16, 64 at two GOMAXPROCS values
		t.Errorf("R1 rows: got %d; want 10", r1)
	}
	if all2856 == 0 {
		t.Error("no drain cell at cap = all, N = 2856")
	}
}

func TestSmallGridFitsCI(t *testing.T) {
	cells := smallGrid(testOptions())
	if est := estimateTotal(cells, 1); est > 60*time.Second {
		t.Errorf("small grid estimated at %s; CI allows about 90 s", est)
	}
}
