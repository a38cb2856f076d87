package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func testOptions() gridOptions {
	return gridOptions{procs: []int{1, 2}, reps: 3, focusReps: 30, phaseReps: 100, k: 3,
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

func TestPhaseBoundCellsGetThePhaseRepetitions(t *testing.T) {
	var bound []string
	for _, c := range smallGrid(testOptions()) {
		if c.phaseBound() {
			bound = append(bound, c.id())
			if c.reps != 100 {
				t.Errorf("%s: %d repetitions; want -phase-reps 100", c.id(), c.reps)
			}
		} else if c.reps == 100 {
			t.Errorf("%s: not phase-bound but %d repetitions", c.id(), c.reps)
		}
	}
	// v1 at 4096 / 5 ms, every transaction at once, N = 16, 64, 256 (768 inputs <= 4096), and
	// at 100 / 10 ms with a cap of 16 (48 inputs a round) N = 16 and 64 (4 rounds), not 256
	// or the sequential loop (16 rounds); at both GOMAXPROCS values
	if len(bound) != 2*(3+2) {
		t.Errorf("phase-bound cells: %v", bound)
	}
}

func TestTheIdleSpellIsDrawnBeforeV1BlocksOnly(t *testing.T) {
	draws := func() []time.Duration {
		r := &runner{idle: rand.New(rand.NewPCG(7, idleStream))}
		v1c := cell{key: batcherKey{version: v1, size: 4096, timeout: 5 * time.Millisecond}}
		v2c := cell{key: batcherKey{version: v2, size: 4096, timeout: 5 * time.Millisecond}}
		var out []time.Duration
		for i := 0; i < 2000; i++ {
			if d := r.idleBefore(v2c); d != 0 {
				t.Fatalf("a v2 block idled %s before it", d)
			}
			out = append(out, r.idleBefore(v1c))
		}
		return out
	}
	a, b := draws(), draws()
	if !slices.Equal(a, b) {
		t.Error("the same seed drew other idle spells")
	}
	var sum time.Duration
	var under1ms int
	for _, d := range a {
		if d < 0 || d >= 10*time.Millisecond {
			t.Fatalf("idle %s outside [0, 2 timeouts)", d)
		}
		if d < time.Millisecond {
			under1ms++
		}
		sum += d
	}
	// the sum of two uniform draws: mean one timeout, triangular (P(< 1 ms) = 0.02)
	if mean := sum / time.Duration(len(a)); mean < 4800*time.Microsecond || mean > 5200*time.Microsecond {
		t.Errorf("mean idle %s; want about 5 ms", mean)
	}
	if under1ms > 80 {
		t.Errorf("%d of 2000 idle spells under 1 ms; a triangular density gives about 40", under1ms)
	}
}

// The median's interval ranks are the binomial ones (scipy.stats.binom: the largest l with
// P(Bin(n, 1/2) < l) <= 0.025), and the whole range below 9 blocks.
func TestMedianRankIsTheBinomialOne(t *testing.T) {
	for n, want := range map[int]int{1: 1, 5: 1, 6: 1, 9: 2, 10: 2, 15: 4, 30: 10, 60: 22, 100: 40} {
		if got := medianRank(n); got != want {
			t.Errorf("medianRank(%d) = %d; want %d", n, got, want)
		}
	}
}

func millis(xs ...float64) []time.Duration {
	out := make([]time.Duration, len(xs))
	for i, x := range xs {
		out[i] = time.Duration(x * float64(time.Millisecond))
	}
	return out
}

// A cell is given blocks while its median is not known to 15 % and it has fewer than
// -settle-reps; a tight cell, one already at the limit, and one still within its planned
// blocks are not.
func TestOnlyAnUnsettledCellIsGivenMoreBlocks(t *testing.T) {
	tight := millis(1.0, 1.05, 1.1, 1.12, 1.2)
	bimodal := millis(5.6, 20.9, 31.7, 237.8, 253.7) // full10's drain, pool 4, N = 1000, spin, p2
	if !medianSettled(tight) || medianSettled(bimodal) {
		t.Fatalf("settled: tight %t, bimodal %t; want true, false", medianSettled(tight), medianSettled(bimodal))
	}
	// 30 blocks of two modes stay unsettled however many there are
	var two []time.Duration
	for i := 0; i < 30; i++ {
		two = append(two, millis(10+float64(i%2)*90)...)
	}
	if medianSettled(two) {
		t.Errorf("30 blocks at 10 and 100 ms: settled; want not")
	}
	for _, tc := range []struct {
		name        string
		reps, limit int
		times       []time.Duration
		want        bool
	}{
		{"unsettled after its planned blocks", 5, 60, bimodal, true},
		{"settled", 5, 60, tight, false},
		{"at -settle-reps", 5, 5, bimodal, false},
		{"-settle-reps 0", 5, 0, bimodal, false},
		{"planned blocks still to run", 6, 60, bimodal, false},
	} {
		c := cell{reps: tc.reps}
		got := extend(&c, tc.times, tc.limit)
		if got != tc.want || c.reps != tc.reps+map[bool]int{true: 1}[tc.want] {
			t.Errorf("%s: extend = %t, reps %d; want %t", tc.name, got, c.reps, tc.want)
		}
	}
}
