// Command gobatcher drives the real go-batcher library (github.com/bsv-blockchain/go-batcher
// v1.1.0 and /v2 v2.0.6, the versions teranode pinned in Nov 2025 and pins now) with table
// R1's method, and measures the host's sleep and timer constants, so simbatch's batcher
// engine can be calibrated and judged against the real thing (issue 11).
//
// A block is N transactions x k inputs; each transaction Puts its inputs, one Put per input,
// and waits for all of them (teranode's PreviousOutputsDecorate). Transactions are started by
// a loop, an errgroup with SetLimit(cap), or all at once (BatchPreviousOutputsDecorate). The
// flush callback sleeps or burns CPU for d, then completes its items. Batchers are built once
// and reused by every block of the run, as a node's outpoint batcher is; each cell's first
// visit runs warm-up blocks that are not written; repetitions go round-robin over the cells.
//
// Usage (from validate/gobatcher):
//
//	go run . -grid small -out DIR                 # 15-25 s: the CI grid
//	go run . -grid full -out DIR                  # the grid, ~30 min
//	go run . -grid none -host ../../models/host-loopback.toml
//	go run . -grid none -costs ../../models/gobatcher-costs-loopback.toml
//
// Writes DIR/blocks.csv (one row per block), DIR/flushes.csv (one row per flush),
// DIR/probes.csv (the CPU-availability probes between blocks, probe.go) and DIR/run.toml
// (how the run was made); column meanings are in output.go and probe.go. -costs measures the
// Go runtime's operations (costs.go) into a models/ file.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

type options struct {
	out, grid, only, gc, host  string
	costs                      string
	probeEvery                 int
	probeD                     time.Duration
	reps, focusReps, warmup, k int
	phaseReps, settleReps      int
	seed                       uint64
	procs                      []int
	flushD, maxBlock           time.Duration
	hostProcs                  int
	hostScale                  float64
	hostWake                   bool
	dry                        bool
	detailReps                 int
	traceDir                   string
	items                      bool
	cpuProfile                 string
	afterIdle                  int
	awake                      bool
}

func parseFlags() (options, error) {
	var o options
	var procs string
	flag.StringVar(&o.out, "out", "out", "directory for blocks.csv, flushes.csv and run.toml")
	flag.StringVar(&o.grid, "grid", "small", "which cells: small (CI, under a minute), full (~30 min), or none")
	flag.IntVar(&o.reps, "reps", 0, "measured blocks per cell (0: 3 for small, 5 for full)")
	flag.IntVar(&o.focusReps, "focus-reps", 30, "blocks per drain-on, cap=all, N<=64 cell (their batch composition varies run to run)")
	flag.IntVar(&o.phaseReps, "phase-reps", 100, "blocks per cell whose block time is largely the v1 cycle's phase (each round of transactions one batch, at most 4 rounds: cells.go, phaseBound)")
	flag.IntVar(&o.settleReps, "settle-reps", 60, "a cell whose median block time is not settled after its planned blocks (the median's 95 % confidence interval wider than 15 % of it either way: stats.go, medianSettled) gets one more per round until it settles or has this many blocks (0: never more)")
	flag.IntVar(&o.warmup, "warmup", 1, "discarded blocks before a cell's first measured one")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the order of cells within each round")
	flag.StringVar(&procs, "gomaxprocs", "1,2", "GOMAXPROCS values, a cell dimension (set between blocks)")
	flag.IntVar(&o.k, "k", 3, "inputs (Puts) per transaction (R1: 3)")
	flag.DurationVar(&o.flushD, "flush", 500*time.Microsecond, "flush callback's work d (R1: 500us)")
	flag.DurationVar(&o.maxBlock, "max-block", 2*time.Second, "full grid: leave out cells estimated to take longer per block")
	flag.StringVar(&o.only, "only", "", "regexp: run only the cells whose id matches")
	flag.StringVar(&o.gc, "gc", "between", "between: collector off during blocks, run between them once the harness has allocated 64 MiB; block: before every block; release: before every block, returning the freed memory to the OS (debug.FreeOSMemory); go: Go's own pacing")
	flag.StringVar(&o.host, "host", "", "also measure sleep and timer constants into this TOML file")
	flag.IntVar(&o.hostProcs, "host-gomaxprocs", runtime.NumCPU(), "GOMAXPROCS for the host measurement")
	flag.Float64Var(&o.hostScale, "host-scale", 1, "multiplies the host measurement's sample counts")
	flag.BoolVar(&o.hostWake, "host-wake", false, "with -host: re-measure only the wake-up and back-off lists of the existing file, keeping its sleep and timer tables")
	flag.StringVar(&o.costs, "costs", "", "also measure the Go runtime's operation costs into this TOML file")
	flag.IntVar(&o.probeEvery, "probe-every", 10, "run a CPU-availability probe at each GOMAXPROCS every N blocks (0: never)")
	flag.DurationVar(&o.probeD, "probe", 10*time.Millisecond, "duration of each CPU-availability probe")
	flag.IntVar(&o.detailReps, "flush-detail-reps", -1, "write flushes.csv rows of blocks above 256 transactions for their first R repetitions only (-1: all), to bound the file's size")
	flag.BoolVar(&o.items, "items", false, "also write items.csv: every item of the blocks of at most 256 transactions, when it was Put, on which processor, and when its flush completed it")
	flag.StringVar(&o.traceDir, "trace", "", "write an execution trace (runtime/trace, read with go tool trace) of every measured block into this directory, one file per block: for looking at one cell's scheduling with -only, not for timing")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile (runtime/pprof, read with go tool pprof) of the whole run into this file: with -only, -probe-every 0 and many -reps, where one cell's CPU goes")
	flag.IntVar(&o.afterIdle, "after-idle", 0, "also run the after-idle probe (afteridle.go) with this many trials per state and print its table")
	flag.BoolVar(&o.awake, "awake", false, "keep every CPU from going idle during the run: one spinner per CPU at the kernel's idle priority (SCHED_IDLE), which any other thread preempts (awake.go); to tell the hypervisor's halted-vCPU wake-ups from the Go runtime's scheduling")
	flag.BoolVar(&o.dry, "dry", false, "print the cells and their estimated block times, measure nothing")
	flag.Parse()
	var err error
	o.procs, err = parseInts(procs)
	if err != nil {
		return o, fmt.Errorf("-gomaxprocs %q: %v", procs, err)
	}
	return o, o.validate()
}

// validate rejects bad flag values, naming the flag and the value.
func (o options) validate() error {
	switch {
	case o.gc != "between" && o.gc != "block" && o.gc != "release" && o.gc != "go":
		return fmt.Errorf("-gc must be between, block, release or go; got %q", o.gc)
	case o.reps < 0 || o.focusReps < 0 || o.phaseReps < 0 || o.settleReps < 0 || o.warmup < 0:
		return fmt.Errorf("-reps, -focus-reps, -phase-reps, -settle-reps and -warmup must be >= 0; got %d, %d, %d, %d, %d",
			o.reps, o.focusReps, o.phaseReps, o.settleReps, o.warmup)
	case o.k < 1:
		return fmt.Errorf("-k must be >= 1; got %d", o.k)
	case o.flushD <= 0:
		return fmt.Errorf("-flush must be > 0; got %s", o.flushD)
	case o.probeEvery < 0 || o.probeD <= 0:
		return fmt.Errorf("-probe-every must be >= 0 and -probe > 0; got %d, %s", o.probeEvery, o.probeD)
	case o.afterIdle < 0:
		return fmt.Errorf("-after-idle must be >= 0; got %d", o.afterIdle)
	case o.hostProcs < 1 || o.hostScale <= 0:
		return fmt.Errorf("-host-gomaxprocs must be >= 1 and -host-scale > 0; got %d, %g", o.hostProcs, o.hostScale)
	case o.hostWake && (o.host == "" || o.hostProcs < 2):
		return fmt.Errorf("-host-wake needs -host FILE and -host-gomaxprocs >= 2; got -host %q, -host-gomaxprocs %d", o.host, o.hostProcs)
	}
	return nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("want positive integers separated by commas")
		}
		out = append(out, v)
	}
	return out, nil
}

// cellsFor builds the requested grid.
func cellsFor(o options) (cells []cell, left leftOut, err error) {
	g := gridOptions{procs: o.procs, reps: o.reps, focusReps: o.focusReps, phaseReps: o.phaseReps, k: o.k,
		flushD: o.flushD, maxBlock: o.maxBlock, sizeTimers: shippedAndR1}
	switch o.grid {
	case "small":
		if g.reps == 0 {
			g.reps = 3
		}
		cells = smallGrid(g)
	case "full":
		if g.reps == 0 {
			g.reps = 5
		}
		cells, left = fullGrid(g)
	case "none":
	default:
		return nil, left, fmt.Errorf("-grid must be small, full or none; got %q", o.grid)
	}
	if o.only != "" {
		re, err := regexp.Compile(o.only)
		if err != nil {
			return nil, left, fmt.Errorf("-only: %v", err)
		}
		var kept []cell
		for _, c := range cells {
			if re.MatchString(c.id()) {
				kept = append(kept, c)
			}
		}
		cells = kept
	}
	for i := range cells {
		cells[i].no = i
	}
	return cells, left, nil
}

func command() string {
	return "cd validate/gobatcher && go run . " + strings.Join(os.Args[1:], " ")
}

func main() {
	if awakeChild() {
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gobatcher:", err)
		os.Exit(1)
	}
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	cells, left, err := cellsFor(o)
	if err != nil {
		return err
	}
	if o.dry {
		for _, c := range cells {
			fmt.Printf("%s\treps %d\test %s\n", c.id(), c.reps, c.estimate())
		}
		fmt.Printf("%d cells (left out: %d redundant, %d too slow), %d blocks planned, estimated %s (cells whose median does not settle get more: -settle-reps)\n",
			len(cells), left.redundant, left.slow,
			totalBlocks(cells, o.warmup), estimateTotal(cells, o.warmup).Round(time.Second))
		return nil
	}
	if o.awake {
		stop, err := startAwake()
		if err != nil {
			return err
		}
		defer stop()
	}
	if o.host != "" && o.hostWake {
		fmt.Fprintf(os.Stderr, "measuring wake-ups at GOMAXPROCS %d into %s\n", o.hostProcs, o.host)
		if err := runHostWake(o.host, o.hostProcs, o.hostScale, command()); err != nil {
			return err
		}
	} else if o.host != "" {
		fmt.Fprintf(os.Stderr, "measuring host timing at GOMAXPROCS %d into %s\n", o.hostProcs, o.host)
		if err := runHost(o.host, o.hostProcs, o.hostScale, command()); err != nil {
			return err
		}
	}
	if o.costs != "" {
		fmt.Fprintf(os.Stderr, "measuring the Go runtime's costs into %s\n", o.costs)
		if err := runCosts(o.costs, command()); err != nil {
			return err
		}
	}
	if o.afterIdle > 0 {
		runAfterIdle(os.Stdout, o.afterIdle)
	}
	if len(cells) == 0 {
		return nil
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("-cpuprofile: %v", err)
		}
		defer pprof.StopCPUProfile()
	}
	return runCells(o, cells, left)
}

// runCells measures the cells into o.out.
func runCells(o options, cells []cell, left leftOut) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	blocks, err := createCSV(o.out, "blocks.csv", blockColumns)
	if err != nil {
		return err
	}
	defer blocks.Close()
	flushes, err := createCSV(o.out, "flushes.csv", flushColumns)
	if err != nil {
		return err
	}
	defer flushes.Close()
	probes, err := createCSV(o.out, "probes.csv", probeColumns)
	if err != nil {
		return err
	}
	defer probes.Close()
	var items *csvFile
	if o.items {
		if items, err = createCSV(o.out, "items.csv", itemColumns); err != nil {
			return err
		}
		defer items.Close()
	}

	r := &runner{pool: batcherPool{}, warmup: o.warmup, seed: o.seed, blocks: blocks,
		flushes: flushes, items: items, gc: o.gc, detailReps: o.detailReps, traceDir: o.traceDir,
		probes: probes, probeEvery: o.probeEvery, probeD: o.probeD, procs: o.procs,
		idle: rand.New(rand.NewPCG(o.seed, idleStream)), settleReps: o.settleReps, extended: map[int]bool{}}
	setProcs(1) // calibrate the spin on one core, as undisturbed as the machine allows
	r.spinIters = calibrateSpin(o.flushD)
	if r.gc != "go" {
		disableGC()
	}
	info := runInfo{command: command(), cells: len(cells), left: left, spinIters: r.spinIters, awake: o.awake,
		start: time.Now(), load0: loadavg1(), cpu0: readCPUTimes(), proc0: processCPU()}
	fmt.Fprintf(os.Stderr, "%d cells (left out: %d redundant, %d too slow), %d blocks planned, estimated %s (cells whose median does not settle get more: -settle-reps); spin %d rounds = %s\n",
		len(cells), left.redundant, left.slow, totalBlocks(cells, o.warmup), estimateTotal(cells, o.warmup).Round(time.Second),
		r.spinIters, o.flushD)
	if err := r.runGrid(cells); err != nil {
		return err
	}
	info.end, info.load1, info.mismatches, info.extended = time.Now(), loadavg1(), r.mismatches, len(r.extended)
	info.proc = processCPU() - info.proc0
	info.steal, info.busy = readCPUTimes().shares(info.cpu0)
	return info.write(filepath.Join(o.out, "run.toml"))
}

func totalBlocks(cells []cell, warmup int) (n int) {
	for _, c := range cells {
		n += c.reps + warmup
	}
	return n
}

func estimateTotal(cells []cell, warmup int) (t time.Duration) {
	for _, c := range cells {
		t += time.Duration(c.reps+warmup) * c.estimate()
	}
	return t
}

// runInfo is DIR/run.toml: how and under what load the CSVs were measured.
type runInfo struct {
	command      string
	cells        int
	left         leftOut
	spinIters    int64
	start, end   time.Time
	load0, load1 float64
	cpu0         cpuTimes
	steal, busy  float64
	mismatches   int
	extended     int
	awake        bool
	// the process's CPU (getrusage) at the start and over the run: what a -cpuprofile's
	// samples are scaled to (the kernel delivers fewer SIGPROFs than asked for)
	proc0, proc time.Duration
}

func (i runInfo) write(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, `# written by validate/gobatcher: how blocks.csv and flushes.csv (and items.csv) were measured
command = %q
go = %q
cpus = %d
cpu = %q
started = %q
duration_s = %.0f
cells = %d
cells_left_out_redundant = %d # full grid: identical to a measured cell (see cells.go, fullGrid)
cells_left_out_slow = %d # full grid: estimated above -max-block per block
cells_extended = %d # given blocks beyond their planned ones until their median settled or -settle-reps (run.go, runGrid)
spin_rounds_per_flush = %d # calibrated on one idle core to take the flush's d
loadavg_1m = [%.2f, %.2f] # at start and end
steal_share = %.4f # hypervisor steal over the run, share of the machine's CPU (/proc/stat)
busy_share = %.4f # machine CPU not idle over the run, this process included
v2_reason_mismatches = %d # blocks where v2's reported triggers differ from batch-length inference
probe_settle_ms = %g # each CPU-availability probe's spinners ran this long before counting stalls (probe.go)
process_cpu_s = %.3f # user + system CPU of this process over the run (getrusage): a -cpuprofile's samples count less
awake = %t # -awake: an idle-priority spinner on every CPU, so no vCPU halted (awake.go)
`, i.command, runtime.Version(), runtime.NumCPU(), cpuModel(),
		i.start.UTC().Format("2006-01-02 15:04:05 UTC"), i.end.Sub(i.start).Seconds(), i.cells,
		i.left.redundant, i.left.slow, i.extended, i.spinIters, i.load0, i.load1, i.steal, i.busy, i.mismatches,
		float64(probeSettle)/1e6, i.proc.Seconds(), i.awake)
	return f.Close()
}
