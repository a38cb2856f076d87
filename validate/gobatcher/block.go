package main

import (
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sync/errgroup"
)

// epoch anchors every timestamp: time.Since uses the monotonic clock.
var epoch = time.Now()

// epochMonoNs is CLOCK_MONOTONIC at epoch (read right after it, well under a microsecond
// later), so that a block's start can be put on the clock of a kernel trace taken beside the
// run (`perf record -k CLOCK_MONOTONIC`): Go's monotonic readings are that clock, but a
// time.Time does not expose their origin.
var epochMonoNs = monotonicNs()

func monotonicNs() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1 // CLOCK_MONOTONIC, linux/time.h
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic,
		uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return -1
	}
	return ts.Nano()
}

func now() int64 { return int64(time.Since(epoch)) }

// item is one input of a transaction: teranode's PreviousOutputsDecorate Puts one outpoint
// item per input (stores/utxo/aerospike/get.go) and waits for all of them; here the wait is
// one WaitGroup per transaction, as the 2026 get.go's shared completion group.
type item struct {
	rec    *recorder
	wg     *sync.WaitGroup
	putNs  int64 // just before Put
	putP   int32 // the processor it was Put on (procID)
	doneNs int64 // when the flush callback completed it
}

// flushRec is one call of the flush callback.
type flushRec struct {
	startNs, endNs int64
	size           int
	p              int32 // the processor that ran the callback
}

// recorder collects one block's flushes. Every item carries a pointer to it, so the one
// callback shared by a batcher's blocks knows where to record (blocks never overlap).
type recorder struct {
	work        flushSpec
	spinIters   int64
	inflight    atomic.Int64
	inflightMax atomic.Int64
	nFlush      atomic.Int64
	flushes     []flushRec // one slot per item at most: a flush holds >= 1 item
}

// onFlush is the batch function given to every batcher. It does the cell's work (sleep or
// spin), then completes each item, as teranode's sendOutpointBatch completes items after its
// one BatchOperate.
func onFlush(batch []*item) {
	r := batch[0].rec
	start := now()
	fp := int32(procID())
	r.enter()
	r.work.do(r.spinIters)
	end := now()
	r.inflight.Add(-1)
	r.flushes[r.nFlush.Add(1)-1] = flushRec{startNs: start, endNs: end, size: len(batch), p: fp}
	for _, it := range batch {
		it.doneNs = end
		it.wg.Done()
	}
}

// enter counts a flush in flight and keeps the maximum.
func (r *recorder) enter() {
	n := r.inflight.Add(1)
	for {
		m := r.inflightMax.Load()
		if n <= m || r.inflightMax.CompareAndSwap(m, n) {
			return
		}
	}
}

// block is one block's transactions, allocated before the clock starts so the measured time
// is the batcher path (Put, worker, dispatch, completion), not the harness's allocations.
type block struct {
	rec   *recorder
	txs   []sync.WaitGroup
	items []item
	k     int
	// wakerTid is the thread that runs the block's driver when it starts the first
	// transaction: the thread that wakes the idle processor's (splitWaits)
	wakerTid string
	// startNs is the block's start on the harness clock (its first transaction started);
	// driverP is the processor that runs the driver at the block's start; otherPNs when a
	// transaction first started on another processor (ns after the block's start, -1: none):
	// the woken processor's first transaction; spawnedNs when the driver had started every
	// transaction (ns after the start, -1: sequential)
	driverP   int
	otherPNs  atomic.Int64
	startNs   int64
	spawnedNs int64
}

func newBlock(c cell, spinIters int64) *block {
	rec := &recorder{work: c.flush, spinIters: spinIters, flushes: make([]flushRec, c.nTx*c.k)}
	b := &block{rec: rec, txs: make([]sync.WaitGroup, c.nTx), items: make([]item, c.nTx*c.k), k: c.k}
	for i := range b.items {
		b.items[i] = item{rec: rec, wg: &b.txs[i/c.k]}
	}
	return b
}

// decorate is one transaction: one Put per input, then wait for all of them.
func (b *block) decorate(p putter, tx int) {
	b.txs[tx].Add(b.k)
	if b.otherPNs.Load() < 0 && procID() != b.driverP {
		b.otherPNs.CompareAndSwap(-1, now()-b.startNs)
	}
	for i := tx * b.k; i < (tx+1)*b.k; i++ {
		it := &b.items[i]
		it.putNs = now()
		it.putP = int32(procID())
		p.Put(it)
	}
	b.txs[tx].Wait()
}

// run decorates every transaction with the cell's fan-out and returns the block's start and
// end (first transaction started, last one done).
func (b *block) run(p putter, f fanout) (startNs, endNs int64) {
	b.wakerTid = strconv.Itoa(syscall.Gettid())
	b.driverP = procID()
	b.otherPNs.Store(-1)
	b.spawnedNs = -1
	startNs = now()
	b.startNs = startNs
	n := len(b.txs)
	if f.kind == "seq" {
		for tx := 0; tx < n; tx++ {
			b.decorate(p, tx)
		}
		return startNs, now()
	}
	// teranode's BatchPreviousOutputsDecorate after PR #893: errgroup, SetLimit(limit);
	// g.Go blocks the loop while the limit's goroutines are running.
	var g errgroup.Group
	if f.kind == "errgroup" {
		g.SetLimit(f.cap)
	}
	for tx := 0; tx < n; tx++ {
		g.Go(func() error { b.decorate(p, tx); return nil })
	}
	b.spawnedNs = now() - startNs
	_ = g.Wait() // decorate returns no error
	return startNs, now()
}

// flushes returns the block's flushes (all callbacks have recorded before the last item
// completed, so after run returns the slice is final).
func (b *block) flushes() []flushRec {
	return b.rec.flushes[:b.rec.nFlush.Load()]
}
