package main

import (
	"fmt"
	"math"
	"time"
)

// Library versions driven by the harness. v1.1.0 is what teranode pinned in Nov 2025 (cycle
// timer, no drain mode, no SetMaxConcurrent); v2.0.6 is what teranode pins now (first-item
// timer, drain mode, persistent dispatch pool): each version's batcher.go, worker.
const (
	v1 = "v1.1.0"
	v2 = "v2.0.6"
)

// batcherKey identifies one long-lived batcher. Cells that share a key share the batcher, as
// the blocks a node decorates share its one outpoint batcher.
type batcherKey struct {
	version       string
	size          int
	timeout       time.Duration
	drain         bool
	maxConcurrent int // 0 = no pool: one fresh goroutine per batch
}

// fanout is how a block's transactions are started: a plain loop ("seq"), an errgroup with
// SetLimit(cap) ("errgroup"), or an errgroup without a limit ("all": every transaction's
// goroutine at once, as teranode's #893 limit of 4096 gives for any real block).
type fanout struct {
	kind string // "seq", "errgroup" or "all"
	cap  int    // errgroup limit; 0 for seq and all
}

func (f fanout) String() string {
	if f.kind == "errgroup" {
		return fmt.Sprintf("cap%d", f.cap)
	}
	return f.kind
}

// capColumn is the fan-out as the CSV's cap column: the limit, 1 for seq, "all" for all.
func (f fanout) capColumn() string {
	switch f.kind {
	case "seq":
		return "1"
	case "all":
		return "all"
	}
	return fmt.Sprint(f.cap)
}

// concurrency is how many transactions can be in flight at once for a block of n.
func (f fanout) concurrency(n int) int {
	switch f.kind {
	case "seq":
		return 1
	case "all":
		return n
	}
	return min(f.cap, n)
}

// flushSpec is the flush callback's work: "sleep" (time.Sleep(d), an I/O-bound batch call)
// or "spin" (a busy loop doing a fixed amount of CPU work that takes d on an idle core).
type flushSpec struct {
	kind string
	d    time.Duration
}

// cell is one configuration measured repeatedly.
type cell struct {
	procs int // GOMAXPROCS while the cell's blocks run
	key   batcherKey
	fan   fanout
	nTx   int
	k     int // inputs (Puts) per transaction
	flush flushSpec
	reps  int
	no    int // position in the run's list: the key flushes.csv joins blocks.csv on
}

func (c cell) id() string {
	mode := "timer"
	if c.key.drain {
		mode = "drain"
	}
	return fmt.Sprintf("p%d/%s/s%d-t%s/%s/mc%d/%s/n%d/k%d/%s%dus", c.procs, c.key.version,
		c.key.size, c.key.timeout, mode, c.key.maxConcurrent, c.fan, c.nTx, c.k, c.flush.kind,
		c.flush.d.Microseconds())
}

// focus reports whether the cell is one whose batch composition the issue asks a share of
// (drain on, every transaction at once, small blocks): it gets more repetitions.
func (c cell) focus() bool {
	return c.key.drain && c.fan.kind == "all" && c.nTx <= 64
}

// phaseBound reports whether the cell's block time is largely the phase of go-batcher
// v1's cycle timer that the block meets: each round of transactions (all of them at once,
// or an errgroup's cap of them) is one batch, flushed when the cycle in progress ends, and
// the block takes at most phaseRounds rounds, so the first, partial cycle is a good share of
// it. Such a block spreads over a whole cycle (2.2 to 6.3 ms at 4096 / 5 ms, N = 16) in
// steps of a millisecond (an idle Go process waits for its next timer in whole
// milliseconds), and the median of a few blocks lands a step up or down at random: these
// cells get -phase-reps repetitions.
func (c cell) phaseBound() bool {
	conc := c.fan.concurrency(c.nTx)
	rounds := (c.nTx + conc - 1) / conc
	return c.key.version == v1 && conc*c.k <= c.key.size && rounds <= phaseRounds
}

// phaseRounds: see phaseBound.
const phaseRounds = 4

// estimate is a rough block time used only to prune the full grid of cells that would take
// too long (the sequential loop through a timer batcher waits one timeout per transaction).
func (c cell) estimate() time.Duration {
	conc := c.fan.concurrency(c.nTx)
	rounds := int(math.Ceil(float64(c.nTx) / float64(conc)))
	perRound := c.flush.d
	if c.flush.kind == "sleep" {
		perRound = hostSleep(c.flush.d)
	}
	if !c.key.drain && conc*c.k < c.key.size {
		perRound += c.key.timeout + hostTimerLate
	}
	if c.key.maxConcurrent > 0 && c.key.drain {
		perRound *= time.Duration(math.Ceil(float64(conc) / float64(c.key.maxConcurrent)))
	}
	est := time.Duration(rounds) * perRound
	if c.flush.kind == "spin" {
		// a drain flush per transaction at worst, all competing for the cores
		cpu := time.Duration(c.nTx) * c.flush.d / time.Duration(c.procs)
		est = max(est, cpu)
	}
	if c.key.version == v1 {
		est += c.key.timeout // the idle spell before the block (run.go, idleBefore): one timeout on average
	}
	return est
}

// hostTimerLate and hostSleep are this VM's typical timer lateness and sleep time
// (models/host-loopback.toml), for the estimate only. An idle Go process sleeps in
// epoll_wait, whose timeout is in whole milliseconds: runtime/netpoll_epoll.go, netpoll,
// turns any delay under 1 ms into 1 ms.
const hostTimerLate = 250 * time.Microsecond

func hostSleep(d time.Duration) time.Duration { return max(d, time.Millisecond) + 100*time.Microsecond }

// gridOptions are the flags that shape a grid.
type gridOptions struct {
	procs      []int
	reps       int
	focusReps  int
	phaseReps  int
	k          int
	flushD     time.Duration
	maxBlock   time.Duration
	sizeTimers []batcherKey // size and timeout only
}

var shippedAndR1 = []batcherKey{
	{size: 100, timeout: 10 * time.Millisecond}, // R1 (teranode PR #893's benchmark)
	{size: 4096, timeout: 5 * time.Millisecond}, // teranode's shipped outpoint batcher
}

// smallGrid is a handful of cells, N in {16, 64, 256}, that runs in well under 90 s at
// GOMAXPROCS 1 and 2: the drain-mode composition cells (I/O- and CPU-bound flushes, pool of
// 64, 4 and none), the shipped timer batcher at cap = all through both timer semantics, an
// R1-like errgroup through both, R1's size-flush regime (cap 64), and the sequential loop.
func smallGrid(o gridOptions) []cell {
	r1, shipped := shippedAndR1[0], shippedAndR1[1]
	sleep := flushSpec{"sleep", o.flushD}
	spin := flushSpec{"spin", o.flushD}
	all := fanout{kind: "all"}
	capN := func(n int) fanout { return fanout{kind: "errgroup", cap: n} }
	ns := []int{16, 64, 256}
	type row struct {
		key   batcherKey
		fan   fanout
		flush flushSpec
		ns    []int
	}
	rows := []row{
		{with(shipped, v2, true, 64), all, sleep, ns},
		{with(shipped, v2, true, 64), all, spin, ns},
		{with(shipped, v2, true, 4), all, spin, ns},
		{with(shipped, v2, true, 0), capN(16), sleep, ns},
		{with(shipped, v2, true, 64), fanout{kind: "seq"}, sleep, []int{16}},
		{with(shipped, v2, false, 64), all, sleep, ns},
		{with(shipped, v2, false, 64), all, spin, ns},
		{with(shipped, v1, false, 0), all, sleep, ns},
		{with(r1, v2, false, 64), capN(16), sleep, ns},
		{with(r1, v1, false, 0), capN(16), sleep, ns},
		{with(r1, v2, false, 64), capN(64), sleep, []int{256}},
		{with(r1, v2, false, 64), fanout{kind: "seq"}, sleep, []int{16}},
		{with(r1, v1, false, 0), fanout{kind: "seq"}, sleep, []int{16}},
	}
	var cells []cell
	for _, p := range o.procs {
		for _, r := range rows {
			for _, n := range r.ns {
				cells = append(cells, o.newCell(p, r.key, r.fan, n, r.flush))
			}
		}
	}
	return cells
}

// fullGrid crosses every dimension the issue names, then, to fit in tens of minutes, leaves
// out cells that cannot tell anything new (redundant) or would take too long (slow):
//   - redundant: errgroup limits at or above the block's transaction count (identical to
//     "all"); pool sizes 0 and 4 when fewer than 16 transactions run at once (at most a
//     handful of flushes are ever in flight, so no pool saturates; only the per-flush
//     hand-off differs, a microsecond against a millisecond flush); the CPU-bound flush when
//     fewer than 4 transactions run at once and N > 64 (one flush at a time: no competition
//     for the cores);
//   - slow: estimated above maxBlock per block, except table R1's own rows (N = 1000 through
//     the 100 / 10 ms batcher, sequential to cap 64), which are always measured.
//
// Cells estimated above slowBlock get at most 3 repetitions, and cells estimated under
// shortBlock at least shortReps: one vCPU of this VM is now and then taken for ~4 ms, which
// hits a few-millisecond block at GOMAXPROCS 2 often enough that the median of 5 swings 2x
// (drain, cap 4, N = 16, spin: 8.65 ms over the grid's 5 blocks, 4.4 ms over 60 alone).
func fullGrid(o gridOptions) (cells []cell, left leftOut) {
	fans := []fanout{{kind: "seq"}}
	for _, c := range []int{1, 4, 16, 64, 256} {
		fans = append(fans, fanout{kind: "errgroup", cap: c})
	}
	fans = append(fans, fanout{kind: "all"})
	flushes := []flushSpec{{"sleep", o.flushD}, {"spin", o.flushD}}
	for _, p := range o.procs {
		for _, key := range fullKeys(o.sizeTimers) {
			for _, f := range fans {
				for _, n := range []int{16, 64, 256, 1000, 2856} {
					for _, fl := range flushes {
						c := o.newCell(p, key, f, n, fl)
						switch {
						case !c.informative():
							left.redundant++
						case c.estimate() > o.maxBlock && !c.isR1():
							left.slow++
						default:
							if c.estimate() > slowBlock {
								c.reps = min(c.reps, 3)
							}
							if c.estimate() < shortBlock {
								c.reps = max(c.reps, shortReps)
							}
							cells = append(cells, c)
						}
					}
				}
			}
		}
	}
	return cells, left
}

// leftOut counts the full grid's cells not measured, by reason (see fullGrid).
type leftOut struct{ redundant, slow int }

// isR1 reports whether the cell is a row of table R1 (teranode PR #893's benchmark: 1000
// transactions x 3 inputs, 100 / 10 ms, pool of 64, 500 us sleep; sequential to cap 64).
func (c cell) isR1() bool {
	r1 := with(shippedAndR1[0], v2, false, 64)
	return c.key == r1 && c.nTx == 1000 && c.k == 3 && c.flush == flushSpec{"sleep", 500 * time.Microsecond} &&
		c.fan.kind != "all" && c.fan.cap <= 64
}

const slowBlock = 500 * time.Millisecond

// shortBlock and shortReps: see fullGrid.
const (
	shortBlock = 20 * time.Millisecond
	shortReps  = 15
)

// informative is fullGrid's rule for cells worth their time (see fullGrid).
func (c cell) informative() bool {
	conc := c.fan.concurrency(c.nTx)
	switch {
	case c.fan.kind == "errgroup" && c.fan.cap >= c.nTx:
		return false
	case c.key.version == v2 && c.key.maxConcurrent != 64 && conc < 16:
		return false
	case c.flush.kind == "spin" && conc < 4 && c.nTx > 64:
		return false
	}
	return true
}

// fullKeys: v1.1.0 has neither drain mode nor SetMaxConcurrent, so it appears once per
// size/timer; v2.0.6 with drain off and on, and pool sizes 0, 4 and 64.
func fullKeys(sizeTimers []batcherKey) []batcherKey {
	var keys []batcherKey
	for _, st := range sizeTimers {
		keys = append(keys, with(st, v1, false, 0))
		for _, drain := range []bool{false, true} {
			for _, mc := range []int{0, 4, 64} {
				keys = append(keys, with(st, v2, drain, mc))
			}
		}
	}
	return keys
}

func with(st batcherKey, version string, drain bool, mc int) batcherKey {
	st.version, st.drain, st.maxConcurrent = version, drain, mc
	return st
}

func (o gridOptions) newCell(procs int, key batcherKey, f fanout, n int, fl flushSpec) cell {
	c := cell{procs: procs, key: key, fan: f, nTx: n, k: o.k, flush: fl, reps: o.reps}
	if c.focus() {
		c.reps = max(o.reps, o.focusReps)
	}
	if c.phaseBound() {
		c.reps = max(c.reps, o.phaseReps)
	}
	return c
}
