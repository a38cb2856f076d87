package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/trace"
	"strings"
	"time"
)

// runner measures cells, one block at a time, on batchers that live for the whole run.
type runner struct {
	pool       batcherPool
	spinIters  int64
	gc         string // see -gc
	warmup     int
	detailReps int    // see -flush-detail-reps
	traceDir   string // see -trace
	seed       uint64
	blocks     *csvFile
	flushes    *csvFile
	items      *csvFile // -items; nil: not written
	lastGC     uint64   // heap bytes allocated (cumulative) at the last forced collection
	gcSeen     uint64   // collections counted at the end of the last block
	mismatches int      // v2 blocks whose library reasons differ from the inferred ones
	probes     *csvFile
	probeEvery int
	probeD     time.Duration
	procs      []int
	blocksRun  int
	probesRun  int
	idle       *rand.Rand   // the idle spells before v1 blocks (idleBefore)
	settleReps int          // see -settle-reps
	extended   map[int]bool // the cells (positions) given blocks beyond their planned ones
}

// maybeProbe runs the CPU-availability probes (probe.go) every probeEvery measured blocks,
// and before the first.
func (r *runner) maybeProbe() error {
	if r.probeEvery == 0 || r.blocksRun%r.probeEvery != 0 {
		return nil
	}
	for _, res := range probeAll(r.procs, r.probeD) {
		if err := r.probes.write(res.row(r.probesRun)); err != nil {
			return err
		}
		r.probesRun++
	}
	return nil
}

// gcEvery is how much the harness may allocate between forced collections when the
// collector is off during blocks (-gc between).
const gcEvery = 64 << 20

// runGrid runs every cell's repetitions round-robin: round r runs each cell that still has
// repetitions once, in an order shuffled by the seed, so a cell's repetitions are spread over
// the whole run (and its neighbours' load) instead of back to back. A cell whose median block
// time is not settled once its planned repetitions are done (medianSettled: some cells' blocks
// spread over 10x or fall in two modes) gets one more in each following round until it
// settles or has -settle-reps blocks, interleaved with the cells still running.
func (r *runner) runGrid(cells []cell) error {
	times := make([][]time.Duration, len(cells))
	start, said := time.Now(), time.Now()
	for round := 0; ; round++ {
		order := cellsInRound(cells, round)
		if len(order) == 0 {
			return nil
		}
		rng := rand.New(rand.NewPCG(r.seed, uint64(round)))
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for i, at := range order {
			blockTime, err := r.visit(cells[at], round)
			if err != nil {
				return err
			}
			times[at] = append(times[at], blockTime)
			if extend(&cells[at], times[at], r.settleReps) {
				r.extended[at] = true
			}
			if time.Since(said) > 30*time.Second {
				said = time.Now()
				fmt.Fprintf(os.Stderr, "round %d: %d/%d blocks, %s elapsed, load %.2f\n",
					round+1, i+1, len(order), time.Since(start).Round(time.Second), loadavg1())
			}
		}
		fmt.Fprintf(os.Stderr, "round %d done: %d blocks (%d cells given more for their median so far), %s elapsed, load %.2f\n",
			round+1, len(order), len(r.extended), time.Since(start).Round(time.Second), loadavg1())
	}
}

// extend gives the cell one more repetition if the block just measured was its last planned
// one, it has fewer than settleReps and its median so far is not settled; whether it did.
func extend(c *cell, times []time.Duration, settleReps int) bool {
	if len(times) != c.reps || c.reps >= settleReps || medianSettled(times) {
		return false
	}
	c.reps++
	return true
}

// cellsInRound is the positions of the cells that still have a repetition in the round.
func cellsInRound(cells []cell, round int) []int {
	var out []int
	for i, c := range cells {
		if c.reps > round {
			out = append(out, i)
		}
	}
	return out
}

// visit runs one measured block of the cell, preceded on its first visit by warm-up blocks
// that are discarded (goroutine stacks grown, pool goroutines started, as in a running node).
func (r *runner) visit(c cell, rep int) (time.Duration, error) {
	if rep == 0 {
		for i := 0; i < r.warmup; i++ {
			if _, _, err := r.measure(c, rep); err != nil {
				return 0, err
			}
		}
	}
	if err := r.maybeProbe(); err != nil {
		return 0, err
	}
	r.blocksRun++
	res, blk, err := r.measure(c, rep)
	if err != nil {
		return 0, err
	}
	if c.key.version == v2 && !res.reasonsAgree() {
		r.mismatches++
		fmt.Fprintf(os.Stderr, "note: %s rep %d: library reasons %+v, inferred %v\n",
			c.id(), rep, res.lib, res.fs.byReason)
	}
	if err := r.blocks.write(res.row()); err != nil {
		return 0, err
	}
	if r.items != nil && c.nTx <= itemsMaxTx {
		if err := r.items.write(itemRows(c, rep, blk.startNs, blk.items)...); err != nil {
			return 0, err
		}
	}
	if c.nTx > 256 && r.detailReps >= 0 && rep >= r.detailReps {
		return res.blockTime, nil
	}
	return res.blockTime, r.flushes.write(flushRows(c, rep, blk.startNs, blk.flushes())...)
}

// measure runs one block of the cell and gathers everything about it. Only the fan-out (first
// transaction started to last transaction done) is timed; the readings of /proc and the
// collector's work happen outside that window.
func (r *runner) measure(c cell, rep int) (blockResult, *block, error) {
	b, err := r.pool.get(c.key)
	if err != nil {
		return blockResult{}, nil, err
	}
	setProcs(c.procs)
	blk := newBlock(c, r.spinIters)
	r.maybeCollect()

	res := blockResult{c: c, rep: rep}
	res.loadavg, res.running = loadavg()
	res.stackStart = readUint64Metric("/gc/stack/starting-size:bytes")
	lock0 := lockWait()
	lib0, cpu0, wait0 := b.counts.snapshot(), readCPUTimes(), readThreadTimes()
	res.idleBefore = r.idleBefore(c)
	time.Sleep(res.idleBefore)
	proc0, gc0, flt0 := processCPU(), gcCycles(), minorFaults() // microseconds: getrusage, a runtime read
	stopTrace, err := r.startTrace(c, rep)
	if err != nil {
		return blockResult{}, nil, err
	}
	res.startUnix = time.Now()
	startNs, endNs := blk.run(b, c.fan)
	stopTrace()
	proc1, cpu1, lib1, gc1, flt1, wait1 := processCPU(), readCPUTimes(), b.counts.snapshot(), gcCycles(), minorFaults(), readThreadTimes()
	res.lockWait = lockWait() - lock0
	res.driverP = blk.driverP
	res.spawned = time.Duration(blk.spawnedNs)
	res.otherP = time.Duration(blk.otherPNs.Load())
	res.gcBefore = gc0 - r.gcSeen
	r.gcSeen = gc1
	res.minorFaults = flt1 - flt0
	res.runqWait = runqWaitSince(wait0, wait1, workingThreadRun)
	res.wakerWait, res.wokenWait = splitWaits(wait0, wait1, blk.wakerTid, splitThreadRun)

	res.blockTime = time.Duration(endNs - startNs)
	res.startMonoNs = -1
	if epochMonoNs >= 0 {
		res.startMonoNs = epochMonoNs + startNs
	}
	res.processCPU = proc1 - proc0
	res.steal, res.busy = cpu1.shares(cpu0)
	res.lib = lib1.minus(lib0)
	res.gcCycles = gc1 - gc0
	res.fs = summarizeFlushes(blk.flushes(), c.key)
	res.lat = itemLatencies(blk.items)
	res.inflightMax = blk.rec.inflightMax.Load()
	return res, blk, nil
}

// idleStream is the idle spells' PCG stream (the rounds' shuffles take streams 0, 1, ...).
const idleStream = 1 << 40

// idleBefore is how long the process idles right before a block of a go-batcher v1.1.0
// cell: the sum of two uniform draws from [0, timeout). A v1 batcher's cycle runs through
// everything the harness does, so the block would otherwise meet it at the phase the
// harness's own sequence leaves: right after a block through the same batcher (the cell's
// warm-up block before its first measured one, or a neighbour sharing the batcher) the
// cycle restarted at that block's last flush, and 120 of 120 back-to-back blocks at 4096 /
// 5 ms took 5.0-5.3 ms (data/README.md, "Cycle vs first-item timer"). A node meets a block
// at any phase of the cycle; the idle spell gives one: wrapped around a cycle of C, the
// draw's density is uniform within +-2 sinc^2(pi timeout / C) (a sum of two uniform draws
// has a triangular density, whose Fourier coefficients are the square of the sinc): 0 at C
// = timeout, +-2 % at the ~1.1 timeouts a cycle takes on this VM, +-7 % at 1.2. The spell
// sleeps after the slow readings of the block's counters (/proc files: what the machine's
// CPUs and the process's threads did, which thus span the spell too) and before the fast
// ones (the process's CPU and page faults, one getrusage each; the collector's count),
// right before the block starts, so that next to nothing runs between the spell's end and
// the first transaction and the spell's wake-ups do not count in the block's
// process_cpu_s.
func (r *runner) idleBefore(c cell) time.Duration {
	if c.key.version != v1 {
		return 0
	}
	t := int64(c.key.timeout)
	return time.Duration(r.idle.Int64N(t) + r.idle.Int64N(t))
}

// workingThreadRun is how long a thread must have run in a block for its run-queue wait to
// count in runq_wait_s (runqWaitSince): a thread that runs a processor's goroutines runs
// for most of a CPU-bound block; the runtime's sysmon thread runs for microseconds.
const workingThreadRun = 200 * time.Microsecond

// splitThreadRun is how long a thread other than the waker must have run in a block for its
// wait to count in runq_wait_woken_s (splitWaits): more than sysmon's few wake-ups.
const splitThreadRun = 20 * time.Microsecond

// startTrace starts an execution trace of one block when -trace is given (a traced block runs
// slower: the tracer records every scheduling event); the returned function stops it.
func (r *runner) startTrace(c cell, rep int) (func(), error) {
	if r.traceDir == "" {
		return func() {}, nil
	}
	name := strings.NewReplacer("/", "_", ".", "_").Replace(c.id())
	f, err := os.Create(filepath.Join(r.traceDir, fmt.Sprintf("%s_rep%d.trace", name, rep)))
	if err != nil {
		return nil, fmt.Errorf("-trace: %v", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-trace: %v", err)
	}
	return func() { trace.Stop(); f.Close() }, nil
}

func (res blockResult) reasonsAgree() bool {
	l, f := res.lib, res.fs.byReason
	return int(l.size) == f["size"] && int(l.timeout) == f["timeout"] &&
		int(l.drain) == f["drain"] && l.other == 0
}

// setProcs changes GOMAXPROCS only when the cell needs another value (the change stops the
// world briefly, outside the timed window).
func setProcs(p int) {
	if runtime.GOMAXPROCS(0) != p {
		runtime.GOMAXPROCS(p)
	}
}

// maybeCollect runs the collector between blocks when -gc turned its pacing off, so that a
// collection never lands inside a measured block (a node collects too, but its heap and pace
// are not the harness's): with -gc between once the harness has allocated gcEvery since the
// last collection; with block before every block; with release before every block, then
// returning the freed memory to the OS, so that the block starts on memory the kernel must
// fault in again (what a block right after a collection meets, at most).
func (r *runner) maybeCollect() {
	switch r.gc {
	case "between":
		if a := heapAllocs(); a-r.lastGC > gcEvery {
			runtime.GC()
			r.lastGC = heapAllocs()
		}
	case "block":
		runtime.GC()
	case "release":
		debug.FreeOSMemory() // a collection, then the scavenger's whole work
	}
}

// disableGC turns the collector's pacing off for every -gc but go.
func disableGC() { debug.SetGCPercent(-1) }

func gcCycles() uint64   { return readUint64Metric("/gc/cycles/total:gc-cycles") }
func heapAllocs() uint64 { return readUint64Metric("/gc/heap/allocs:bytes") }

// lockWait is the time goroutines have spent waiting for a sync.Mutex, a sync.RWMutex or
// one of the runtime's own locks (runtime/metrics, since Go 1.22), cumulative.
func lockWait() time.Duration {
	v := readMetric("/sync/mutex/wait/total:seconds")
	if v.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(v.Float64() * 1e9)
}

func readUint64Metric(name string) uint64 {
	v := readMetric(name)
	if v.Kind() != metrics.KindUint64 {
		return 0
	}
	return v.Uint64()
}

// readMetric reads one runtime/metrics sample (KindBad if this Go does not have it).
func readMetric(name string) metrics.Value {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value
}
