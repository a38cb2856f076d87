package main

// The 1024-bucket transaction map of teranode's subtreeprocessor (map.go at icellan
// 65cc3435, PR #1078): one github.com/dolthub/swiss map keyed by the 32-byte
// chainhash.Hash (value struct{}) and one separately allocated sync.RWMutex per bucket, the
// bucket being (byte0*256 + byte1) mod 1024 (go-tx-map's Bytes2Uint16Buckets). The same
// shape over Go's built-in map (a swiss table since Go 1.24) for comparison.

import (
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dolthub/swiss"
)

type store interface {
	// putSlice is PutMultiBucket: bucket b's write lock taken once for the whole slice.
	// ls, when not nil, times the Lock call (see lockStats).
	putSlice(b int, hs []hash, ls *lockStats)
	// putStride inserts keys[start], keys[start+step], ... with no lock: one owner.
	putStride(keys []hash, start, step int)
	// probe is Exists on each of ps, under the bucket's read lock when rlock (before
	// Freeze), lock-free otherwise (after Freeze); it returns the hits.
	probe(ps []hash, rlock bool) int
}

// perBucketHint is map.go's size hint per bucket: the expected entries x 1.3, rounded up
// (PR #917: headroom over swiss's 7/8 load factor and the bucket skew, so no bucket rehashes
// mid-fill).
func perBucketHint(entries int) int {
	return (entries/buckets*13 + 9) / 10
}

func newStore(impl string, entries int, hint bool) store {
	h := 0
	if hint {
		h = perBucketHint(entries)
	}
	locks := make([]*sync.RWMutex, buckets)
	for b := range locks {
		locks[b] = &sync.RWMutex{} // one small object each, as map.go allocates them
	}
	if impl == "builtin" {
		s := &builtinStore{mu: locks, m: make([]map[hash]struct{}, buckets)}
		for b := range s.m {
			s.m[b] = make(map[hash]struct{}, h)
		}
		return s
	}
	s := &swissStore{mu: locks, m: make([]*swiss.Map[hash, struct{}], buckets)}
	for b := range s.m {
		s.m[b] = swiss.NewMap[hash, struct{}](uint32(h))
	}
	return s
}

type swissStore struct {
	m  []*swiss.Map[hash, struct{}]
	mu []*sync.RWMutex
}

func (s *swissStore) putSlice(b int, hs []hash, ls *lockStats) {
	lockBucket(s.mu[b], b, ls)
	m := s.m[b]
	for i := range hs {
		m.Put(hs[i], struct{}{})
	}
	unlockBucket(s.mu[b], b, ls)
}

func (s *swissStore) putStride(keys []hash, start, step int) {
	for i := start; i < len(keys); i += step {
		s.m[bucketOf(keys[i])].Put(keys[i], struct{}{})
	}
}

func (s *swissStore) probe(ps []hash, rlock bool) int {
	n := 0
	for i := range ps {
		b := bucketOf(ps[i])
		if rlock {
			s.mu[b].RLock()
		}
		if s.m[b].Has(ps[i]) {
			n++
		}
		if rlock {
			s.mu[b].RUnlock()
		}
	}
	return n
}

type builtinStore struct {
	m  []map[hash]struct{}
	mu []*sync.RWMutex
}

func (s *builtinStore) putSlice(b int, hs []hash, ls *lockStats) {
	lockBucket(s.mu[b], b, ls)
	m := s.m[b]
	for i := range hs {
		m[hs[i]] = struct{}{}
	}
	unlockBucket(s.mu[b], b, ls)
}

func (s *builtinStore) putStride(keys []hash, start, step int) {
	for i := start; i < len(keys); i += step {
		s.m[bucketOf(keys[i])][keys[i]] = struct{}{}
	}
}

func (s *builtinStore) probe(ps []hash, rlock bool) int {
	n := 0
	for i := range ps {
		b := bucketOf(ps[i])
		if rlock {
			s.mu[b].RLock()
		}
		if _, ok := s.m[b][ps[i]]; ok {
			n++
		}
		if rlock {
			s.mu[b].RUnlock()
		}
	}
	return n
}

// lockStat holds one bucket's lock timings, written while holding that bucket's lock, so
// timing adds no shared cache line; padded to a line of its own.
type lockStat struct {
	acquires, waitNs, maxWaitNs, waitsOver1ms, starving, handoffs int64
	_                                                             [16]byte
}

type lockStats [buckets]lockStat

// starvationNs is sync.Mutex's starvationThresholdNs: a waiter that has waited longer
// switches the mutex to starvation mode (direct hand-off to the oldest waiter).
const starvationNs = 1_000_000

func lockBucket(mu *sync.RWMutex, b int, ls *lockStats) {
	if ls == nil {
		mu.Lock()
		return
	}
	t := time.Now()
	mu.Lock()
	w := time.Since(t).Nanoseconds()
	s := &ls[b]
	s.acquires++
	s.waitNs += w
	if w > s.maxWaitNs {
		s.maxWaitNs = w
	}
	if w > starvationNs {
		s.waitsOver1ms++
	}
	if starvingObservable && atomic.LoadInt32((*int32)(unsafe.Pointer(mu)))&mutexStarving != 0 {
		s.starving++
	}
}

// unlockBucket counts the releases that find the mutex in starvation mode: Unlock then hands
// the lock straight to the oldest waiter, which must be scheduled before anyone can use it.
// Only a waiter sets the bit while the lock is held, so the read just before Unlock sees the
// mode that Unlock acts on (bar a waiter setting it in between).
func unlockBucket(mu *sync.RWMutex, b int, ls *lockStats) {
	if ls != nil && starvingObservable && atomic.LoadInt32((*int32)(unsafe.Pointer(mu)))&mutexStarving != 0 {
		ls[b].handoffs++
	}
	mu.Unlock()
}

type lockSummary struct {
	acquires, waitsOver1ms, starving, handoffs int64
	waitS, maxWaitS                            float64
}

func (ls *lockStats) summary() lockSummary {
	var out lockSummary
	var wait, maxWait int64
	for i := range ls {
		s := &ls[i]
		out.acquires += s.acquires
		out.waitsOver1ms += s.waitsOver1ms
		out.starving += s.starving
		out.handoffs += s.handoffs
		wait += s.waitNs
		if s.maxWaitNs > maxWait {
			maxWait = s.maxWaitNs
		}
	}
	out.waitS, out.maxWaitS = float64(wait)/1e9, float64(maxWait)/1e9
	return out
}

// mutexStarving is internal/sync's state bit for starvation mode (mutexLocked = 1,
// mutexWoken = 2, mutexStarving = 4). The state word is not exported; an RWMutex's writer
// Mutex is its first field and the state the first word of that, which starvingObservable
// checks by reflection before anything reads it. A writer that acquires the lock and finds
// the bit still set got it by hand-off in starvation mode; the hand-off that ends the mode
// clears the bit first, so the count is a lower bound on hand-offs.
const mutexStarving = 4

var starvingObservable = mutexStateAtZero()

func mutexStateAtZero() bool {
	w, ok := reflect.TypeOf((*sync.RWMutex)(nil)).Elem().FieldByName("w")
	if !ok || w.Offset != 0 {
		return false
	}
	t := w.Type
	if inner, ok := t.FieldByName("mu"); ok { // Go >= 1.24: sync.Mutex wraps internal/sync.Mutex
		if inner.Offset != 0 {
			return false
		}
		t = inner.Type
	}
	st, ok := t.FieldByName("state")
	return ok && st.Offset == 0 && st.Type.Kind() == reflect.Int32
}
