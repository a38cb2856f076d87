package main

import (
	"context"
	"time"
)

// Timer modes of the outer batcher.
const (
	TimerDebounce = "debounce" // teranode's: flush `linger` after the LAST appended message
	TimerDeadline = "deadline" // flush `linger` after the FIRST buffered message
)

// outerBatcher is teranode's outer drain loop (util/kafka/kafka_producer_async.go, as
// described in shared/context/mechanisms.md section 3), written fresh from that description:
//
//   - with an empty buffer, block for one message, append it, loop;
//   - with len(buffer) >= maxBatch, flush synchronously, loop;
//   - otherwise (re)arm the timer and wait for {message -> append; timer -> flush all}.
//
// In "debounce" mode the timer is reset to `linger` on every pass with a non-empty buffer,
// i.e. after every appended message, so it fires only after `linger` without a new message.
// In "deadline" mode it is armed once, when the first message enters an empty buffer, and
// fires `linger` after that message whatever arrives meanwhile (go-batcher's first-item
// timer). A flush calls produce serially for every buffered message on this goroutine;
// produce may block (franz-go's MaxBufferedRecords), and while it does the inbox is not read.
// When the feed ends (the inbox is closed) the last batch still waits for its timer: the
// end of a run is not a flush, so every batch of a run is timed as in steady state.
// The adaptive "slow mode" and the gauge/warning branch of teranode's loop are left out
// (they do not fire on the R2 workload).
type outerBatcher struct {
	inbox    chan int
	linger   time.Duration
	maxBatch int
	mode     string
	produce  func(i int)
	flushes  int
}

func (b *outerBatcher) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	var buf []int
	var due time.Time // when the timer fires: first message + linger, or last + linger
	inbox := b.inbox
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		for _, i := range buf {
			b.produce(i)
		}
		if len(buf) > 0 {
			b.flushes++
		}
		buf = buf[:0]
		timer.Stop()
	}
	appendMsg := func(i int) {
		now := time.Now()
		if len(buf) == 0 || b.mode == TimerDebounce {
			due = now.Add(b.linger)
		}
		buf = append(buf, i)
	}
	for {
		if len(buf) == 0 {
			if inbox == nil {
				return
			}
			select {
			case i, ok := <-inbox:
				if !ok {
					return
				}
				appendMsg(i)
			case <-ctx.Done():
				return
			}
			continue
		}
		if len(buf) >= b.maxBatch {
			flush()
			continue
		}
		timer.Reset(time.Until(due))
		select {
		case i, ok := <-inbox:
			timer.Stop()
			if !ok {
				// The feed ended: the last batch still goes when its timer fires, as any
				// other batch does (a nil channel is never ready in a select).
				inbox = nil
				continue
			}
			appendMsg(i)
		case <-timer.C:
			flush()
		case <-ctx.Done():
			flush()
			return
		}
	}
}
