package main

import (
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
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
	printPinnedWakeups(w, reps)
}

// The wake-up of a thread on the other CPU, after the process idled (printed by -after-idle
// after the table above): thread A, pinned to the first CPU the process may use, sleeps for
// the idle time, then wakes thread B, pinned to the second and asleep in a futex, and B
// reads the clock. Pinning keeps the
// kernel from putting B on A's CPU (the packing the table above measures), so what is timed
// is the wake-up itself: the futex, the inter-processor interrupt and, on a VM whose vCPU
// halted while idle, the hypervisor running that vCPU again. With -awake no vCPU halts.

var wakeIdles = []time.Duration{200 * time.Microsecond, time.Millisecond, 3 * time.Millisecond,
	20 * time.Millisecond}

// futexWord is what thread B waits on.
type futexWord struct {
	v     atomic.Uint32
	woken atomic.Int64 // B's clock read after waking (ns since wakeStart)
	done  atomic.Bool
}

var wakeStart = time.Now()

func futexWait(w *futexWord) {
	for w.v.Load() == 0 {
		syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&w.v)), futexWaitPrivate, 0, 0, 0, 0)
	}
}

func futexWake(w *futexWord) {
	w.v.Store(1)
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&w.v)), futexWakePrivate, 1, 0, 0, 0)
}

const (
	futexWaitPrivate = 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 129 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
)

// pinnedWakeups returns, per idle time (interleaved, reps each), B's wake-up latencies in us;
// an error if the process may use fewer than two CPUs or a thread cannot be pinned.
func pinnedWakeups(reps int) ([][]float64, error) {
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	if len(cpus) < 2 {
		return nil, fmt.Errorf("one CPU")
	}
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	out := make([][]float64, len(wakeIdles))
	errc := make(chan error, 1)
	words := make(chan *futexWord)
	go func() { // B
		// Locked, pinned, then restored and unlocked: a locked goroutine that ended would end
		// its thread, and a child process started from that thread (-awake's spinners, with
		// Pdeathsig) would be killed with it.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		restore, err := pin(cpus[1])
		if err != nil {
			errc <- err
			close(errc)
			for range words {
			}
			return
		}
		defer restore()
		close(errc)
		for w := range words {
			futexWait(w)
			w.woken.Store(int64(time.Since(wakeStart)))
			w.done.Store(true)
		}
	}()
	if err := <-errc; err != nil {
		close(words)
		return nil, err
	}
	runtime.LockOSThread() // A
	defer runtime.UnlockOSThread()
	restore, err := pin(cpus[0])
	if err != nil {
		close(words)
		return nil, err
	}
	defer restore()
	for r := 0; r < reps; r++ {
		for i, idle := range wakeIdles {
			w := &futexWord{}
			words <- w
			time.Sleep(idle)
			t0 := time.Since(wakeStart)
			futexWake(w)
			for !w.done.Load() {
			}
			out[i] = append(out[i], float64(time.Duration(w.woken.Load())-t0)/1e3)
		}
	}
	close(words)
	return out, nil
}

func printPinnedWakeups(w io.Writer, reps int) {
	lat, err := pinnedWakeups(reps)
	if err != nil {
		fmt.Fprintf(w, "# pinned wake-ups: not measured (%v)\n", err)
		return
	}
	fmt.Fprintf(w, "# pinned wake-ups: a thread on one CPU asleep in a futex, woken from another after the process idled, %d trials each, interleaved\n", reps)
	fmt.Fprintf(w, "| idle before the wake-up | wake-up p10 / p50 / p90 us | max us |\n|---|---:|---:|\n")
	for i, idle := range wakeIdles {
		sort.Float64s(lat[i])
		fmt.Fprintf(w, "| %s | %.0f / %.0f / %.0f | %.0f |\n", idle, quantile(lat[i], 0.1),
			quantile(lat[i], 0.5), quantile(lat[i], 0.9), lat[i][len(lat[i])-1])
	}
}
