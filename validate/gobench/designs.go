package main

// The two ways teranode fills the transaction map from a block's subtrees
// (subtreeprocessor CreateTransactionMap, mechanisms.md section 4), and its Exists phase
// (processRemainderTxHashes), on pre-bucketed hashes as in the R4 benchmarks:
//   - old (before PR #1078): an errgroup limited to 375 runs one goroutine per subtree; each
//     starts one goroutine per non-empty bucket, which calls PutMultiBucket (write lock once)
//     and waits for them;
//   - new (bucketInserter): W = GOMAXPROCS workers, worker w owning the buckets b with
//     b mod W == w, each fed through a channel of 8 messages; a subtree goroutine sends each
//     worker one message with its slices.

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
)

const (
	subtreeLimit = 375 // blockassembly_subtreeProcessorConcurrentReads, and the remainder's
	chanSlots    = 8
)

// blockShape is a block of subtrees of buckets x perSlice hashes, perSlice in every bucket.
// Subtree t holds key set t mod keySets: with keySets < subtrees the later subtrees re-put
// hashes already in the map (a swiss-map update: the same probe, no growth), which keeps a
// block of production's goroutine count within this machine's memory.
type blockShape struct {
	subtrees, keySets, perSlice int
}

func (sh blockShape) txs() int      { return sh.subtrees * buckets * sh.perSlice }
func (sh blockShape) distinct() int { return sh.keySets * buckets * sh.perSlice }

func (sh blockShape) slice(keys []hash, t, b int) []hash {
	off := ((t%sh.keySets)*buckets + b) * sh.perSlice
	return keys[off : off+sh.perSlice]
}

// genBucketed returns keySets x buckets x perSlice random hashes, the ones at
// ((k*buckets)+b)*perSlice + i falling in bucket b.
func genBucketed(sh blockShape, seed uint64) []hash {
	keys := genHashes(sh.distinct(), seed)
	for i := range keys {
		setBucket(&keys[i], (i/sh.perSlice)%buckets)
	}
	return keys
}

// genStriped returns n random hashes whose bucket is congruent to the index modulo stripe,
// so that W workers, W dividing stripe, can each take every W-th hash and own its buckets
// (b mod W == w) without a pass over the others.
func genStriped(n, stripe int, seed uint64) []hash {
	keys := genHashes(n, seed)
	for i := range keys {
		b := bucketOf(keys[i])
		b += i%stripe - b%stripe
		if b >= buckets {
			b -= stripe
		}
		setBucket(&keys[i], b)
	}
	return keys
}

func setBucket(h *hash, b int) {
	h[0] = h[0]&^3 | byte(b>>8)
	h[1] = byte(b)
}

// halfHits returns n probes, every other one a hash of keys, the rest new, shuffled.
func halfHits(keys []hash, n int, seed uint64) []hash {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	out := genHashes(n, seed+2)
	for i := 0; i < n; i += 2 {
		out[i] = keys[rng.IntN(len(keys))]
	}
	rng.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// gauge counts live goroutines of a design and keeps the peak; a nil gauge counts nothing.
type gauge struct{ live, peak atomic.Int64 }

func (g *gauge) up() {
	if g == nil {
		return
	}
	n := g.live.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
}

func (g *gauge) down() {
	if g != nil {
		g.live.Add(-1)
	}
}

func insertOld(st store, keys []hash, sh blockShape, ls *lockStats, g *gauge) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, subtreeLimit)
	for t := 0; t < sh.subtrees; t++ {
		sem <- struct{}{}
		wg.Add(1)
		g.up()
		go func(t int) {
			defer func() { <-sem; g.down(); wg.Done() }()
			var bg sync.WaitGroup
			for b := 0; b < buckets; b++ {
				bg.Add(1)
				g.up()
				go func(b int, sl []hash) {
					defer func() { g.down(); bg.Done() }()
					st.putSlice(b, sl, ls)
				}(b, sh.slice(keys, t, b))
			}
			bg.Wait()
		}(t)
	}
	wg.Wait()
}

type bucketSlice struct {
	b int
	h []hash
}

func insertNew(st store, keys []hash, sh blockShape, workers int, g *gauge) {
	chans := make([]chan []bucketSlice, workers)
	var ww sync.WaitGroup
	for w := range chans {
		chans[w] = make(chan []bucketSlice, chanSlots)
		ww.Add(1)
		g.up()
		go func(c chan []bucketSlice) {
			defer func() { g.down(); ww.Done() }()
			for msg := range c {
				for _, s := range msg {
					st.putSlice(s.b, s.h, nil)
				}
			}
		}(chans[w])
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, subtreeLimit)
	for t := 0; t < sh.subtrees; t++ {
		sem <- struct{}{}
		wg.Add(1)
		g.up()
		go func(t int) {
			defer func() { <-sem; g.down(); wg.Done() }()
			msgs := make([][]bucketSlice, workers)
			for b := 0; b < buckets; b++ {
				msgs[b%workers] = append(msgs[b%workers], bucketSlice{b, sh.slice(keys, t, b)})
			}
			for w, msg := range msgs {
				if len(msg) > 0 {
					chans[w] <- msg
				}
			}
		}(t)
	}
	wg.Wait()
	for _, c := range chans {
		close(c)
	}
	ww.Wait()
}

// probePhase is processRemainderTxHashes' Exists pass: the probes split into one part per
// subtree, an errgroup of 375 over the parts, each part (>= 1024 nodes) checked by
// max(2, min(cores, n/1024)) chunk goroutines. Returns the hits.
func probePhase(st store, probes []hash, subtrees int, rlock bool) int {
	var hits atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, subtreeLimit)
	per := len(probes) / subtrees
	cores := runtime.GOMAXPROCS(0)
	for t := 0; t < subtrees; t++ {
		part := probes[t*per : (t+1)*per]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if len(part) < buckets {
				hits.Add(int64(st.probe(part, rlock)))
				return
			}
			chunks := max(2, min(cores, len(part)/buckets))
			n := len(part) / chunks
			var cg sync.WaitGroup
			for c := 0; c < chunks; c++ {
				end := (c + 1) * n
				if c == chunks-1 {
					end = len(part)
				}
				cg.Add(1)
				go func(ps []hash) {
					defer cg.Done()
					hits.Add(int64(st.probe(ps, rlock)))
				}(part[c*n : end])
			}
			cg.Wait()
		}()
	}
	wg.Wait()
	return int(hits.Load())
}
