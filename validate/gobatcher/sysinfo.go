package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The machine is a shared VM: every block records what else was going on, so runs disturbed
// by neighbours (load) or by the hypervisor (steal) can be told apart afterwards.

// loadavg1 is the 1-minute load average from /proc/loadavg, or -1 if unreadable.
func loadavg1() float64 {
	l, _ := loadavg()
	return l
}

// loadavg reads /proc/loadavg: the 1-minute load average and the number of runnable threads
// on the machine right now (this one included), or -1s if unreadable.
func loadavg() (load1 float64, running int) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1, -1
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return -1, -1
	}
	load1, err = strconv.ParseFloat(f[0], 64)
	if err != nil {
		load1 = -1
	}
	r, _, _ := strings.Cut(f[3], "/")
	running, err = strconv.Atoi(r)
	if err != nil {
		running = -1
	}
	return load1, running
}

// cpuTimes is the aggregate "cpu" line of /proc/stat, in clock ticks (USER_HZ, 10 ms).
type cpuTimes struct{ total, idle, steal int64 }

func readCPUTimes() cpuTimes {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return cpuTimes{}
	}
	// cpu user nice system idle iowait irq softirq steal guest guest_nice (proc(5)); guest
	// time is already counted in user, so the total stops at steal.
	fields := strings.Fields(sc.Text())
	var v [8]int64
	for i := 0; i < 8 && i+1 < len(fields); i++ {
		v[i], _ = strconv.ParseInt(fields[i+1], 10, 64)
	}
	var t cpuTimes
	for _, x := range v {
		t.total += x
	}
	t.idle = v[3] + v[4]
	t.steal = v[7]
	return t
}

// shares of the machine's CPU between two readings: stolen by the hypervisor, and busy
// (everything not idle, this process included). -1 when no tick elapsed.
func (t cpuTimes) shares(before cpuTimes) (steal, busy float64) {
	d := t.total - before.total
	if d <= 0 {
		return -1, -1
	}
	return float64(t.steal-before.steal) / float64(d),
		float64(d-(t.idle-before.idle)) / float64(d)
}

// processCPU is this process's user + system CPU time so far.
func processCPU() time.Duration {
	ru := selfRusage()
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// minorFaults is the process's minor page faults so far (getrusage ru_minflt): pages the
// kernel mapped on first touch, such as fresh goroutine stacks.
func minorFaults() uint64 { return uint64(selfRusage().Minflt) }

// selfRusage is getrusage(RUSAGE_SELF), all zero if the call fails.
func selfRusage() syscall.Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return syscall.Rusage{}
	}
	return ru
}

// cpuModel is the first "model name" of /proc/cpuinfo, with its "cpu family" and "model"
// numbers: VMs sold as the same kind ("AMD EPYC", 2 vCPUs) came on two CPU generations
// (families 25 and 26) whose Go runtime costs differ by up to 1.8x (data/README.md, "The
// host's CPU against the costs' machine"), so the name alone does not say which ran.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	return cpuModelFrom(string(b))
}

// cpuModelFrom is cpuModel on the text of /proc/cpuinfo: its first processor's block.
func cpuModelFrom(cpuinfo string) string {
	fields := map[string]string{}
	for _, line := range strings.Split(cpuinfo, "\n") {
		if strings.TrimSpace(line) == "" {
			if len(fields) > 0 {
				break // the first processor's block only
			}
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			if k = strings.TrimSpace(k); fields[k] == "" {
				fields[k] = strings.TrimSpace(v)
			}
		}
	}
	name := fields["model name"]
	if name == "" {
		return "unknown"
	}
	if fields["cpu family"] != "" && fields["model"] != "" {
		name += fmt.Sprintf(" (family %s, model %s)", fields["cpu family"], fields["model"])
	}
	return name
}

// threadTimes is each of the process's threads' time on a CPU and time runnable but off a
// CPU so far (the first two fields of /proc/self/task/TID/schedstat), by thread id.
type threadTimes map[string][2]int64

func readThreadTimes() threadTimes {
	out := threadTimes{}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return out
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		run, err1 := strconv.ParseInt(f[0], 10, 64)
		wait, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 == nil && err2 == nil {
			out[t.Name()] = [2]int64{run, wait}
		}
	}
	return out
}

// runqWaitSince is the time the process's working threads spent runnable but off a CPU
// between before and after: summed over the threads that ran at least minRun in between.
// Across a block it is what the machine's scheduler took from the threads that run the
// client's processors -- other processes, and those threads packed onto one CPU -- leaving
// out the runtime's background thread (sysmon), which wakes for microseconds and, while both
// CPUs are busy, waits for one without holding anything up.
func runqWaitSince(before, after threadTimes, minRun time.Duration) time.Duration {
	var sum int64
	for tid, now := range after {
		prev := before[tid] // a thread started in between: from zero
		if now[0]-prev[0] >= int64(minRun) {
			sum += now[1] - prev[1]
		}
	}
	return time.Duration(sum)
}

// splitWaits is the same wait split by who waited: that of the thread named waker (the one
// that ran the block's driver at its start, and so woke the idle processor's thread), and the
// longest of any other thread that ran at least minRun in between (the woken one). Unlike
// runqWaitSince no thread is left out for running less than 200 us: a short block's threads
// run for less, and when the kernel puts the woken thread on the waker's CPU one of the two
// waits while the other runs (probe.go). minRun only leaves out the runtime's sysmon.
func splitWaits(before, after threadTimes, waker string, minRun time.Duration) (wakerWait, wokenWait time.Duration) {
	for tid, now := range after {
		prev := before[tid]
		wait := time.Duration(now[1] - prev[1])
		if tid == waker {
			wakerWait = wait
		} else if now[0]-prev[0] >= int64(minRun) && wait > wokenWait {
			wokenWait = wait
		}
	}
	return wakerWait, wokenWait
}
