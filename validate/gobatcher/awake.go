package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// -awake: keep every CPU of the machine from going idle for the whole run, with one process
// per CPU pinned to it that spins at the kernel's idle priority (SCHED_IDLE). A thread of any
// other policy preempts such a spinner as soon as it is runnable, so the harness's threads
// still get a CPU at once; what changes is that no vCPU ever halts. On a VM a halted vCPU is
// the hypervisor's to run again: a thread pinned to the other CPU, asleep in a futex, took a
// median 23-59 us to wake after the process idled 0.2-20 ms, and 15-20 us with the spinners
// (-after-idle's second table, afteridle.go). -awake takes that out of a run, to tell the
// hypervisor's part in a result from the Go runtime's (data/README.md, "Keeping the vCPUs
// awake").
//
// The spinners are this program run again with awakeEnv set to the CPU's number; they are
// killed when the run ends, and die with the harness if it is killed (PR_SET_PDEATHSIG).

const awakeEnv = "SIMBATCH_GOBATCHER_AWAKE_CPU"

// awakeReady is what a spinner prints once it is pinned at idle priority.
const awakeReady = "spinning"

// schedIdle is SCHED_IDLE in <linux/sched.h>.
const schedIdle = 5

// awakeChild spins forever at idle priority on the CPU awakeEnv names, if it names one;
// it returns false (and does nothing) in the harness itself.
func awakeChild() bool {
	v, ok := os.LookupEnv(awakeEnv)
	if !ok {
		return false
	}
	cpu, err := strconv.Atoi(v)
	if err != nil || cpu < 0 {
		fmt.Fprintf(os.Stderr, "gobatcher: %s must be a CPU number; got %q\n", awakeEnv, v)
		os.Exit(2)
	}
	runtime.GOMAXPROCS(1)
	runtime.LockOSThread()
	if err := pinIdle(cpu); err != nil {
		fmt.Printf("%v\n", err)
		os.Exit(2)
	}
	fmt.Println(awakeReady) // the harness waits for this line
	for {
	}
}

// pinIdle pins the calling thread to cpu and gives it the SCHED_IDLE policy.
func pinIdle(cpu int) error {
	if _, err := pin(cpu); err != nil {
		return err
	}
	var param struct{ priority int32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, schedIdle,
		uintptr(unsafe.Pointer(&param))); e != 0 {
		return fmt.Errorf("sched_setscheduler(SCHED_IDLE): %v", e)
	}
	return nil
}

// cpuMask is a thread's CPU affinity (1024 CPUs).
type cpuMask [16]uint64

// pin lets the calling thread run on cpu only; restore gives it back the CPUs it had.
func pin(cpu int) (restore func(), err error) {
	var old, one cpuMask
	if cpu < 0 || cpu >= len(one)*64 {
		return nil, fmt.Errorf("CPU %d outside the affinity mask", cpu)
	}
	if err := getAffinity(&old); err != nil {
		return nil, err
	}
	one[cpu/64] = 1 << (uint(cpu) % 64)
	if err := setAffinity(&one); err != nil {
		return nil, err
	}
	return func() { _ = setAffinity(&old) }, nil
}

// allowedCPUs lists the CPUs the calling thread may run on (the process's, as started).
func allowedCPUs() ([]int, error) {
	var mask cpuMask
	if err := getAffinity(&mask); err != nil {
		return nil, err
	}
	var out []int
	for i, word := range mask {
		for b := 0; b < 64; b++ {
			if word&(1<<uint(b)) != 0 {
				out = append(out, i*64+b)
			}
		}
	}
	return out, nil
}

// getAffinity and setAffinity read and set the calling thread's CPU mask.
func getAffinity(mask *cpuMask) error {
	return affinity(syscall.SYS_SCHED_GETAFFINITY, "sched_getaffinity", mask)
}

func setAffinity(mask *cpuMask) error {
	return affinity(syscall.SYS_SCHED_SETAFFINITY, "sched_setaffinity", mask)
}

func affinity(call uintptr, name string, mask *cpuMask) error {
	if _, _, e := syscall.RawSyscall(call, 0, unsafe.Sizeof(*mask),
		uintptr(unsafe.Pointer(&mask[0]))); e != 0 {
		return fmt.Errorf("%s: %v", name, e)
	}
	return nil
}

// startAwake starts one idle-priority spinner per CPU the process may use and waits until
// each says it is pinned at idle priority (or why not); the returned function stops them.
func startAwake() (stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("-awake: %v", err)
	}
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, fmt.Errorf("-awake: %v", err)
	}
	var procs []*os.Process
	stop = func() {
		for _, p := range procs {
			_ = p.Kill()
			_, _ = p.Wait()
		}
	}
	for _, cpu := range cpus {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", awakeEnv, cpu))
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			stop()
			return nil, fmt.Errorf("-awake: starting the spinner for CPU %d: %v", cpu, err)
		}
		procs = append(procs, cmd.Process)
		line := make(chan string, 1)
		go func() {
			text, _ := bufio.NewReader(out).ReadString('\n')
			line <- strings.TrimSpace(text)
		}()
		select {
		case text := <-line:
			if text != awakeReady {
				stop()
				return nil, fmt.Errorf("-awake: the spinner for CPU %d: %s", cpu, text)
			}
		case <-time.After(10 * time.Second):
			stop()
			return nil, fmt.Errorf("-awake: the spinner for CPU %d did not start within 10 s", cpu)
		}
	}
	return stop, nil
}
