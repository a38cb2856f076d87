package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// blockResult is one measured block: a row of blocks.csv.
type blockResult struct {
	c           cell
	rep         int // also the round: a cell runs once per round
	startUnix   time.Time
	startMonoNs int64 // the block's start on CLOCK_MONOTONIC; < 0: not read
	blockTime   time.Duration
	fs          flushSummary
	lib         reasonSnapshot // v2's own counts over the block; zero for v1
	lat         latencyQuantiles
	inflightMax int64
	processCPU  time.Duration
	gcCycles    uint64
	minorFaults uint64        // page faults the kernel served in the block (getrusage ru_minflt)
	stackStart  uint64        // the runtime's starting stack size for new goroutines at the block's start
	runqWait    time.Duration // the working threads runnable but off CPU in the block (runqWaitSince)
	wakerWait   time.Duration // the driver's thread at the block's start, off CPU (splitWaits)
	wokenWait   time.Duration // the longest wait of another thread (splitWaits)
	gcBefore    uint64        // collections since the previous block's end (maybeCollect's)
	driverP     int           // the processor that ran the driver at the block's start
	spawned     time.Duration // the driver had started every transaction; < 0: sequential
	otherP      time.Duration // a transaction first started on another processor; < 0: none
	lockWait    time.Duration // goroutines waiting for a mutex or a runtime lock (lockWait)
	idleBefore  time.Duration // the process idled this long right before the block (idleBefore)
	loadavg     float64
	running     int // runnable threads on the machine just before the block, the harness's one included
	steal, busy float64
}

// blockColumns documents blocks.csv: one row per measured block (warm-up blocks are not
// written). Units are in the names; booleans are 0/1.
var blockColumns = []string{
	"gomaxprocs", "version", "timer", "size", "timeout_ms", "drain", "max_concurrent",
	"fanout", "cap", "n_tx", "inputs_per_tx", "flush", "flush_us", "cell", "cell_no", "rep",
	"block_start_unix_s", "block_start_mono_s", "block_time_s", "n_items",
	"n_flushes", "flushes_full", "flushes_partial",
	"flushes_size", "flushes_timeout", "flushes_drain", "reason_source",
	"batch_size_min", "batch_size_p50", "batch_size_mean", "batch_size_max",
	"item_latency_p50_s", "item_latency_p90_s", "item_latency_p99_s", "item_latency_max_s",
	"inflight_max", "puts_blocked", "worker_pool_waits",
	"process_cpu_s", "gc_cycles", "loadavg_1m", "host_running_threads",
	"host_steal_share", "host_busy_share", "minor_faults", "stack_start_bytes", "runq_wait_s",
	"runq_wait_waker_s", "runq_wait_woken_s", "gc_before", "driver_processor", "spawned_us",
	"other_processor_first_us", "lock_wait_s", "idle_before_s",
}

func (r blockResult) row() []string {
	c := r.c
	timer := "first_item"
	if c.key.version == v1 {
		timer = "cycle"
	}
	sizeR, timeoutR, drainR := r.fs.byReason["size"], r.fs.byReason["timeout"], r.fs.byReason["drain"]
	source, blocked, waits := "inferred_from_length", "", ""
	if c.key.version == v2 {
		sizeR, timeoutR, drainR = int(r.lib.size), int(r.lib.timeout), int(r.lib.drain)
		source, blocked, waits = "library", itoa(r.lib.blockedPuts), itoa(r.lib.workerWaits)
	}
	return []string{
		itoa(c.procs), c.key.version, timer, itoa(c.key.size), ms(c.key.timeout), b01(c.key.drain),
		itoa(c.key.maxConcurrent), c.fan.kind, c.fan.capColumn(), itoa(c.nTx), itoa(c.k),
		c.flush.kind, itoa(c.flush.d.Microseconds()), c.id(), itoa(c.no), itoa(r.rep),
		fmt.Sprintf("%.3f", float64(r.startUnix.UnixMicro())/1e6), monoOrEmpty(r.startMonoNs),
		secs(r.blockTime),
		itoa(c.nTx * c.k),
		itoa(r.fs.n), itoa(r.fs.full), itoa(r.fs.partial),
		itoa(sizeR), itoa(timeoutR), itoa(drainR), source,
		itoa(r.fs.sizeMin), itoa(r.fs.sizeP50), fmt.Sprintf("%.2f", r.fs.sizeMean), itoa(r.fs.sizeMax),
		f6(r.lat.p50), f6(r.lat.p90), f6(r.lat.p99), f6(r.lat.max),
		itoa(r.inflightMax), blocked, waits,
		secs(r.processCPU), itoa(r.gcCycles), fmt.Sprintf("%.2f", r.loadavg), itoa(r.running),
		share(r.steal), share(r.busy), itoa(r.minorFaults), itoa(r.stackStart), secs(r.runqWait),
		secs(r.wakerWait), secs(r.wokenWait), itoa(int(r.gcBefore)), itoa(r.driverP),
		usOrEmpty(r.spawned), usOrEmpty(r.otherP), secs(r.lockWait), secs(r.idleBefore),
	}
}

// monoOrEmpty is a CLOCK_MONOTONIC reading in seconds to the nanosecond, or empty when it
// could not be read.
func monoOrEmpty(ns int64) string {
	if ns < 0 {
		return ""
	}
	return fmt.Sprintf("%d.%09d", ns/1e9, ns%1e9)
}

// usOrEmpty is d in microseconds to 0.1 us, or empty when d < 0 (not observed).
func usOrEmpty(d time.Duration) string {
	if d < 0 {
		return ""
	}
	return strconv.FormatFloat(float64(d.Nanoseconds())/1e3, 'f', 1, 64)
}

// flushColumns documents flushes.csv: one row per flush callback of a measured block, in
// start order; cell_no and rep join it to blocks.csv. Times are microseconds from the
// block's start (its first transaction started), to 0.1 us: a drain-mode block at GOMAXPROCS
// 1 flushes every 3-5 us, and the spread of those gaps is what the model's runs must show.
// reason_inferred is the trigger as the
// batch length tells (see inferReason).
var flushColumns = []string{"cell_no", "rep", "flush_index", "start_us", "end_us", "batch_size",
	"reason_inferred", "processor"}

func flushRows(c cell, rep int, startNs int64, fl []flushRec) [][]string {
	fl = slices.Clone(fl)
	slices.SortFunc(fl, func(a, b flushRec) int { return int(a.startNs - b.startNs) })
	us := func(ns int64) string { return strconv.FormatFloat(float64(ns-startNs)/1e3, 'f', 1, 64) }
	rows := make([][]string, len(fl))
	for i, f := range fl {
		rows[i] = []string{itoa(c.no), itoa(rep), itoa(i), us(f.startNs), us(f.endNs),
			itoa(f.size), inferReason(f.size, c.key), itoa(int(f.p))}
	}
	return rows
}

// itemColumns documents items.csv (-items): one row per item of a measured block of at most
// itemsMaxTx transactions; cell_no and rep join it to blocks.csv. Times are microseconds from
// the block's start, to 0.1 us; processor is the one the item was Put on (procID), so that a
// block's Puts can be followed processor by processor (blocks.csv's driver_processor is the
// driver's). An item's transaction is item / inputs_per_tx.
var itemColumns = []string{"cell_no", "rep", "item", "put_us", "processor", "done_us"}

// itemsMaxTx bounds the blocks whose items -items writes.
const itemsMaxTx = 256

func itemRows(c cell, rep int, startNs int64, items []item) [][]string {
	us := func(ns int64) string { return strconv.FormatFloat(float64(ns-startNs)/1e3, 'f', 1, 64) }
	rows := make([][]string, len(items))
	for i := range items {
		it := &items[i]
		rows[i] = []string{itoa(c.no), itoa(rep), itoa(i), us(it.putNs), itoa(int(it.putP)),
			us(it.doneNs)}
	}
	return rows
}

// csvFile is a CSV file written row by row and flushed after each block, so an interrupted
// run keeps what it measured.
type csvFile struct {
	f *os.File
	w *csv.Writer
}

func createCSV(dir, name string, header []string) (*csvFile, error) {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	c := &csvFile{f: f, w: csv.NewWriter(f)}
	return c, c.write(header)
}

func (c *csvFile) write(rows ...[]string) error {
	if err := c.w.WriteAll(rows); err != nil { // WriteAll flushes
		return err
	}
	return c.w.Error()
}

func (c *csvFile) Close() error { return c.f.Close() }

func itoa[T int | int64 | uint64](v T) string { return strconv.FormatInt(int64(v), 10) }
func secs(d time.Duration) string             { return f6(d.Seconds()) }
func f6(x float64) string                     { return strconv.FormatFloat(x, 'f', 6, 64) }
func ms(d time.Duration) string               { return strconv.FormatFloat(float64(d)/1e6, 'g', -1, 64) }

func share(x float64) string {
	if x < 0 {
		return ""
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

func b01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
