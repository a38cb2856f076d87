package main

import (
	"fmt"
	"sync/atomic"
	"time"

	batcherv1 "github.com/bsv-blockchain/go-batcher"
	batcherv2 "github.com/bsv-blockchain/go-batcher/v2"
)

// putter is the one call the harness makes on a batcher during a block: both versions'
// Put(item *T, _ ...int) (batcher.go, Put) do a non-blocking channel send and fall back to a
// blocking one when the 64 x size channel is full.
type putter interface {
	Put(item *item, payloadSize ...int)
}

// libBatcher is one long-lived batcher of either version, with its trigger-reason counters
// (v2 only: v1.1.0 reports nothing).
type libBatcher struct {
	putter
	counts *reasonCounts // nil for v1.1.0
}

// newLibBatcher builds a batcher the way teranode's Aerospike UTXO store does
// (stores/utxo/aerospike/aerospike.go: NewWithPool(size, duration, callback, background)),
// with background dispatch, then applies drain mode and the pool size. v2's SetDrainMode
// and SetMaxConcurrent must come before the first Put (batcher.go, SetMaxConcurrent's doc).
func newLibBatcher(k batcherKey) (*libBatcher, error) {
	switch k.version {
	case v1:
		if k.drain || k.maxConcurrent != 0 {
			return nil, fmt.Errorf("v1.1.0 has no drain mode or SetMaxConcurrent: %+v", k)
		}
		// v1.1.0 batcher.go, worker: a cycle timer re-armed after every flush, even an empty
		// one, so the first item of a block waits whatever is left of the current cycle.
		return &libBatcher{putter: batcherv1.NewWithPool(k.size, k.timeout, onFlush, true)}, nil
	case v2:
		counts := &reasonCounts{}
		b := batcherv2.NewWithPool(k.size, k.timeout, onFlush, true, batcherv2.WithMetrics(counts))
		b.SetDrainMode(k.drain)
		b.SetMaxConcurrent(k.maxConcurrent) // n <= 0 is a no-op: a fresh goroutine per batch
		return &libBatcher{putter: b, counts: counts}, nil
	}
	return nil, fmt.Errorf("unknown go-batcher version %q", k.version)
}

// reasonCounts implements v2's Metrics/BoundMetrics (observability.go) to count what the
// library itself reports: the trigger reason of each dispatched batch (BatchTriggered, called
// by dispatchAndRecord just before fn), Puts that had to block on a full channel
// (EnqueueBlocked) and worker waits of over 1 us for a free pool goroutine (BackpressureWait,
// flushBatch). Enqueued is left empty so producers do not share a contended counter.
type reasonCounts struct {
	size, timeout, drain, other atomic.Int64
	blockedPuts, workerWaits    atomic.Int64
}

func (c *reasonCounts) Bind(string) batcherv2.BoundMetrics { return c }

func (c *reasonCounts) BatchTriggered(reason string) {
	switch reason {
	case batcherv2.ReasonSize:
		c.size.Add(1)
	case batcherv2.ReasonTimeout:
		c.timeout.Add(1)
	case batcherv2.ReasonDrain:
		c.drain.Add(1)
	default: // manual or shutdown: the harness never calls Trigger or Close mid-run
		c.other.Add(1)
	}
}

func (c *reasonCounts) EnqueueBlocked(time.Duration)   { c.blockedPuts.Add(1) }
func (c *reasonCounts) BackpressureWait(time.Duration) { c.workerWaits.Add(1) }

// The rest of BoundMetrics is not needed by the harness.

func (c *reasonCounts) Enqueued()                         {}
func (c *reasonCounts) BatchProcessed(int, time.Duration) {}
func (c *reasonCounts) WorkerStarted()                    {}
func (c *reasonCounts) WorkerFinished()                   {}
func (c *reasonCounts) DedupHit()                         {}
func (c *reasonCounts) DedupMiss()                        {}
func (c *reasonCounts) PanicRecovered()                   {}

// reasonSnapshot is the counters at one instant; blocks report differences.
type reasonSnapshot struct {
	size, timeout, drain, other, blockedPuts, workerWaits int64
}

func (c *reasonCounts) snapshot() reasonSnapshot {
	if c == nil {
		return reasonSnapshot{}
	}
	return reasonSnapshot{c.size.Load(), c.timeout.Load(), c.drain.Load(), c.other.Load(),
		c.blockedPuts.Load(), c.workerWaits.Load()}
}

func (s reasonSnapshot) minus(o reasonSnapshot) reasonSnapshot {
	return reasonSnapshot{s.size - o.size, s.timeout - o.timeout, s.drain - o.drain,
		s.other - o.other, s.blockedPuts - o.blockedPuts, s.workerWaits - o.workerWaits}
}

// batcherPool holds one batcher per key for the life of the process.
type batcherPool map[batcherKey]*libBatcher

func (p batcherPool) get(k batcherKey) (*libBatcher, error) {
	if b, ok := p[k]; ok {
		return b, nil
	}
	b, err := newLibBatcher(k)
	if err != nil {
		return nil, err
	}
	p[k] = b
	return b, nil
}
