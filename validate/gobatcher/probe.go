package main

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
)

// The machine is shared: other processes take the CPU from the harness's threads. A probe
// measures how, between blocks, so that simbatch can model the host the blocks ran on
// ([host] stall_per_s, stall_us and wake_us, validate/calibrate_gobatcher.py):
//   - stalls: at GOMAXPROCS p, p goroutines each read the clock in a tight loop for the
//     probe's duration; a gap of more than stallGap between two readings is a stall (the
//     thread was not running);
//   - wake-ups (at GOMAXPROCS >= 2): how long an idle processor's thread takes to run a
//     goroutine it steals from a busy one's run queue (costs.go, wakeLatency; column
//     wake_steal_us, which replaced wake_us on 2026-11-27), and how long the runtime's
//     usleep(3) back-off before stealing runnext takes (backoffLatency).
//
// Probes run every -probe-every blocks, at each GOMAXPROCS of the grid, into probes.csv.
//
// The stall goroutines first spin for probeSettle without counting. Starting them wakes an
// idle processor's thread, and the kernel often places the woken thread on the waker's vCPU:
// measured on this VM (Linux, 250 Hz tick) with per-thread /proc/self/task/TID/schedstat, the
// two spinners then share one vCPU, their CPU times summing to ~10 ms in a 10 ms probe, and
// one waits ~4 ms on the run queue (run_delay: one tick, until the load balancer moves it),
// 1.8-4.4 ms after the probe starts, while no other thread on the machine used that time.
// Unsettled, those waits made a GOMAXPROCS 2 probe lose 17 % of its time, while the CPU-bound
// blocks at GOMAXPROCS 2 got 1.97 of 2 cores (process CPU time / wall). That placement belongs
// to the wake-up, which the wake probe measures (wakeLatency), not to other processes.
// The settle spin's stalls are written too (settle_stalled_s): in data/full6, 40 % of the
// GOMAXPROCS 2 settle spins lost more than 1 ms (p90 10.5 ms over both threads). Charging that
// to each modelled block's first wake-up made the predictions worse (94.7 % of the full
// grid's cells within 15 % became 86.0 %), so the blocks do not see it as often as the probe's
// own start does; it is a record, not a host parameter.
const (
	stallGap    = 30 * time.Microsecond
	probeSettle = 20 * time.Millisecond
)

type probeResult struct {
	procs  int
	start  time.Time
	busy   time.Duration // summed over the goroutines
	stalls []time.Duration
	// settleStalled: the stalls of the settle spin, summed over the goroutines: at
	// GOMAXPROCS >= 2 mostly the two threads sharing one vCPU after the wake-up
	settleStalled time.Duration
	wake          []float64 // microseconds, a steal from the run queue (wakeLatency)
	backoff       []float64 // microseconds
}

// wakesPerProbe is how many wake-up samples a probe at GOMAXPROCS >= 2 takes.
const wakesPerProbe = 8

// spinFor reads the clock in a tight loop for d and returns how long it ran and the gaps of
// more than stallGap between two readings.
func spinFor(d time.Duration) (time.Duration, []time.Duration) {
	var stalls []time.Duration
	start := time.Now()
	last := start
	for {
		t := time.Now()
		if gap := t.Sub(last); gap > stallGap {
			stalls = append(stalls, gap)
		}
		last = t
		if t.Sub(start) >= d {
			return last.Sub(start), stalls
		}
	}
}

// probeCPU runs one probe of duration d at GOMAXPROCS procs.
func probeCPU(procs int, d time.Duration) probeResult {
	setProcs(procs)
	res := probeResult{procs: procs, start: time.Now()}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < procs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, settling := spinFor(probeSettle)
			busy, stalls := spinFor(d)
			mu.Lock()
			res.busy += busy
			res.stalls = append(res.stalls, stalls...)
			for _, g := range settling {
				res.settleStalled += g
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if procs >= 2 {
		res.wake = wakeLatency(wakesPerProbe)
		res.backoff = backoffLatency(wakesPerProbe)
	}
	return res
}

// probeColumns documents probes.csv: one row per probe. stall_us lists every stall's
// length, space-separated; settle_s is the settle spin's time summed over the goroutines,
// settle_stalled_s its stalls' (the wake-up's shared vCPU, and the neighbours').
var probeColumns = []string{"probe_no", "start_unix_s", "gomaxprocs", "busy_s", "n_stalls",
	"stalled_s", "loadavg_1m", "stall_us", "wake_steal_us", "backoff_us", "settle_s", "settle_stalled_s"}

func (r probeResult) row(no int) []string {
	var total time.Duration
	us := make([]string, len(r.stalls))
	for i, s := range r.stalls {
		total += s
		us[i] = itoa(s.Microseconds())
	}
	list := func(xs []float64) string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = fmt.Sprintf("%.1f", x)
		}
		return strings.Join(out, " ")
	}
	return []string{itoa(no), fmt.Sprintf("%.3f", float64(r.start.UnixMicro())/1e6),
		itoa(r.procs), secs(r.busy), itoa(len(r.stalls)), secs(total),
		fmt.Sprintf("%.2f", loadavg1()), strings.Join(us, " "), list(r.wake), list(r.backoff),
		secs(probeSettle * time.Duration(r.procs)), secs(r.settleStalled)}
}

// probeAll runs one probe per GOMAXPROCS value and restores the previous setting.
func probeAll(procs []int, d time.Duration) []probeResult {
	prev := runtime.GOMAXPROCS(0)
	out := make([]probeResult, 0, len(procs))
	for _, p := range procs {
		out = append(out, probeCPU(p, d))
	}
	setProcs(prev)
	return out
}
