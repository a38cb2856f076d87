// Command gobench measures the primitives simbatch's contention model is built from, on the
// machine it runs on, and writes a models/ file (TOML) that contention scenarios can load.
//
// Measured, standard library only:
//   - atomic add, RWMutex RLock+RUnlock and Mutex Lock+Unlock on one shared word, with 1 to
//     GOMAXPROCS goroutines contending (ns per operation per goroutine);
//   - spawning and joining goroutines (ns per goroutine of wall time x cores);
//   - filling a 1024-bucket map (one built-in map, a swiss table since Go 1.24, and one
//     mutex per bucket) in both designs: one goroutine per (subtree, bucket) slice, and one
//     owner goroutine per core fed through 8-slot channels;
//   - Exists probes on the filled map, under the bucket's read lock and lock-free.
//
// The scale suite (-suite scale, scale.go) measures what the candidate mechanisms of the
// many-core collapse predict (issue 13) at each GOMAXPROCS of -procs: insert and Exists cost
// against the map's size and against the slice size, and both designs on production-like
// subtrees with their CPU, lock waits, scheduling latency, goroutines and GC. It writes its
// own models/ file (-scale-out), with the laws the contention model takes fitted to the map
// and slice sections ([costs], [memory]: fit.go); -suite both runs the two suites; -refit FILE
// re-derives those fitted tables from a file the suite wrote, measuring nothing.
//
// Usage (from validate/gobench):
//
//	go run . [-size small|medium|large] [-out FILE]
//	go run . -suite scale [-size small|medium|large] [-scale-out FILE] [-procs 1,2] [-map dolthub|builtin]
//	         [-sections map,slice,production]
//	go run . -refit ../../models/go-scale-loopback.toml
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const buckets = 1024

type hash [32]byte

type bucketMap struct {
	mu [buckets]sync.RWMutex
	m  [buckets]map[hash]struct{}
}

func newBucketMap(n int) *bucketMap {
	b := &bucketMap{}
	for i := range b.m {
		b.m[i] = make(map[hash]struct{}, n/buckets*13/10+1)
	}
	return b
}

func bucketOf(h hash) int { return (int(h[0])*256 + int(h[1])) % buckets }

func genHashes(n int, seed uint64) []hash {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]hash, n)
	for i := range out {
		for j := 0; j < 32; j += 8 {
			binary.LittleEndian.PutUint64(out[i][j:j+8], rng.Uint64())
		}
	}
	return out
}

// contenders returns 1, 2, 4, ... up to procs, always ending at procs.
func contenders(procs int) []int {
	var ks []int
	for k := 1; k < procs; k *= 2 {
		ks = append(ks, k)
	}
	return append(ks, procs)
}

// perOp runs body(ops) in k goroutines and returns wall ns per operation per goroutine.
func perOp(k, ops int, body func(ops int)) float64 {
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < k; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); body(ops) }()
	}
	wg.Wait()
	return float64(time.Since(start).Nanoseconds()) / float64(ops)
}

func spawnNs(n, procs int) float64 {
	var wg sync.WaitGroup
	var sink atomic.Int64
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { sink.Add(1); wg.Done() }()
	}
	wg.Wait()
	return float64(time.Since(start).Nanoseconds()) * float64(procs) / float64(n)
}

func slicesBySubtree(h []hash, subtrees int) [][buckets][]hash {
	out := make([][buckets][]hash, subtrees)
	per := len(h) / subtrees
	for s := 0; s < subtrees; s++ {
		for _, x := range h[s*per : (s+1)*per] {
			b := bucketOf(x)
			out[s][b] = append(out[s][b], x)
		}
	}
	return out
}

func fillOld(m *bucketMap, sub [][buckets][]hash) {
	var g sync.WaitGroup
	sem := make(chan struct{}, 375)
	for s := range sub {
		g.Add(1)
		sem <- struct{}{}
		go func(s int) {
			defer func() { <-sem; g.Done() }()
			var bg sync.WaitGroup
			for b := range sub[s] {
				if len(sub[s][b]) == 0 {
					continue
				}
				bg.Add(1)
				go func(b int) {
					defer bg.Done()
					m.mu[b].Lock()
					for _, x := range sub[s][b] {
						m.m[b][x] = struct{}{}
					}
					m.mu[b].Unlock()
				}(b)
			}
			bg.Wait()
		}(s)
	}
	g.Wait()
}

type slice struct {
	b int
	h []hash
}

func fillNew(m *bucketMap, sub [][buckets][]hash, workers int) {
	chans := make([]chan []slice, workers)
	var wg sync.WaitGroup
	for w := range chans {
		chans[w] = make(chan []slice, 8)
		wg.Add(1)
		go func(c chan []slice) {
			defer wg.Done()
			for msg := range c {
				for _, sl := range msg {
					m.mu[sl.b].Lock()
					for _, x := range sl.h {
						m.m[sl.b][x] = struct{}{}
					}
					m.mu[sl.b].Unlock()
				}
			}
		}(chans[w])
	}
	var g sync.WaitGroup
	sem := make(chan struct{}, 375)
	for s := range sub {
		g.Add(1)
		sem <- struct{}{}
		go func(s int) {
			defer func() { <-sem; g.Done() }()
			msgs := make([][]slice, workers)
			for b := range sub[s] {
				if len(sub[s][b]) > 0 {
					msgs[b%workers] = append(msgs[b%workers], slice{b, sub[s][b]})
				}
			}
			for w, msg := range msgs {
				if len(msg) > 0 {
					chans[w] <- msg
				}
			}
		}(s)
	}
	g.Wait()
	for _, c := range chans {
		close(c)
	}
	wg.Wait()
}

func probeNs(m *bucketMap, probes []hash, procs int, locked bool) float64 {
	var wg sync.WaitGroup
	var found atomic.Int64
	per := len(probes) / procs
	start := time.Now()
	for g := 0; g < procs; g++ {
		wg.Add(1)
		go func(part []hash) {
			defer wg.Done()
			n := int64(0)
			for _, x := range part {
				b := bucketOf(x)
				if locked {
					m.mu[b].RLock()
				}
				if _, ok := m.m[b][x]; ok {
					n++
				}
				if locked {
					m.mu[b].RUnlock()
				}
			}
			found.Add(n)
		}(probes[g*per : (g+1)*per])
	}
	wg.Wait()
	return float64(time.Since(start).Nanoseconds()) / float64(per*procs)
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "model name") {
			return strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
		}
	}
	return runtime.GOARCH
}

func floats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func ints(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func main() {
	size := flag.String("size", "medium", "small (CI), medium, large")
	out := flag.String("out", "../../models/go-primitives.toml", "models/ file the primitives suite writes")
	suite := flag.String("suite", "primitives", "primitives, scale or both")
	scaleOut := flag.String("scale-out", "../../models/go-scale.toml", "models/ file the scale suite writes")
	procsFlag := flag.String("procs", "1,2", "GOMAXPROCS settings of the scale suite, comma-separated")
	impl := flag.String("map", "dolthub", "the map in the scale suite's slice and production benchmarks: dolthub or builtin")
	sectionsFlag := flag.String("sections", "map,slice,production", "the scale suite's sections to run, comma-separated")
	refitFile := flag.String("refit", "", "re-derive the fitted tables ([costs], [memory]) of a scale-suite file from its measured tables, measuring nothing")
	flag.Parse()
	if *refitFile != "" {
		if err := refit(*refitFile); err != nil {
			fmt.Fprintf(os.Stderr, "gobench: error: %v\n", err)
			os.Exit(1)
		}
		return
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "gobench: error: "+format+"\n", args...)
		os.Exit(2)
	}
	if _, ok := scalePresets[*size]; !ok {
		fail("-size must be small, medium or large; got %q", *size)
	}
	if *suite != "primitives" && *suite != "scale" && *suite != "both" {
		fail("-suite must be primitives, scale or both; got %q", *suite)
	}
	if *impl != "dolthub" && *impl != "builtin" {
		fail("-map must be dolthub or builtin; got %q", *impl)
	}
	var procs []int
	for _, f := range strings.Split(*procsFlag, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 || p > buckets {
			fail("-procs must be integers from 1 to %d, comma-separated; got %q", buckets, *procsFlag)
		}
		procs = append(procs, p)
	}
	if lcm(procs) > buckets { // the map-size keys are striped by it (genStriped)
		fail("-procs must have a least common multiple of at most %d; got %q", buckets, *procsFlag)
	}
	sections := map[string]bool{}
	for _, f := range strings.Split(*sectionsFlag, ",") {
		f = strings.TrimSpace(f)
		if f != "map" && f != "slice" && f != "production" {
			fail("-sections must name map, slice or production, comma-separated; got %q", *sectionsFlag)
		}
		sections[f] = true
	}
	if *suite != "scale" {
		if err := primitives(*size, *out); err != nil {
			fmt.Fprintf(os.Stderr, "gobench: error: %v\n", err)
			os.Exit(1)
		}
	}
	if *suite != "primitives" {
		command := "cd validate/gobench && go run . " + strings.Join(os.Args[1:], " ")
		if err := runScale(*size, *scaleOut, command, procs, *impl, sections); err != nil {
			fmt.Fprintf(os.Stderr, "gobench: error: %v\n", err)
			os.Exit(1)
		}
	}
}

// primitives measures the contention primitives at the machine's GOMAXPROCS and writes them.
func primitives(size, out string) error {
	scale := map[string]int{"small": 1, "medium": 8, "large": 32}[size]
	procs := runtime.GOMAXPROCS(0)
	ops := 200_000 * scale
	ks := contenders(procs)
	var atomicNs, rlockNs, mutexNs []float64
	for _, k := range ks {
		var word atomic.Int64
		var rw sync.RWMutex
		var mu sync.Mutex
		atomicNs = append(atomicNs, perOp(k, ops, func(n int) {
			for i := 0; i < n; i++ {
				word.Add(1)
			}
		}))
		rlockNs = append(rlockNs, perOp(k, ops, func(n int) {
			for i := 0; i < n; i++ {
				rw.RLock()
				rw.RUnlock()
			}
		}))
		mutexNs = append(mutexNs, perOp(k, ops, func(n int) {
			for i := 0; i < n; i++ {
				mu.Lock()
				mu.Unlock()
			}
		}))
	}
	// The client statistics' increment (aerospike-client-go node_stats.go, issue #1001): a
	// read-locked Get then a write-locked Set on a small map behind one RWMutex, uncontended.
	var statsRW sync.RWMutex
	counts := map[int]int{0: 0, 1: 0, 2: 0}
	statsGet := perOp(1, ops, func(n int) {
		s := 0
		for i := 0; i < n; i++ {
			statsRW.RLock()
			s += counts[i&1]
			statsRW.RUnlock()
		}
		counts[2] = s
	})
	statsSet := perOp(1, ops, func(n int) {
		for i := 0; i < n; i++ {
			statsRW.Lock()
			counts[i&1] = i
			statsRW.Unlock()
		}
	})
	// The same increment by k goroutines at once on one shared map (the broken variant's
	// N^2 loop in k concurrent batch parses): wall ns per increment over all of them, the
	// inverse of the lock's throughput (simbatch.clientstats.StatsLocks predicts it).
	var statsShared []float64
	for _, k := range ks {
		var rw sync.RWMutex
		shared := map[int]int{0: 0, 1: 0}
		per := ops / k
		statsShared = append(statsShared, perOp(k, per, func(n int) {
			for i := 0; i < n; i++ {
				rw.RLock()
				v := shared[i&1]
				rw.RUnlock()
				rw.Lock()
				shared[i&1] = v + 1
				rw.Unlock()
			}
		})/float64(k))
	}
	goroutine := spawnNs(100_000*scale, procs)
	nTx, subtrees := 250_000*scale, 16*scale
	hashes := genHashes(nTx, 1)
	sub := slicesBySubtree(hashes, subtrees)
	mOld := newBucketMap(nTx)
	t := time.Now()
	fillOld(mOld, sub)
	oldRate := float64(nTx) / time.Since(t).Seconds()
	mNew := newBucketMap(nTx)
	t = time.Now()
	fillNew(mNew, sub, procs)
	newRate := float64(nTx) / time.Since(t).Seconds()
	probes := append(append([]hash{}, hashes[:nTx/2]...), genHashes(nTx/2, 2)...)
	rand.New(rand.NewPCG(3, 3)).Shuffle(len(probes), func(i, j int) { probes[i], probes[j] = probes[j], probes[i] })
	rlockProbe := probeNs(mNew, probes, procs, true)
	frozenProbe := probeNs(mNew, probes, procs, false)

	// Derived model parameters (see simbatch/cpu.py and simbatch/bucketmap.py).
	lineNear := 0.0
	if len(atomicNs) > 1 {
		lineNear = atomicNs[1] - atomicNs[0] // one more core on the line: a transfer per op
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Go primitives measured by validate/gobench; do not edit by hand: re-run\n")
	fmt.Fprintf(&b, "# `cd validate/gobench && go run . -size %s -out %s` on the machine to model.\n\n", size, out)
	fmt.Fprintf(&b, "[provenance]\ngo = %q\ngomaxprocs = %d\ncpu = %q\nmeasured_on = %q\nsize = %q\n\n",
		runtime.Version(), procs, cpuModel(), time.Now().UTC().Format("2006-01-02 15:04 UTC"), size)
	fmt.Fprintf(&b, "[cpu]\ncores = %d\nline_near_ns = %.2f\ndomain_cores = %d\ngoroutine_ns = %.1f\n\n",
		procs, lineNear, procs, goroutine)
	fmt.Fprintf(&b, "[costs]\nput_ns = %.2f\nprobe_ns = %.2f\nreference_entries = %d\n\n",
		float64(procs)*1e9/newRate, frozenProbe*float64(procs), nTx)
	fmt.Fprintf(&b, "[service.stats]\nread_ns = %.2f\nwrite_ns = %.2f\n\n", statsGet, statsSet)
	fmt.Fprintf(&b, "[measured]\ncontenders = %s\natomic_add_ns = %s\nrwmutex_rlock_ns = %s\nmutex_lock_ns = %s\n",
		ints(ks), floats(atomicNs), floats(rlockNs), floats(mutexNs))
	fmt.Fprintf(&b, "stats_increment_ns = %s\n", floats(statsShared))
	fmt.Fprintf(&b, "fill_tx = %d\nfill_subtrees = %d\nfill_old_tx_per_s = %.0f\nfill_new_tx_per_s = %.0f\n",
		nTx, subtrees, oldRate, newRate)
	fmt.Fprintf(&b, "exists_rlock_ns_per_probe = %.3f\nexists_frozen_ns_per_probe = %.3f\n", rlockProbe, frozenProbe)
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String())
	return nil
}
