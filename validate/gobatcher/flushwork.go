package main

import (
	"slices"
	"time"
)

// do performs the flush's work. A sleep stands for an I/O-bound batch call (R1's benchmark
// replaced the batch read by a 500 us sleep); a spin stands for a CPU-bound one. The spin is a
// fixed amount of work, calibrated to take d on an idle core, not "until d has passed": on a
// busy core a CPU-bound callback takes longer, and that is what the cell measures.
func (f flushSpec) do(spinIters int64) {
	if f.kind == "sleep" {
		time.Sleep(f.d)
		return
	}
	spin(spinIters)
}

// spinSink keeps the compiler from removing the loop; it is written only if the xorshift
// state hits zero, which it never does, so concurrent spins do not race on it.
var spinSink uint64

// spin runs n rounds of an xorshift step: pure CPU, no memory traffic, preemptible (Go's
// asynchronous preemption reaches tight loops since Go 1.14).
func spin(n int64) {
	x := uint64(88172645463325252)
	for i := int64(0); i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	if x == 0 {
		spinSink++
	}
}

// calibrateSpin returns how many spin rounds take d, from the fastest of several trials (the
// least disturbed by neighbours on a shared machine).
func calibrateSpin(d time.Duration) int64 {
	const probe = 200_000
	spin(probe) // warm up
	var perRound []float64
	for i := 0; i < 41; i++ {
		t := time.Now()
		spin(probe)
		perRound = append(perRound, float64(time.Since(t))/probe)
	}
	best := slices.Min(perRound)
	return int64(float64(d) / best)
}
