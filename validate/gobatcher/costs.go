package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	batcherv2 "github.com/bsv-blockchain/go-batcher/v2"
)

// The Go runtime operations simbatch's [go] section charges (simbatch/batching/gocpu.py), each
// measured on this machine by a micro-benchmark. Every benchmark but the wake-up runs at
// GOMAXPROCS 1, so a cost is CPU on one processor; each is the fastest of several trials (the
// one least disturbed by neighbours: their effect is measured separately, probe.go).

type costResult struct {
	name  string
	ns    float64
	about string
}

// trial runs f (which does n operations) `trials` times and returns the fastest ns/op.
func trial(trials, n int, f func(n int)) float64 {
	best := 0.0
	for t := 0; t < trials; t++ {
		if t%10 == 0 {
			runtime.GC()
		}
		start := time.Now()
		f(n)
		ns := float64(time.Since(start).Nanoseconds()) / float64(n)
		if t == 0 || ns < best {
			best = ns
		}
	}
	return best
}

// spawnRun: go func(){ wg.Done() }() in rounds of 1000 (a block's worth of goroutines at
// once), each round then Waited for: a spawn, a switch into the new goroutine, its Done and
// its exit.
func spawnRun(n int) {
	var wg sync.WaitGroup
	for done := 0; done < n; done += 1000 {
		for i := 0; i < min(1000, n-done); i++ {
			wg.Add(1)
			go func() { wg.Done() }()
		}
		wg.Wait()
	}
}

// gosched: two goroutines yielding to each other: one switch per Gosched.
func gosched(n int) {
	var wg sync.WaitGroup
	wg.Add(2)
	for g := 0; g < 2; g++ {
		go func() {
			defer wg.Done()
			for i := 0; i < n/2; i++ {
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
}

// chanPair: a buffered send and receive in one goroutine (two channel operations).
func chanPair(n int) {
	c := make(chan int, 1)
	for i := 0; i < n; i++ {
		c <- i
		<-c
	}
}

// chanContended: a goroutine makes n buffered sends while one on the other processor makes
// n non-blocking receives from the same channel in a loop without pause (as go-batcher's
// drain loop receives). The channel starts with a backlog, so every receive finds an item
// and takes the lock (a non-blocking receive from an empty channel returns without it:
// chanrecv's fast path). The 2n operations serialize on the lock and its cache line, so the
// time per operation is how long one holds the lock as the other processor sees it ([go]
// lock_ns; half of what chanContended takes per n). Needs GOMAXPROCS 2; the sender never
// blocks.
func chanContended(n int) {
	const backlog = 4096
	c := make(chan int, n+backlog)
	for i := 0; i < backlog; i++ {
		c <- i
	}
	var started atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		started.Store(true)
		for got := 0; got < n; {
			select {
			case <-c:
				got++
			default:
			}
		}
	}()
	for !started.Load() {
		runtime.Gosched()
	}
	for i := 0; i < n; i++ {
		c <- i
	}
	<-done
}

// pingPong: two goroutines hand a value back and forth over unbuffered channels; one round
// trip is two hand-offs, each a send that readies a parked receiver and a park.
func pingPong(n int) {
	a, b := make(chan int), make(chan int)
	go func() {
		for v := range a {
			b <- v
		}
	}()
	for i := 0; i < n; i++ {
		a <- i
		<-b
	}
	close(a)
}

func wgDone(n int) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		wg.Done()
	}
}

// timerReset: Reset and Stop of one timer (go-batcher's worker arms and stops its timer).
func timerReset(n int) {
	t := time.NewTimer(time.Hour)
	for i := 0; i < n; i++ {
		t.Reset(time.Hour)
		t.Stop()
	}
}

// putThrough: n Puts into a v2 batcher that never flushes until Trigger, then the Trigger's
// flush: per item, Put plus the worker's receive and append.
func putThrough(n int) {
	done := make(chan struct{})
	b := batcherv2.NewWithPool(n+1, time.Hour, func([]*int) { close(done) }, true)
	v := 0
	for i := 0; i < n; i++ {
		b.Put(&v)
	}
	b.Trigger()
	<-done
}

// flushEach: n Puts into a v2 batcher of size 1 with a pool of 64, waiting for each item:
// per item, a Put, the worker's receive, a size flush handed to a pool goroutine, the
// callback completing the item, and the waits and wake-ups in between.
func flushEach(n int) {
	var wg sync.WaitGroup
	b := batcherv2.NewWithPool(1, time.Hour, func(batch []*sync.WaitGroup) {
		for _, w := range batch {
			w.Done()
		}
	}, true)
	b.SetMaxConcurrent(64)
	for i := 0; i < n; i++ {
		wg.Add(1)
		b.Put(&wg)
		wg.Wait()
	}
}

// newSliceNs: Gets from an empty go-batcher-style slice pool (a sync.Pool whose New makes
// make([]*int, 0, size), as NewWithPool's does), every slice kept, as the worker's Gets are
// while its batches are in flight: per Get, a New's allocation and zeroing. Rounds of 256
// slices (a block's worth of batches in flight), each after a collection, as the harness
// collects between blocks; the fastest round, in ns per Get. A collection matters: right
// after one a 32 KiB New reuses swept spans (~1.6-1.9 us here), while a heap growing into
// memory the OS has not yet mapped pays page faults (~15 us) -- the harness's blocks are the
// former.
func newSliceNs(size, rounds int) float64 {
	best := 0.0
	for r := 0; r < rounds; r++ {
		runtime.GC()
		pool := &sync.Pool{New: func() any { s := make([]*int, 0, size); return &s }}
		kept := make([]*[]*int, 0, 256)
		start := time.Now()
		for i := 0; i < 256; i++ {
			kept = append(kept, pool.Get().(*[]*int))
		}
		ns := float64(time.Since(start).Nanoseconds()) / 256
		sliceSink = kept
		if r == 0 || ns < best {
			best = ns
		}
	}
	return best
}

var sliceSink []*[]*int

// wakeLatency: how long an idle processor's thread, woken by wakep, takes to run a
// goroutine it steals from a busy processor's local run queue. Microseconds.
//
// Each sample readies two parked goroutines from this (busy) goroutine: the first goes to
// runnext, the second takes runnext and pushes the first to the tail of the local run
// queue (runtime/proc.go of go1.26: runqput). The first ready's wakep starts an idle
// processor's thread, which steals the first goroutine from the queue at once
// (findRunnable -> stealWork -> runqsteal); only a goroutine left alone in runnext makes
// it sleep usleep(3) first (runqgrab), which backoffLatency measures apart. A goroutine
// readied alone would time both together, and subtracting the back-off's median from such
// samples leaves mostly the back-off's own spread: about half of them came out at or
// below zero on this machine, where the steal path takes ~20-40 us (2026-11-27). The
// readies come after 100 us of running, as a block's first go statement comes after the
// harness's own work: after an idle spell the kernel takes milliseconds to run the woken
// thread instead.
func wakeLatency(samples int) []float64 {
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	out := make([]float64, 0, samples)
	first, second := make(chan int64), make(chan int64)
	var ran, ranSecond atomic.Int64
	go func() {
		for t0 := range first {
			ran.Store(now() - t0)
		}
	}()
	go func() {
		for range second {
			ranSecond.Store(1)
		}
	}()
	for i := 0; i < samples; i++ {
		for t := now() + int64(100*time.Microsecond); now() < t; { // the other processor goes idle
		}
		ran.Store(0)
		ranSecond.Store(0)
		t0 := now()
		first <- t0  // runnext
		second <- t0 // runnext; the first goroutine to the run queue
		deadline := now() + int64(5*time.Millisecond)
		for (ran.Load() == 0 || ranSecond.Load() == 0) && now() < deadline { // keep this processor busy meanwhile
		}
		if d := ran.Load(); d > 0 {
			out = append(out, float64(d)/1e3)
		}
	}
	close(first)
	close(second)
	return out
}

// backoffLatency: how long the runtime's usleep(3) takes (runqgrab's back-off before it
// steals another processor's runnext): a nanosleep of 3 us, which the kernel's timer slack
// stretches. Microseconds.
func backoffLatency(samples int) []float64 {
	out := make([]float64, samples)
	ts := syscall.Timespec{Nsec: 3000}
	for i := range out {
		t := now()
		_ = syscall.Nanosleep(&ts, nil)
		out[i] = float64(now()-t) / 1e3
	}
	return out
}

// measureCosts runs every benchmark and derives the [go] costs.
func measureCosts() (costs []costResult) {
	prev := runtime.GOMAXPROCS(1)
	gcPrev := debug.SetGCPercent(-1) // no collection inside a trial: the blocks run without one
	defer debug.SetGCPercent(gcPrev)
	// short trials, many of them: on a shared machine some escape the neighbours' stalls
	const trials = 41
	spawnTotal := trial(trials, 1000, spawnRun)
	switchNs := trial(trials, 4000, gosched)
	chanNs := trial(trials, 20_000, chanPair) / 2
	rt := trial(trials, 2000, pingPong)
	runtime.GOMAXPROCS(2)
	rt2 := trial(trials, 2000, pingPong)
	lockNs := trial(trials, 20_000, chanContended) / 2
	runtime.GOMAXPROCS(1)
	doneNs := trial(trials, 50_000, wgDone)
	timerNs := trial(trials, 10_000, timerReset) / 2
	putItem := trial(trials, 2000, putThrough)
	flushItem := trial(trials, 300, flushEach)
	small, large := 100, 4096
	newSmall := newSliceNs(small, trials)
	newLarge := newSliceNs(large, trials)
	runtime.GOMAXPROCS(prev)

	readyNs := max(0, rt/2-chanNs-switchNs)
	// at GOMAXPROCS 2 a hand-off also wakes the idle processor's thread (wakep -> futex)
	wakepNs := max(0, (rt2-rt)/2)
	// spawnRun per goroutine = spawn + switch + Done + exit; split spawn/exit evenly
	spawnExit := max(0, spawnTotal-switchNs-doneNs)
	// putThrough per item = put + send + the worker's receive + append
	putNs := max(0, (putItem-2*chanNs)/2)
	itemNs := putNs
	// flushEach per item = put + send-handoff to the parked worker + ready + switch to it +
	// append + flush + hand-off to a parked pool goroutine (send + ready) + switch + Done
	// that readies the main goroutine + switch back (+ the pool's and worker's parks)
	modelled := putNs + (chanNs + readyNs) + switchNs + itemNs + (chanNs + readyNs) +
		switchNs + (doneNs + readyNs) + 2*switchNs + 2*chanNs
	flushNs := max(0, flushItem-modelled)
	// a New: alloc_ns + alloc_kib_ns per KiB of the slice (8 bytes a slot), from two sizes
	kib := func(slots int) float64 { return float64(8*slots) / 1024 }
	allocKib := max(0, (newLarge-newSmall)/(kib(large)-kib(small)))
	allocNs := max(0, newSmall-allocKib*kib(small))
	costs = []costResult{
		{"spawn_ns", spawnExit / 2, "go statement (newproc); half of spawn+exit"},
		{"exit_ns", spawnExit / 2, "goroutine return (goexit0); half of spawn+exit"},
		{"switch_ns", switchNs, "runtime.Gosched between two goroutines"},
		{"ready_ns", readyNs, "unbuffered ping-pong round trip / 2 - chan - switch"},
		{"wakep_ns", wakepNs, "ping-pong at GOMAXPROCS 2 less at 1, per hand-off (wakep's futex wake)"},
		{"chan_ns", chanNs, "buffered send or receive"},
		{"lock_ns", lockNs, "a send or receive while the other processor operates on the channel (GOMAXPROCS 2)"},
		{"put_ns", putNs, "go-batcher v2 Put beyond its send (half of put+receive)"},
		{"item_ns", itemNs, "worker's receive and append (half of put+receive)"},
		{"flush_ns", flushNs, "size-1 flush through a pool of 64, less the modelled parts"},
		{"alloc_ns", allocNs, "a new batch slice from an empty slice pool, beyond its size"},
		{"alloc_kib_ns", allocKib, "a new batch slice, per KiB (slices of 100 and 4096 slots)"},
		{"timer_ns", timerNs, "timer Reset or Stop"},
		{"done_ns", doneNs, "WaitGroup Done without a waiter"},
	}
	fmt.Fprintf(os.Stderr, "costs: spawn+run+exit %.0f ns, ping-pong %.0f ns (%.0f at GOMAXPROCS 2), put+recv %.0f ns, size-1 flush %.0f ns per item, new slice %.0f ns (%d slots) / %.0f ns (%d)\n",
		spawnTotal, rt, rt2, putItem, flushItem, newSmall, small, newLarge, large)
	return costs
}

// writeCosts writes the [go] table of a models/ file.
func writeCosts(w io.Writer, costs []costResult, pv hostProvenance) {
	fmt.Fprintf(w, `# Go runtime costs on this machine, measured by validate/gobatcher -costs
# (micro-benchmarks in validate/gobatcher/costs.go), in nanoseconds of one processor.
# Do not edit by hand: re-run the command in [provenance].
# validate/calibrate_gobatcher.py fits some of them on harness cells (models/gobatcher-*.toml).

[provenance]
go = %q
cpus = %d
cpu = %q
measured_on = %q
command = %q
loadavg_1m = [%.2f, %.2f] # at start and end

[go]
`, runtime.Version(), runtime.NumCPU(), cpuModel(), pv.start.UTC().Format("2006-01-02 15:04 UTC"),
		pv.command, pv.load0, pv.load1)
	for _, c := range costs {
		fmt.Fprintf(w, "%s = %.1f # %s\n", c.name, c.ns, c.about)
	}
}

func runCosts(path, command string) error {
	pv := hostProvenance{command: command, start: time.Now(), load0: loadavg1()}
	costs := measureCosts()
	pv.load1 = loadavg1()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	writeCosts(f, costs, pv)
	return f.Close()
}
