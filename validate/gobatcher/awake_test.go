package main

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary serve as its own -awake spinner, as the harness does.
func TestMain(m *testing.M) {
	if awakeChild() {
		return
	}
	os.Exit(m.Run())
}

// The spinners run one per CPU the process may use, each pinned to its CPU at idle priority,
// and are gone once stopped.
func TestAwakeSpinnersArePinnedAtIdlePriority(t *testing.T) {
	before := spinnerPIDs(t)
	stop, err := startAwake()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids = newPIDs(spinnerPIDs(t), before)
		if len(pids) == len(usable(t)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(pids) != len(usable(t)) {
		stop()
		t.Fatalf("want a spinner per CPU (%d); found %d", len(usable(t)), len(pids))
	}
	seen := map[string]bool{}
	for _, pid := range pids {
		// the child sets its policy and affinity right after it starts
		var policy, cpus string
		for time.Now().Before(deadline) {
			policy, cpus = threadPolicy(t, pid), spinnerCPUs(t, pid)
			if policy == strconv.Itoa(schedIdle) && !strings.ContainsAny(cpus, ",-") {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if policy != strconv.Itoa(schedIdle) {
			t.Errorf("spinner %d: scheduling policy %s, want SCHED_IDLE (%d)", pid, policy, schedIdle)
		}
		if strings.ContainsAny(cpus, ",-") || seen[cpus] {
			t.Errorf("spinner %d: allowed CPUs %q, want one CPU of its own", pid, cpus)
		}
		seen[cpus] = true
	}
	stop()
	if left := newPIDs(spinnerPIDs(t), before); len(left) != 0 {
		t.Errorf("spinners still running after stop: %v", left)
	}
}

// spinnerPIDs lists the processes whose environment holds awakeEnv.
func spinnerPIDs(t *testing.T) map[int]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	out := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && strings.Contains(string(env), awakeEnv+"=") {
			if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil &&
				!strings.Contains(string(stat), ") Z ") {
				out[pid] = true
			}
		}
	}
	return out
}

func newPIDs(now, before map[int]bool) []int {
	var out []int
	for pid := range now {
		if !before[pid] {
			out = append(out, pid)
		}
	}
	return out
}

// spinningThread is /proc/PID/task/TID of the process's thread with the most CPU time (its
// spinner), or "" if the process is gone.
func spinningThread(pid int) string {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	best, out := -1, ""
	for _, task := range tasks {
		f := statFields(dir + task.Name())
		if len(f) < 39 {
			continue
		}
		if utime, _ := strconv.Atoi(f[11]); utime > best { // field 14
			best, out = utime, dir+task.Name()
		}
	}
	return out
}

// statFields are the fields of a task's stat file from field 3 (state) on.
func statFields(task string) []string {
	b, err := os.ReadFile(task + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
}

// threadPolicy is the scheduling policy of the process's spinning thread (stat field 41).
func threadPolicy(t *testing.T, pid int) string {
	t.Helper()
	if f := statFields(spinningThread(pid)); len(f) >= 39 {
		return f[38]
	}
	return "gone"
}

// spinnerCPUs is Cpus_allowed_list of the process's spinning thread.
func spinnerCPUs(t *testing.T, pid int) string {
	t.Helper()
	return cpusAllowed(spinningThread(pid) + "/status")
}

// cpusAllowed is the Cpus_allowed_list of a task's status file, "gone" if unreadable.
func cpusAllowed(status string) string {
	st, err := os.ReadFile(status)
	if err != nil {
		return "gone"
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// usable lists the CPUs the process may run on.
func usable(t *testing.T) []int {
	t.Helper()
	cpus, err := allowedCPUs()
	if err != nil || len(cpus) == 0 {
		t.Skipf("no CPU mask: %v", err)
	}
	return cpus
}

// The pinned wake-up probe times every trial of every idle length, and gives the calling
// thread back the CPUs it had.
func TestPinnedWakeupsTimeEveryTrial(t *testing.T) {
	if len(usable(t)) < 2 {
		t.Skip("one CPU: nothing to wake on another")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadCPUs(t)
	lat, err := pinnedWakeups(3)
	if err != nil {
		t.Skipf("cannot pin threads here: %v", err)
	}
	if len(lat) != len(wakeIdles) {
		t.Fatalf("%d lists for %d idle lengths", len(lat), len(wakeIdles))
	}
	for i, l := range lat {
		if len(l) != 3 {
			t.Errorf("idle %s: %d trials, want 3", wakeIdles[i], len(l))
		}
		for _, us := range l {
			if !(us > 0 && us < 1e6) {
				t.Errorf("idle %s: wake-up of %g us", wakeIdles[i], us)
			}
		}
	}
	if after := threadCPUs(t); after != before {
		t.Errorf("the caller's thread may run on %q after the probe, %q before", after, before)
	}
}

// threadCPUs is the calling thread's Cpus_allowed_list.
func threadCPUs(t *testing.T) string {
	t.Helper()
	cpus := cpusAllowed("/proc/thread-self/status")
	if cpus == "gone" {
		t.Skip("no /proc/thread-self")
	}
	return cpus
}
