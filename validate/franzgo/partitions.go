package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// partitionsMain writes the partition franz-go's default partitioner picks for the keys
// k-<label>-<i>, i < n, at each partition count: from the partitioner API, and (with
// -broker) from the partition the real client reported in each record's promise after
// producing it to a topic of that many partitions. The two must agree.
func partitionsMain(args []string) error {
	fs := flag.NewFlagSet("partitions", flag.ContinueOnError)
	label := fs.String("label", "p", "key label: keys are k-<label>-<i>")
	n := fs.Int("n", 2000, "keys per partition count")
	counts := fs.String("counts", "1,8,32,128,256", "partition counts, comma-separated")
	broker := fs.String("broker", "", "also produce every key to a real broker and check the reported partition")
	out := fs.String("out", "", "CSV path (client,n_partitions,key,partition); default stdout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var ps []int
	for _, s := range strings.Split(*counts, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 {
			return fmt.Errorf("the 'counts' flag must list integers >= 1; got %q", *counts)
		}
		ps = append(ps, v)
	}
	w := bufio.NewWriter(os.Stdout)
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = bufio.NewWriter(f)
	}
	defer w.Flush()
	fmt.Fprintln(w, "client,n_partitions,key,partition")
	for _, p := range ps {
		tp := kgo.UniformBytesPartitioner(64<<10, true, true, nil).ForTopic("vectors")
		api := make([]int, *n)
		for i := range api {
			api[i] = defaultPartition(tp, []byte(fmt.Sprintf("k-%s-%d", *label, i)), p)
		}
		if *broker != "" {
			got, err := producedPartitions(*broker, p, *label, *n)
			if err != nil {
				return err
			}
			for i := range api {
				if got[i] != api[i] {
					return fmt.Errorf("key k-%s-%d at %d partitions: API %d, client reported %d", *label, i, p, api[i], got[i])
				}
			}
			fmt.Fprintf(os.Stderr, "franzgo partitions: %d partitions: %d keys produced, all match the API\n", p, *n)
		}
		for i, v := range api {
			fmt.Fprintf(w, "franz-go,%d,k-%s-%d,%d\n", p, *label, i, v)
		}
	}
	return nil
}

func producedPartitions(broker string, p int, label string, n int) ([]int, error) {
	if err := checkReachable(broker, 10*time.Second); err != nil {
		return nil, err
	}
	topic := fmt.Sprintf("simbatch-fgvec-%d-%d", p, time.Now().UnixNano()%1e9)
	cfg := config{broker: broker, partitions: p, connectTimeout: 10 * time.Second}
	if err := createTopic(context.Background(), cfg, topic); err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(fmt.Sprintf("k-%s-%d", label, i)), Value: []byte("v")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		return nil, fmt.Errorf("producing to %s: %v", topic, err)
	}
	// ProduceSync's results come in completion order: read each record's own partition.
	out := make([]int, n)
	for i, r := range recs {
		out[i] = int(r.Partition)
	}
	return out, nil
}
