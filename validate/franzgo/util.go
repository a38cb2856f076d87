package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var nan = math.NaN()

// columns are validate/kafka_harness.py's COLUMNS, in its order.
var columns = []string{"msg", "partition", "publish_s", "produce_s", "ack_s", "consume_s",
	"latency_s", "publish_late_s", "stall_s", "steal_share"}

func writeCSV(path string, rows []row, stealShare float64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, strings.Join(columns, ","))
	num := func(v float64) string {
		if v != v {
			return ""
		}
		return strconv.FormatFloat(v, 'f', 6, 64)
	}
	for i, r := range rows {
		fmt.Fprintf(w, "%d,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", i, num(r.partition), num(r.publish),
			num(r.produce), num(r.ack), num(r.consume), num(r.consume-r.publish),
			num(r.publishLate), num(r.stall), num(stealShare))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func jsonNum(v float64) any {
	if v != v {
		return nil
	}
	return v
}

func numCPU() int { return runtime.NumCPU() }

// stealSeconds is the CPU time the hypervisor took from this VM so far (/proc/stat `steal`,
// all CPUs, USER_HZ = 100 on Linux), NaN where the kernel does not report it.
func stealSeconds() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nan
	}
	fields := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	if len(fields) < 9 {
		return nan
	}
	v, err := strconv.ParseFloat(fields[8], 64)
	if err != nil {
		return nan
	}
	return v / 100
}

// stallMonitor wakes every 1 ms and records wake-ups later than 2 ms: the process (or the
// VM) was descheduled, which delays the consumer and promise goroutines too. It plays the
// part of kafka_harness.py's delivery-report poller stalls (column stall_s).
type stallMonitor struct {
	now    func() float64
	mu     sync.Mutex
	stalls [][2]float64 // (end, length)
}

const stallMinS = 0.002

func newStallMonitor(now func() float64) *stallMonitor { return &stallMonitor{now: now} }

func (m *stallMonitor) run(ctx context.Context) {
	last := m.now()
	for ctx.Err() == nil {
		time.Sleep(time.Millisecond)
		t := m.now()
		if t-last > stallMinS {
			m.mu.Lock()
			m.stalls = append(m.stalls, [2]float64{t, t - last})
			m.mu.Unlock()
		}
		last = t
	}
}

// maxOverlap is the longest stall that overlapped [from, to] (to = NaN: still in flight).
func (m *stallMonitor) maxOverlap(from, to float64) float64 {
	if to != to {
		to = math.Inf(1)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := 0.0
	for _, s := range m.stalls {
		if from <= s[0] && to >= s[0]-s[1] && s[1] > out {
			out = s[1]
		}
	}
	return out
}

// defaultPartition is the partition franz-go's default partitioner
// (UniformBytesPartitioner(64 KiB, adaptive, keys, nil), config.go defaultCfg) picks for a
// keyed record: PartitionByBackup returns the key hash before it looks at the backlog.
func defaultPartition(tp kgo.TopicPartitioner, key []byte, n int) int {
	return tp.(kgo.TopicBackupPartitioner).PartitionByBackup(&kgo.Record{Key: key}, n, nil)
}

// warmupKeys returns, for each partition, a key that the default partitioner sends there.
func warmupKeys(topic string, n int) []string {
	tp := kgo.UniformBytesPartitioner(64<<10, true, true, nil).ForTopic(topic)
	keys := make([]string, n)
	found := 0
	for j := 0; found < n; j++ {
		k := fmt.Sprintf("warmup-%d", j)
		if p := defaultPartition(tp, []byte(k), n); keys[p] == "" {
			keys[p] = k
			found++
		}
	}
	return keys
}
