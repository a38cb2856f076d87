package main

import (
	"strings"
	"testing"
	"time"
)

func TestSplitWaitsTellsTheWakerFromTheWokenThread(t *testing.T) {
	before := threadTimes{"10": {1000, 500}, "11": {0, 0}, "12": {0, 0}}
	after := threadTimes{
		"10": {3000, 80500},  // the waker: ran 2 us, waited 80 us
		"11": {150000, 9000}, // the woken thread: ran 150 us, waited 9 us
		"12": {5000, 40000},  // sysmon: ran 5 us, its wait is left out
		"13": {30000, 12000}, // a thread started in between: counted from zero
	}
	waker, woken := splitWaits(before, after, "10", 20*time.Microsecond)
	if waker != 80*time.Microsecond {
		t.Errorf("waker wait %v, want 80us (counted however little it ran)", waker)
	}
	if woken != 12*time.Microsecond {
		t.Errorf("woken wait %v, want the longest other thread's, 12us", woken)
	}
	if w, _ := splitWaits(before, after, "99", time.Microsecond); w != 0 {
		t.Errorf("a waker that is not among the threads waits %v, want 0", w)
	}
}

func TestCpuModelNamesTheFirstProcessorsFamilyAndModel(t *testing.T) {
	// two VMs sold as "AMD EPYC" came on CPU families 25 and 26 (data/README.md, "The
	// host's CPU against the costs' machine"): the run files must tell them apart
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n" +
		"model name\t: AMD EPYC\nstepping\t: 1\n\nprocessor\t: 1\ncpu family\t: 26\n" +
		"model\t\t: 2\nmodel name\t: other\n"
	if got, want := cpuModelFrom(info), "AMD EPYC (family 25, model 1)"; got != want {
		t.Errorf("cpuModelFrom = %q, want %q", got, want)
	}
	if got := cpuModelFrom("processor\t: 0\nmodel name\t: ARM thing\n"); got != "ARM thing" {
		t.Errorf("without family and model numbers: %q, want the name alone", got)
	}
	if got := cpuModelFrom(""); got != "unknown" {
		t.Errorf("empty cpuinfo: %q, want unknown", got)
	}
}

func TestGcFlagNamesEveryMode(t *testing.T) {
	for _, mode := range []string{"between", "block", "release", "go"} {
		o := options{gc: mode, procs: []int{1, 2}, grid: "small"}
		if err := o.validate(); err != nil && strings.Contains(err.Error(), "-gc") {
			t.Errorf("-gc %s rejected: %v", mode, err)
		}
	}
	err := (options{gc: "often"}).validate()
	if err == nil || !strings.Contains(err.Error(), `"often"`) {
		t.Errorf("-gc often: got %v, want an error naming the value", err)
	}
}
