package main

// What a measured section cost: the process's CPU time (getrusage), the runtime's own
// counters (runtime/metrics: lock wait, scheduling latency, GC), and the rest of the VM
// (/proc/stat: CPU stolen by the hypervisor, CPU used by other processes meanwhile).

import (
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The runtime metrics read around each section. /sync/mutex/wait/total counts time parked
// on a sync.Mutex or RWMutex (sampled, 1 in 8 goroutine transitions, scaled by 8) plus time
// threads spent waiting on runtime-internal locks (the scheduler's lock among them).
// /sched/latencies is the time goroutines spent runnable before they ran (also sampled).
var runtimeMetrics = []string{
	"/sync/mutex/wait/total:seconds",
	"/sched/latencies:seconds",
	"/gc/cycles/total:gc-cycles",
	"/cpu/classes/gc/total:cpu-seconds",
	"/sched/goroutines-created:goroutines",
}

// userHz is the kernel's USER_HZ, the unit of /proc/stat (100 on Linux for x86 and arm).
const userHz = 100

type snapshot struct {
	at               time.Time
	cpuNs            int64
	machine          machineTimes
	samples          []metrics.Sample
	syncWait, rtWait float64 // mutex-profile delay (cycles): sync locks, runtime-internal locks
}

type machineTimes struct {
	busy, steal, total float64 // jiffies, all CPUs of the VM
}

type usage struct {
	wallS, cpuS, coresBusy float64
	mutexWaitS             float64 // runtime/metrics, see runtimeMetrics
	runtimeLockShare       float64 // runtime-internal locks' share of the mutex profile's delay
	schedP50S, schedP99S   float64 // upper edges of the histogram buckets holding p50, p99
	gcCycles               float64
	gcCPUS                 float64 // runtime's estimate; updated when a cycle ends
	goroutinesCreated      float64 // -1 when the runtime does not export it (Go < 1.26)
	stealShare             float64 // share of the VM's CPU time the hypervisor took
	otherCores             float64 // cores other processes kept busy meanwhile
}

func takeSnapshot() snapshot {
	s := snapshot{samples: make([]metrics.Sample, len(runtimeMetrics))}
	for i, name := range runtimeMetrics {
		s.samples[i].Name = name
	}
	metrics.Read(s.samples)
	s.syncWait, s.rtWait = contention()
	s.machine = readMachine()
	s.cpuNs = processCPUNs()
	s.at = time.Now()
	return s
}

func since(before snapshot) usage {
	after := takeSnapshot()
	u := usage{wallS: after.at.Sub(before.at).Seconds(), cpuS: float64(after.cpuNs-before.cpuNs) / 1e9}
	u.coresBusy = u.cpuS / u.wallS
	u.mutexWaitS = scalarDelta(before.samples[0], after.samples[0])
	if d := after.syncWait - before.syncWait + after.rtWait - before.rtWait; d > 0 {
		u.runtimeLockShare = (after.rtWait - before.rtWait) / d
	}
	u.schedP50S, u.schedP99S = histDelta(before.samples[1], after.samples[1])
	u.gcCycles = scalarDelta(before.samples[2], after.samples[2])
	u.gcCPUS = scalarDelta(before.samples[3], after.samples[3])
	u.goroutinesCreated = scalarDelta(before.samples[4], after.samples[4])
	if after.samples[4].Value.Kind() == metrics.KindBad {
		u.goroutinesCreated = -1
	}
	if total := after.machine.total - before.machine.total; total > 0 {
		u.stealShare = (after.machine.steal - before.machine.steal) / total
		u.otherCores = (after.machine.busy-before.machine.busy)/userHz/u.wallS - u.coresBusy
	}
	return u
}

// noisy says whether other tenants disturbed a section enough to measure it again: the
// hypervisor stole more than 5 % of the VM, or other processes kept a quarter of a core busy
// (only judged on sections of 0.2 s or more: /proc/stat counts in 10 ms ticks).
func (u usage) noisy() bool {
	return u.wallS >= 0.2 && (u.stealShare > 0.05 || u.otherCores > 0.25)
}

func scalarDelta(a, b metrics.Sample) float64 {
	switch b.Value.Kind() {
	case metrics.KindUint64:
		return float64(b.Value.Uint64() - a.Value.Uint64())
	case metrics.KindFloat64:
		return b.Value.Float64() - a.Value.Float64()
	}
	return 0
}

func histDelta(a, b metrics.Sample) (p50, p99 float64) {
	if b.Value.Kind() != metrics.KindFloat64Histogram {
		return 0, 0
	}
	hb := b.Value.Float64Histogram()
	counts := make([]uint64, len(hb.Counts))
	copy(counts, hb.Counts)
	if a.Value.Kind() == metrics.KindFloat64Histogram {
		for i, c := range a.Value.Float64Histogram().Counts {
			counts[i] -= c
		}
	}
	return quantile(hb.Buckets, counts, 0.5), quantile(hb.Buckets, counts, 0.99)
}

// quantile returns the upper edge of the bucket holding the q-quantile (its lower edge for
// the last, unbounded bucket), 0 for an empty histogram.
func quantile(edges []float64, counts []uint64, q float64) float64 {
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	target := uint64(math.Ceil(q * float64(total)))
	var cum uint64
	for i, c := range counts {
		cum += c
		if cum >= target {
			if math.IsInf(edges[i+1], 1) {
				return edges[i]
			}
			return edges[i+1]
		}
	}
	return edges[len(edges)-1]
}

func processCPUNs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// readMachine parses the first line of /proc/stat: user nice system idle iowait irq softirq
// steal (guest time is already inside user). Zero where there is no /proc.
func readMachine() machineTimes {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTimes{}
	}
	line := strings.SplitN(string(data), "\n", 2)[0]
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return machineTimes{}
	}
	v := make([]float64, 8)
	for i := range v {
		v[i], _ = strconv.ParseFloat(fields[i+1], 64)
	}
	var m machineTimes
	for _, x := range v {
		m.total += x
	}
	m.busy = v[0] + v[1] + v[2] + v[5] + v[6]
	m.steal = v[7]
	return m
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unavailable"
	}
	return strings.TrimSpace(string(data))
}

// memAvailable is the kernel's estimate of the memory new allocations can take (bytes), 0
// where there is no /proc/meminfo.
func memAvailable() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "MemAvailable:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// heapObjectsBytes is the heap held by live and not yet swept objects; call it after
// runtime.GC() for the live heap.
func heapObjectsBytes() float64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64())
}

// mutexProfileRate samples one contention event in 8 into the mutex profile (as the runtime
// samples its wait-time metric); the scale suite turns it on.
const mutexProfileRate = 8

// contention splits the mutex profile's cumulative delay between sync.Mutex/RWMutex (the
// unlocker's stack has a sync. frame) and runtime-internal locks (the scheduler's, the
// allocator's...; Go >= 1.22 records them too). The profile cannot be reset, so callers take
// differences; only the ratio is used (its unit, CPU ticks, is not exported).
func contention() (syncDelay, runtimeDelay float64) {
	n, _ := runtime.MutexProfile(nil)
	recs := make([]runtime.BlockProfileRecord, n+64)
	n, ok := runtime.MutexProfile(recs)
	if !ok {
		return 0, 0
	}
	for _, r := range recs[:n] {
		isSync := false
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if strings.HasPrefix(f.Function, "sync.") || strings.HasPrefix(f.Function, "internal/sync.") {
				isSync = true
				break
			}
			if !more {
				break
			}
		}
		if isSync {
			syncDelay += float64(r.Cycles)
		} else {
			runtimeDelay += float64(r.Cycles)
		}
	}
	return syncDelay, runtimeDelay
}
