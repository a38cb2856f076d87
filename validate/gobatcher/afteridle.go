package main

import (
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"time"
)

// The after-idle probe (-after-idle): does the kernel give the process's second thread a CPU
// of its own when it wakes after the process has been idle? Each trial puts the process in a
// state (idle for a while, or one thread busy), then runs a burst: two goroutines at
// GOMAXPROCS 2 reading the clock in a tight loop for afterIdleBurst, each gap over
// afterIdleGap being time its thread was off a CPU. On this project's VM, with the states
// interleaved, a burst after 300 ms of idleness mostly loses one ~4 ms gap (a tick of the
// 250 Hz kernel) on a thread -- the woken thread waits on the waker's vCPU until the load
// balancer moves it -- and one after 20-100 ms rarely does (data/README.md).

const (
	afterIdleBurst = 15 * time.Millisecond
	afterIdleGap   = 50 * time.Microsecond
)

type afterIdleState struct {
	name    string
	prepare func()
}

func afterIdleStates() []afterIdleState {
	idle := func(d time.Duration) func() {
		return func() { runtime.GOMAXPROCS(2); time.Sleep(d) }
	}
	return []afterIdleState{
		{"busy (a burst right before)", func() { runtime.GOMAXPROCS(2); burstGaps(2, afterIdleBurst) }},
		{"idle 20 ms", idle(20 * time.Millisecond)},
		{"idle 40 ms", idle(40 * time.Millisecond)},
		{"idle 50 ms", idle(50 * time.Millisecond)},
		{"idle 100 ms", idle(100 * time.Millisecond)},
		{"idle 300 ms", idle(300 * time.Millisecond)},
		{"one thread busy 100 ms (GOMAXPROCS 1)", func() {
			runtime.GOMAXPROCS(1)
			burstGaps(1, 100*time.Millisecond)
			runtime.GOMAXPROCS(2)
		}},
	}
}

// burstGaps runs n clock-reading goroutines for d and returns the largest gap any of them
// saw and the gaps' sum over all of them.
func burstGaps(n int, d time.Duration) (largest, lost time.Duration) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var big, sum time.Duration
			last := time.Now()
			for {
				t := time.Now()
				if g := t.Sub(last); g > afterIdleGap {
					sum += g
					big = max(big, g)
				}
				last = t
				if t.Sub(start) > d {
					break
				}
			}
			mu.Lock()
			largest, lost = max(largest, big), lost+sum
			mu.Unlock()
		}()
	}
	wg.Wait()
	return largest, lost
}

// runAfterIdle measures reps bursts after each state and prints a table to w.
func runAfterIdle(w io.Writer, reps int) {
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	states := afterIdleStates()
	largest := make([][]float64, len(states))
	lost := make([][]float64, len(states))
	for r := 0; r < reps; r++ {
		for i, s := range states {
			s.prepare()
			g, l := burstGaps(2, afterIdleBurst)
			largest[i] = append(largest[i], float64(g.Microseconds()))
			lost[i] = append(lost[i], float64(l.Microseconds()))
		}
	}
	fmt.Fprintf(w, "# after-idle probe: a %s burst on two threads at GOMAXPROCS 2 after each state, %d trials each, interleaved\n", afterIdleBurst, reps)
	fmt.Fprintf(w, "| state before the burst | largest gap p50 / p90 us | lost (both threads) p50 / p90 us | bursts with a gap >= 2 ms |\n|---|---:|---:|---:|\n")
	for i, s := range states {
		sort.Float64s(largest[i])
		sort.Float64s(lost[i])
		long := 0
		for _, g := range largest[i] {
			if g >= 2000 {
				long++
			}
		}
		fmt.Fprintf(w, "| %s | %.0f / %.0f | %.0f / %.0f | %d of %d |\n", s.name,
			quantile(largest[i], 0.5), quantile(largest[i], 0.9),
			quantile(lost[i], 0.5), quantile(lost[i], 0.9), long, reps)
	}
}
