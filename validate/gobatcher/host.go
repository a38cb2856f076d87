package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The host's timing constants: what a sleep or a timer of d really takes on this machine.
// go-batcher's worker waits on a time.Timer (v1.1.0 and v2.0.6 batcher.go, worker), and R1's
// flush is a time.Sleep, so these two distributions replace simbatch's one
// timer_overshoot_us constant.

// probe is one kind of wait measured repeatedly.
type probe struct {
	table string // TOML table the samples go to
	d     time.Duration
	n     int
	wait  func(time.Duration) time.Duration
	got   []float64 // actual durations, microseconds
}

var (
	sleepDs = []time.Duration{50 * time.Microsecond, 100 * time.Microsecond,
		500 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond}
	timerDs = []time.Duration{5 * time.Millisecond, 10 * time.Millisecond}
)

func sleepFor(d time.Duration) time.Duration {
	t := time.Now()
	time.Sleep(d)
	return time.Since(t)
}

// timerFor is the worker's path: arm a timer, block on its channel until it fires.
func timerFor(d time.Duration) time.Duration {
	t := time.Now()
	tm := time.NewTimer(d)
	<-tm.C
	return time.Since(t)
}

// afterFuncFor is when the runtime starts the timer's function, without the wake-up of a
// goroutine blocked on a channel.
func afterFuncFor(d time.Duration) time.Duration {
	fired := make(chan time.Duration, 1)
	t := time.Now()
	time.AfterFunc(d, func() { fired <- time.Since(t) })
	return <-fired
}

func hostProbes(scale float64) []*probe {
	n := func(base int) int { return max(20, int(float64(base)*scale)) }
	var ps []*probe
	for _, d := range sleepDs {
		base := 2000
		if d > time.Millisecond {
			base = 400
		}
		ps = append(ps, &probe{table: "sleep_us", d: d, n: n(base), wait: sleepFor})
	}
	for _, d := range timerDs {
		ps = append(ps, &probe{table: "timer_us", d: d, n: n(400), wait: timerFor})
		ps = append(ps, &probe{table: "afterfunc_us", d: d, n: n(400), wait: afterFuncFor})
	}
	return ps
}

// measureHost runs every probe round-robin, so a neighbour's burst touches all of them alike.
func measureHost(ps []*probe) {
	for i := 0; ; i++ {
		ran := false
		for _, p := range ps {
			if i < p.n {
				p.got = append(p.got, float64(p.wait(p.d))/1e3)
				ran = true
			}
		}
		if !ran {
			return
		}
		if i%200 == 0 {
			fmt.Fprintf(os.Stderr, "host timing: round %d\n", i)
		}
	}
}

// hostQuantiles is the grid every list is given at: min, 0.01 .. 0.99, max.
func hostQuantiles() []float64 {
	q := make([]float64, 101)
	for i := range q {
		q[i] = float64(i) / 100
	}
	return q
}

// hostProvenance is what the file says about where and how it was measured.
type hostProvenance struct {
	command      string
	procs        int
	start, end   time.Time
	load0, load1 float64
	steal, busy  float64
}

// writeHostTOML writes the models/ file. Its header documents the shape.
// writeList writes one measured list at the quantiles qs, with a comment.
func writeList(w io.Writer, name string, samples []float64, qs []float64) {
	s := slices.Sorted(slices.Values(samples))
	vals := make([]float64, len(qs))
	for i, q := range qs {
		vals[i] = quantile(s, q)
	}
	fmt.Fprintf(w, "# %s: p50 %.1f, p90 %.1f, p99 %.1f, max %.1f us\n", name, quantile(s, 0.5),
		quantile(s, 0.9), quantile(s, 0.99), s[len(s)-1])
	fmt.Fprintf(w, "%s = [%s]\n", name, joinFloats(vals, "%.1f"))
}

// wakeDoc is the header's description of wake_us (spliceWake puts it in older files).
const wakeDoc = "#   wake_us              an idle processor's thread, woken by wakep, running a goroutine\n" +
	"#                        it steals from a busy processor's local run queue (no back-off)"

func writeHostTOML(w io.Writer, ps []*probe, wake, backoff []float64, pv hostProvenance) {
	fmt.Fprintf(w, `# Host timing constants (Go sleeps and timers) measured by validate/gobatcher.
# Do not edit by hand: re-run the command in [provenance] on the machine to model.
#
# Shape. Every list is a measured distribution of the ACTUAL duration in microseconds of a
# wait of requested d (the table key, in microseconds), given at the quantiles in
# host.quantiles: index 0 is the minimum, index 100 the maximum, index i the quantile i/100
# by the rule sorted[floor((n-1)p)]. Lateness = actual - d. To resample: draw u ~ U(0,1) and
# interpolate the list at 100u.
#   [host.sleep_us]      time.Sleep(d): wall time from before the call to after it
#   [host.timer_us]      time.NewTimer(d) then a receive on its channel: what go-batcher's
#                        worker sees (its timeout is a time.Timer in a select)
#   [host.afterfunc_us]  time.AfterFunc(d, f): arm to f starting (timer expiry alone,
#                        without waking a blocked goroutine)
%s
#   backoff_us           the runtime's usleep(3) (runqgrab's back-off before stealing
#                        another processor's runnext): a 3 us nanosleep
#   [host.samples]       samples behind each list, per table and key
# Measured in an otherwise idle Go process, probes interleaved round-robin. Why sleeps under
# 1 ms last over 1 ms here: an idle Go process waits for its next timer in epoll_wait, whose
# timeout is whole milliseconds, and Go's runtime/netpoll_epoll.go (netpoll) turns any delay
# under 1 ms into 1 ms. The flush durations the harness records in flushes.csv
# (end_us - start_us) show the same sleeps inside a running batcher.

[provenance]
go = %q
gomaxprocs = %d
cpus = %d
cpu = %q
measured_on = %q
duration_s = %.1f
command = %q
loadavg_1m = [%.2f, %.2f] # at start and end
steal_share = %.4f # of the machine's CPU, hypervisor steal, over the measurement (/proc/stat)
busy_share = %.4f # of the machine's CPU, not idle, this process included
`, wakeDoc, runtime.Version(), pv.procs, runtime.NumCPU(), cpuModel(), pv.start.UTC().Format("2006-01-02 15:04 UTC"),
		pv.end.Sub(pv.start).Seconds(), pv.command, pv.load0, pv.load1, pv.steal, pv.busy)

	qs := hostQuantiles()
	fmt.Fprintf(w, "\n[host]\nquantiles = [%s]\n", joinFloats(qs, "%.2f"))
	if len(wake) > 0 {
		writeList(w, "wake_us", wake, qs)
		writeList(w, "backoff_us", backoff, qs)
	}
	for _, table := range []string{"sleep_us", "timer_us", "afterfunc_us"} {
		fmt.Fprintf(w, "\n[host.%s]\n", table)
		for _, p := range ps {
			if p.table == table {
				writeDistribution(w, p, qs)
			}
		}
	}
	fmt.Fprintf(w, "\n[host.samples]\n")
	for _, table := range []string{"sleep_us", "timer_us", "afterfunc_us"} {
		var kv []string
		for _, p := range ps {
			if p.table == table {
				kv = append(kv, fmt.Sprintf("%d = %d", p.d.Microseconds(), len(p.got)))
			}
		}
		fmt.Fprintf(w, "%s = {%s}\n", table, strings.Join(kv, ", "))
	}
	if len(wake) > 0 {
		fmt.Fprintf(w, "wake_us = {all = %d}\nbackoff_us = {all = %d}\n", len(wake), len(backoff))
	}
}

func writeDistribution(w io.Writer, p *probe, qs []float64) {
	s := slices.Sorted(slices.Values(p.got))
	vals := make([]float64, len(qs))
	for i, q := range qs {
		vals[i] = quantile(s, q)
	}
	d := float64(p.d.Microseconds())
	fmt.Fprintf(w, "# d = %d us: late by p50 %.1f, p90 %.1f, p99 %.1f, max %.1f us\n",
		p.d.Microseconds(), quantile(s, 0.5)-d, quantile(s, 0.9)-d, quantile(s, 0.99)-d, s[len(s)-1]-d)
	fmt.Fprintf(w, "%d = [%s]\n", p.d.Microseconds(), joinFloats(vals, "%.1f"))
}

func joinFloats(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}

// wakeSamples takes n wake-up and back-off samples at GOMAXPROCS procs from CPU probes, the
// grid's own probe between blocks: each probe's samples follow its busy spin on every
// processor. Taken right after the sleep and timer probes instead, with the process idle for
// most of the last half minute, the wake-ups came out bimodal (half near 30 us, half near 75;
// on 2026-11-27), against ~30 us after a busy spell, as in the grid's probes.
// A sample whose goroutine did not run within 5 ms is dropped (wakeLatency); if half of them
// are, it stops and says so.
func wakeSamples(procs, n int) (wake, backoff []float64, err error) {
	for probes := 0; len(wake) < n; probes++ {
		if probes > 2*n/wakesPerProbe+1 {
			return nil, nil, fmt.Errorf("wake-ups: %d of %d samples after %d probes (the woken processor's goroutine did not run within 5 ms)", len(wake), n, probes)
		}
		res := probeCPU(procs, 10*time.Millisecond) // the grid's -probe default
		wake = append(wake, res.wake...)
		backoff = append(backoff, res.backoff...)
	}
	return wake, backoff, nil
}

// runHostWake re-measures the wake-up and back-off lists of the host file at path, keeping
// its sleep and timer tables: a file's timer tables describe the host on the day the
// harness's runs were measured beside it, and re-measuring them on another day judges those
// runs against another day's host.
func runHostWake(path string, procs int, scale float64, command string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	setProcs(procs)
	wake, backoff, err := wakeSamples(procs, max(20, int(400*scale)))
	if err != nil {
		return err
	}
	text, err := spliceWake(string(old), wake, backoff,
		fmt.Sprintf("wake_measured_on = %q # wake_us and backoff_us, by: %s",
			time.Now().UTC().Format("2006-01-02 15:04 UTC"), command))
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// spliceWake returns the host file text with its wake_us and backoff_us lists (and their
// summary comments, sample counts and the list's description) replaced by ones of wake and
// backoff, and stamp as its [provenance] wake_measured_on line.
func spliceWake(text string, wake, backoff []float64, stamp string) (string, error) {
	lines := strings.Split(text, "\n")
	var list bytes.Buffer
	qs := hostQuantiles()
	writeList(&list, "wake_us", wake, qs)
	writeList(&list, "backoff_us", backoff, qs)
	fresh := strings.Split(strings.TrimSuffix(list.String(), "\n"), "\n")
	doc := strings.Split(wakeDoc, "\n")
	replace := map[string]string{
		"# wake_us: ": fresh[0], "wake_us = [": fresh[1],
		"# backoff_us: ": fresh[2], "backoff_us = [": fresh[3],
		"wake_us = {all":    fmt.Sprintf("wake_us = {all = %d}", len(wake)),
		"backoff_us = {all": fmt.Sprintf("backoff_us = {all = %d}", len(backoff)),
		"#   wake_us ":      doc[0],
		"#                        readied on a busy processor, less backoff_us's median": doc[1],
	}
	out := make([]string, 0, len(lines)+1)
	found := map[string]bool{}
	for _, line := range lines {
		if strings.HasPrefix(line, "wake_measured_on = ") {
			continue // an earlier stamp
		}
		for prefix, with := range replace {
			if strings.HasPrefix(line, prefix) {
				found[prefix] = true
				line = with
				break
			}
		}
		out = append(out, line)
		if strings.HasPrefix(line, "measured_on = ") {
			out = append(out, stamp)
		}
	}
	for _, prefix := range []string{"wake_us = [", "backoff_us = ["} {
		if !found[prefix] {
			return "", fmt.Errorf("no %s...] list to replace: measure the file whole with -host", prefix)
		}
	}
	return strings.Join(out, "\n"), nil
}

// runHost measures the host constants at GOMAXPROCS procs and writes them to path.
func runHost(path string, procs int, scale float64, command string) error {
	setProcs(procs)
	ps := hostProbes(scale)
	pv := hostProvenance{command: command, procs: procs, start: time.Now(), load0: loadavg1()}
	cpu0 := readCPUTimes()
	measureHost(ps)
	var wake, backoff []float64
	if procs >= 2 {
		var err error
		if wake, backoff, err = wakeSamples(procs, max(20, int(400*scale))); err != nil {
			return err
		}
	}
	pv.end, pv.load1 = time.Now(), loadavg1()
	pv.steal, pv.busy = readCPUTimes().shares(cpu0)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	writeHostTOML(f, ps, wake, backoff, pv)
	return f.Close()
}
