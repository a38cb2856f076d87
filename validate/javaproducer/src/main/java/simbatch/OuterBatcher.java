package simbatch;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;

/**
 * teranode's outer drain loop (util/kafka/kafka_producer_async.go, as described in
 * shared/context/mechanisms.md section 3), in Java: with an empty buffer block for one
 * message; at maxBatch buffered flush; otherwise wait for a message or the timer. In
 * "debounce" mode the timer is re-armed to linger after every appended message (it fires
 * after linger without a new message); in "deadline" mode it fires linger after the first
 * message of the buffer. A flush hands every buffered message to the client serially on this
 * thread (KafkaProducer.send, which can block). When the feed ends (CLOSE) the last batch
 * still waits for its timer: the end of a run is not a flush. Teranode's adaptive slow mode
 * is left out.
 */
final class OuterBatcher extends Thread {
    static final int CLOSE = -1;

    final BlockingQueue<Integer> inbox = new LinkedBlockingQueue<>(200);
    private final long lingerNs;
    private final int maxBatch;
    private final boolean deadline;
    private final IntConsumer produce;
    volatile int flushes;

    OuterBatcher(long lingerNs, int maxBatch, String mode, IntConsumer produce) {
        super("outer-batcher");
        setDaemon(true);
        this.lingerNs = lingerNs;
        this.maxBatch = maxBatch;
        this.deadline = mode.equals("deadline");
        this.produce = produce;
    }

    @Override
    public void run() {
        List<Integer> buf = new ArrayList<>();
        long dueNs = 0;       // first message + linger (deadline) or last message + linger
        boolean closed = false;
        try {
            while (true) {
                if (buf.isEmpty()) {
                    if (closed) {
                        return;
                    }
                    int i = inbox.take();
                    if (i == CLOSE) {
                        return;
                    }
                    buf.add(i);
                    dueNs = System.nanoTime() + lingerNs;
                    continue;
                }
                if (buf.size() >= maxBatch) {
                    flush(buf);
                    continue;
                }
                long waitNs = dueNs - System.nanoTime();
                Integer i = null;
                if (waitNs > 0) {
                    // the feed ended: the last batch still waits for its timer
                    i = closed ? sleepThen(waitNs) : inbox.poll(waitNs, TimeUnit.NANOSECONDS);
                }
                if (i == null) {
                    flush(buf);
                } else if (i == CLOSE) {
                    closed = true;
                } else {
                    buf.add(i);
                    if (!deadline) {
                        dueNs = System.nanoTime() + lingerNs;
                    }
                }
            }
        } catch (InterruptedException e) {
            flush(buf);
        }
    }

    private static Integer sleepThen(long ns) throws InterruptedException {
        TimeUnit.NANOSECONDS.sleep(ns);
        return null;
    }

    private void flush(List<Integer> buf) {
        for (int i : buf) {
            produce.accept(i);
        }
        buf.clear();
        flushes++;
    }
}
