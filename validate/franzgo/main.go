// Command franzgo measures publish-to-consume latency through the REAL franz-go client
// (github.com/twmb/franz-go v1.20.6, the version teranode pins) on a real Kafka broker, with
// teranode's outer batcher in front of it (outer.go), on the R2 workload: n messages of
// 256 bytes, one every `interval`, keys "k-<label>-<i>", to a topic of P partitions created
// first, read by a franz-go consumer assigned to every partition before the first message.
// It is the Go twin of validate/kafka_harness.py (confluent-kafka / librdkafka) and writes the
// same per-message CSV columns.
//
//	go run . -broker 127.0.0.1:9092 -partitions 32 -linger 1s -out run.csv
//	go run . -broker ... -linger 10ms -outer-linger 100ms -outer-timer deadline
//	go run . partitions -out ../partitioners/franzgo.csv        (partitioner reference vectors)
//
// Producer options are teranode's (util/kafka/kafka_producer_async.go): ProducerLinger =
// flush_frequency (-linger), ProducerBatchMaxBytes = 1 MiB, MaxBufferedRecords =
// flush_messages (-max-buffered, 10000 in the regression test), DisableIdempotentWrite (so
// MaxProduceRequestsInflightPerBroker applies, default 1); everything else is franz-go's
// default (acks all, UniformBytesPartitioner(64 KiB, adaptive, keys) -> murmur2 for keys).
//
// With no broker listening at -broker it exits with status 2 and one line on stderr within
// -connect-timeout (5 s).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type config struct {
	broker         string
	partitions     int
	replication    int
	linger         time.Duration
	outerLinger    time.Duration // < 0: no outer batcher
	outerTimer     string
	outerMaxBatch  int
	n              int
	interval       time.Duration
	messageBytes   int
	label          string
	maxBuffered    int
	maxInflight    int
	batchMaxBytes  int
	compression    string
	warmup         time.Duration
	connectTimeout time.Duration
	stallTimeout   time.Duration
	out            string
}

type harnessError struct{ msg string }

func (e *harnessError) Error() string { return e.msg }

func fail(format string, a ...any) error { return &harnessError{fmt.Sprintf(format, a...)} }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "partitions" {
		if err := partitionsMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "franzgo partitions: error:", err)
			os.Exit(2)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "franzgo: error:", err)
		os.Exit(2)
	}
	summary, err := run(cfg)
	if summary != nil {
		out, _ := json.Marshal(summary)
		fmt.Println(string(out))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "franzgo: error:", err)
		os.Exit(2)
	}
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("franzgo", flag.ContinueOnError)
	fs.StringVar(&c.broker, "broker", os.Getenv("SIMBATCH_KAFKA_BOOTSTRAP"), "bootstrap host:port (default $SIMBATCH_KAFKA_BOOTSTRAP)")
	fs.IntVar(&c.partitions, "partitions", 1, "partitions of the topic created for the run")
	fs.IntVar(&c.replication, "replication", 1, "replicas of the topic created for the run (franz-go's default acks: every in-sync replica)")
	fs.DurationVar(&c.linger, "linger", time.Second, "franz-go ProducerLinger (teranode's flush_frequency)")
	outer := fs.String("outer-linger", "none", "outer batcher linger (e.g. 10ms), or none for no outer batcher")
	fs.StringVar(&c.outerTimer, "outer-timer", TimerDebounce, "outer batcher timer: debounce | deadline")
	fs.IntVar(&c.outerMaxBatch, "outer-max-batch", 10000, "outer batcher size trigger (teranode's flush_messages)")
	fs.IntVar(&c.n, "n", 200, "messages to publish")
	fs.DurationVar(&c.interval, "interval", 25*time.Millisecond, "gap between publishes")
	fs.IntVar(&c.messageBytes, "message-bytes", 256, "value size in bytes")
	fs.StringVar(&c.label, "label", "", "key label: keys are k-<label>-<i> (default: the topic's name)")
	fs.IntVar(&c.maxBuffered, "max-buffered", 10000, "franz-go MaxBufferedRecords (teranode's flush_messages)")
	fs.IntVar(&c.maxInflight, "max-inflight", 1, "franz-go MaxProduceRequestsInflightPerBroker (idempotency disabled)")
	fs.IntVar(&c.batchMaxBytes, "batch-max-bytes", 1<<20, "franz-go ProducerBatchMaxBytes (teranode clamps flush_bytes to >= 1 MiB)")
	fs.StringVar(&c.compression, "compression", "default", "default (franz-go's: snappy) | none")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "pause after the warm-up records are consumed")
	fs.DurationVar(&c.connectTimeout, "connect-timeout", 5*time.Second, "give up if no broker answers within this")
	fs.DurationVar(&c.stallTimeout, "stall-timeout", 15*time.Second, "give up if no message is consumed for this long")
	fs.StringVar(&c.out, "out", "", "per-message CSV path (none: no file)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.outerLinger = -1
	if *outer != "none" && *outer != "" {
		d, err := time.ParseDuration(*outer)
		if err != nil || d < 0 {
			return c, fmt.Errorf("the 'outer-linger' flag must be a duration >= 0 or none; got %q", *outer)
		}
		c.outerLinger = d
	}
	switch {
	case c.broker == "":
		return c, errors.New("the 'broker' flag is required (host:port), or set SIMBATCH_KAFKA_BOOTSTRAP")
	case c.partitions < 1:
		return c, fmt.Errorf("the 'partitions' flag must be an integer >= 1; got %d", c.partitions)
	case c.replication < 1 || c.replication > 32767:
		return c, fmt.Errorf("the 'replication' flag must be an integer from 1 to 32767; got %d", c.replication)
	case c.linger < 0:
		return c, fmt.Errorf("the 'linger' flag must be a duration >= 0; got %s", c.linger)
	case c.outerTimer != TimerDebounce && c.outerTimer != TimerDeadline:
		return c, fmt.Errorf("the 'outer-timer' flag must be debounce or deadline; got %q", c.outerTimer)
	case c.n < 1:
		return c, fmt.Errorf("the 'n' flag must be an integer >= 1; got %d", c.n)
	case c.interval < 0:
		return c, fmt.Errorf("the 'interval' flag must be a duration >= 0; got %s", c.interval)
	case c.messageBytes < 12:
		return c, fmt.Errorf("the 'message-bytes' flag must be an integer >= 12; got %d", c.messageBytes)
	case c.outerMaxBatch < 1 || c.maxBuffered < 1 || c.maxInflight < 1:
		return c, errors.New("the 'outer-max-batch', 'max-buffered' and 'max-inflight' flags must be >= 1")
	case c.compression != "default" && c.compression != "none":
		return c, fmt.Errorf("the 'compression' flag must be default or none; got %q", c.compression)
	}
	return c, nil
}

// checkReachable dials the broker until it accepts a TCP connection or timeout passes.
func checkReachable(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return fail("no Kafka broker reachable at %s within %s (%v)", addr, timeout, last)
}

// message rows; NaN = not observed.
type row struct {
	partition                      float64
	publish, produce, ack, consume float64
	publishLate, stall             float64
}

func run(cfg config) (map[string]any, error) {
	if err := checkReachable(seeds(cfg.broker)[0], cfg.connectTimeout); err != nil {
		return nil, err
	}
	topic := fmt.Sprintf("simbatch-fg-%d", time.Now().UnixNano()%1e10)
	label := cfg.label
	if label == "" {
		label = topic
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := createTopic(ctx, cfg, topic); err != nil {
		return nil, err
	}

	t0 := time.Now()
	now := func() float64 { return time.Since(t0).Seconds() }
	steal0 := stealSeconds()
	rows := make([]row, cfg.n)
	for i := range rows {
		rows[i] = row{partition: nan, publish: nan, produce: nan, ack: nan, consume: nan, publishLate: nan}
	}
	var mu sync.Mutex // guards rows' ack/consume/partition fields written by client goroutines
	var consumed, warmSeen atomic.Int64

	offsets := map[int32]kgo.Offset{}
	for p := 0; p < cfg.partitions; p++ {
		offsets[int32(p)] = kgo.NewOffset().AtStart()
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds(cfg.broker)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, fail("consumer: %v", err)
	}
	defer consumer.Close()
	go func() {
		for ctx.Err() == nil {
			fetches := consumer.PollFetches(ctx)
			fetches.EachRecord(func(r *kgo.Record) {
				t := now()
				i, err := strconv.Atoi(strings.TrimSpace(string(r.Value[:12])))
				if err != nil {
					return
				}
				if i < 0 {
					warmSeen.Add(1)
					return
				}
				mu.Lock()
				if i < cfg.n && rows[i].consume != rows[i].consume { // NaN: first sighting
					rows[i].consume = t
					rows[i].partition = float64(r.Partition)
					consumed.Add(1)
				}
				mu.Unlock()
			})
		}
	}()

	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds(cfg.broker)...),
		kgo.ProducerLinger(cfg.linger),
		kgo.ProducerBatchMaxBytes(int32(cfg.batchMaxBytes)),
		kgo.MaxBufferedRecords(cfg.maxBuffered),
		kgo.DisableIdempotentWrite(),
		kgo.MaxProduceRequestsInflightPerBroker(cfg.maxInflight),
	}
	if cfg.compression == "none" {
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	producer, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fail("producer: %v", err)
	}
	defer producer.Close()

	pad := strings.Repeat("x", cfg.messageBytes-12)
	// Warm-up: one record per partition (metadata, connections, a consumer already fetching).
	// Keys are picked so that the client's own default partitioner sends each to its partition.
	warmKeys := warmupKeys(topic, cfg.partitions)
	// All at once, then Flush (which disables lingering): one ProduceSync per partition would
	// wait out the linger P times.
	wctx, wcancel := context.WithTimeout(ctx, cfg.connectTimeout+10*time.Second)
	var warmErr atomic.Value
	for p := 0; p < cfg.partitions; p++ {
		r := &kgo.Record{Topic: topic, Key: []byte(warmKeys[p]), Value: []byte(fmt.Sprintf("%012d", -1))}
		producer.Produce(wctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				warmErr.CompareAndSwap(nil, err.Error())
			}
		})
	}
	if err := producer.Flush(wctx); err != nil || warmErr.Load() != nil {
		wcancel()
		return nil, fail("warm-up produce to %s at %s failed: %v %v", topic, cfg.broker, err, warmErr.Load())
	}
	for warmSeen.Load() < int64(cfg.partitions) && wctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	wcancel()
	if warmSeen.Load() < int64(cfg.partitions) {
		return nil, fail("the consumer saw %d of %d warm-up records from %s", warmSeen.Load(), cfg.partitions, cfg.broker)
	}
	time.Sleep(cfg.warmup)

	var produceErrs atomic.Int64
	var firstErr atomic.Value
	produce := func(i int) {
		mu.Lock()
		rows[i].produce = now()
		mu.Unlock()
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k-%s-%d", label, i)),
			Value: []byte(fmt.Sprintf("%012d", i) + pad)}
		producer.Produce(ctx, r, func(r *kgo.Record, err error) {
			t := now()
			if err != nil {
				produceErrs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				return
			}
			mu.Lock()
			rows[i].ack = t
			mu.Unlock()
		})
	}

	stalls := newStallMonitor(now)
	go stalls.run(ctx)

	var ob *outerBatcher
	obDone := make(chan struct{})
	if cfg.outerLinger >= 0 {
		ob = &outerBatcher{inbox: make(chan int, 200), linger: cfg.outerLinger,
			maxBatch: cfg.outerMaxBatch, mode: cfg.outerTimer, produce: produce}
		go ob.run(ctx, obDone)
	}
	next := time.Now()
	for i := 0; i < cfg.n; i++ {
		late := time.Since(next).Seconds()
		mu.Lock()
		rows[i].publishLate = late
		rows[i].publish = now()
		mu.Unlock()
		if ob != nil {
			ob.inbox <- i
		} else {
			produce(i)
		}
		next = next.Add(cfg.interval)
		time.Sleep(time.Until(next))
	}
	if ob != nil {
		close(ob.inbox)
		<-obDone
	}
	var runErr error
	last, lastChange := int64(-1), time.Now()
	for consumed.Load() < int64(cfg.n) {
		time.Sleep(20 * time.Millisecond)
		if c := consumed.Load(); c != last {
			last, lastChange = c, time.Now()
		} else if time.Since(lastChange) > cfg.stallTimeout {
			runErr = fail("the broker at %s stopped answering: %d of %d messages consumed, none for %s",
				cfg.broker, c, cfg.n, cfg.stallTimeout)
			break
		}
	}
	fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
	_ = producer.Flush(fctx)
	fcancel()
	stealShare := nan
	if s1 := stealSeconds(); s1 == s1 && steal0 == steal0 {
		stealShare = (s1 - steal0) / (float64(numCPU()) * time.Since(t0).Seconds())
	}
	mu.Lock()
	for i := range rows {
		rows[i].stall = stalls.maxOverlap(rows[i].publish, rows[i].consume)
	}
	snapshot := append([]row(nil), rows...)
	mu.Unlock()
	if cfg.out != "" {
		if err := writeCSV(cfg.out, snapshot, stealShare); err != nil {
			return nil, fail("writing %s: %v", cfg.out, err)
		}
	}
	if produceErrs.Load() > 0 && runErr == nil {
		runErr = fail("%d produce errors, first: %v", produceErrs.Load(), firstErr.Load())
	}
	lat := make([]float64, 0, len(snapshot))
	for _, r := range snapshot {
		if r.consume == r.consume {
			lat = append(lat, r.consume-r.publish)
		}
	}
	outerFlushes := 0
	if ob != nil {
		outerFlushes = ob.flushes
	}
	outerLinger := "none"
	if cfg.outerLinger >= 0 {
		outerLinger = cfg.outerLinger.String()
	}
	summary := map[string]any{
		"client": "franz-go v1.20.6", "topic": topic, "partitions": cfg.partitions,
		"linger": cfg.linger.String(), "outer_linger": outerLinger, "outer_timer": cfg.outerTimer,
		"n": cfg.n, "consumed": len(lat), "p50_s": pct(lat, 0.50), "p99_s": pct(lat, 0.99),
		"max_s": pct(lat, 1.0), "outer_flushes": outerFlushes, "steal_share": jsonNum(stealShare),
		"csv": cfg.out,
	}
	if runErr != nil && cfg.out != "" {
		runErr = fail("%v; measurements so far written to %s", runErr, cfg.out)
	}
	return summary, runErr
}

// seeds splits a bootstrap list, host:port[,host:port...], into franz-go's seed brokers.
func seeds(bootstrap string) []string {
	return strings.Split(bootstrap, ",")
}

// createTopic creates the run's topic (with cfg.replication replicas) and waits for the
// broker's answer.
func createTopic(ctx context.Context, cfg config, topic string) error {
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds(cfg.broker)...))
	if err != nil {
		return fail("admin client: %v", err)
	}
	defer admin.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, int32(cfg.partitions), int16(cfg.replication)
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = int32(cfg.connectTimeout.Milliseconds())
	cctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout+5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(cctx, admin)
	if err != nil {
		return fail("could not create topic %s on %s: %v", topic, cfg.broker, err)
	}
	for _, rt := range resp.Topics {
		if rt.ErrorCode != 0 {
			msg := ""
			if rt.ErrorMessage != nil {
				msg = *rt.ErrorMessage
			}
			return fail("could not create topic %s on %s: error code %d %s", topic, cfg.broker, rt.ErrorCode, msg)
		}
	}
	// Wait until the metadata shows every partition with a leader: a client that loads the
	// topic earlier partitions over fewer partitions than were created.
	for cctx.Err() == nil {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		mreq.Topics = append(mreq.Topics, mt)
		if mresp, err := mreq.RequestWith(cctx, admin); err == nil && len(mresp.Topics) == 1 {
			ready := 0
			for _, p := range mresp.Topics[0].Partitions {
				if p.ErrorCode == 0 && p.Leader >= 0 {
					ready++
				}
			}
			if ready == cfg.partitions {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fail("topic %s on %s did not show %d partitions with leaders in time", topic, cfg.broker, cfg.partitions)
}

// pct is the published test's percentile rule: sorted[floor((n-1)p)].
func pct(v []float64, p float64) any {
	if len(v) == 0 {
		return nil
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[int(float64(len(s)-1)*p)]
}
