package main

import (
	"strings"
	"testing"
)

func TestSpliceWakeKeepsTheTimerTables(t *testing.T) {
	old := strings.Join([]string{
		"[provenance]",
		`measured_on = "2026-11-23 12:41 UTC"`,
		`wake_measured_on = "2026-11-24 00:00 UTC" # an earlier splice`,
		"#   wake_us              an idle processor's thread, woken by wakep, running the goroutine",
		"#                        readied on a busy processor, less backoff_us's median",
		"[host]",
		"# wake_us: p50 27.1, p90 55.0, p99 183.8, max 3428.0 us",
		"wake_us = [0.0, 0.0]",
		"# backoff_us: p50 79.2, p90 114.9, p99 179.8, max 233.2 us",
		"backoff_us = [31.6, 62.9]",
		"[host.sleep_us]",
		"500 = [1100.0, 1200.0]",
		"[host.samples]",
		"wake_us = {all = 400}",
		"backoff_us = {all = 400}",
		"",
	}, "\n")
	got, err := spliceWake(old, []float64{20, 30, 40}, []float64{70, 80, 90}, `wake_measured_on = "now"`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"500 = [1100.0, 1200.0]", // the timer tables stay
		`measured_on = "2026-11-23 12:41 UTC"` + "\n" + `wake_measured_on = "now"`,
		"# wake_us: p50 30.0", "wake_us = [20.0, ", "# backoff_us: p50 80.0", "backoff_us = [70.0, ",
		"wake_us = {all = 3}", "backoff_us = {all = 3}", "(no back-off)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("spliced file lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "wake_measured_on") != 1 || strings.Contains(got, "less backoff_us") ||
		strings.Contains(got, "wake_us = [0.0, 0.0]") {
		t.Errorf("old wake-up lines left in:\n%s", got)
	}
	if _, err := spliceWake("[host]\nquantiles = [0.0]\n", []float64{1}, []float64{1}, "x"); err == nil {
		t.Error("a file without wake-up lists spliced without an error")
	}
}
