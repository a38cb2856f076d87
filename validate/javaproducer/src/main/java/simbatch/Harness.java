package simbatch;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Publish-to-consume latency through the REAL Java producer (org.apache.kafka:kafka-clients
 * 3.9.1, the broker's version) on a real broker, with teranode's outer batcher in front of it
 * (OuterBatcher, debounce or deadline timer), on the R2 workload: n keyed messages of 256 bytes
 * (keys k-&lt;label&gt;-&lt;i&gt;), one every interval, to a topic of P partitions created first,
 * read by a KafkaConsumer assigned to every partition (positions resolved) before the first
 * message. The Java twin of validate/kafka_harness.py, with its per-message CSV columns.
 *
 * <pre>
 * java -jar target/javaproducer.jar --broker 127.0.0.1:9092 --partitions 32 --linger-ms 1000 --out run.csv
 * java -jar target/javaproducer.jar --broker ... --linger-ms 10 --outer-linger-ms 100 --outer-timer deadline
 * java -jar target/javaproducer.jar partitions [--broker ...] --out ../partitioners/java.csv
 * </pre>
 *
 * Producer settings not given on the command line keep the client's 3.9.1 defaults
 * (acks=all, enable.idempotence=true, max.in.flight.requests.per.connection=5,
 * batch.size=16384, linger.ms=0, built-in partitioner: murmur2 for keys). With no broker
 * listening it exits with status 2 and one line on stderr within --connect-timeout-ms (5 s).
 */
public final class Harness {
    static final String[] COLUMNS = {"msg", "partition", "publish_s", "produce_s", "ack_s",
        "consume_s", "latency_s", "publish_late_s", "stall_s", "steal_share"};

    static final class HarnessError extends Exception {
        HarnessError(String msg) {
            super(msg);
        }
    }

    public static void main(String[] args) {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        try {
            if (args.length > 0 && args[0].equals("partitions")) {
                Partitions.main(Arrays.copyOfRange(args, 1, args.length));
                return;
            }
            Config cfg = Config.parse(args);
            run(cfg);
        } catch (HarnessError | IllegalArgumentException e) {
            System.err.println("javaproducer: error: " + e.getMessage());
            System.exit(2);
        } catch (Exception e) {
            System.err.println("javaproducer: error: " + e);
            System.exit(2);
        }
        System.exit(0);
    }

    /** Command-line settings; every flag is --name value. */
    static final class Config {
        String broker = System.getenv("SIMBATCH_KAFKA_BOOTSTRAP");
        int partitions = 1;
        Long lingerMs = 1000L;
        Integer batchSize;
        Integer maxInFlight;
        String acks;
        String idempotence;
        long outerLingerMs = -1;
        String outerTimer = "debounce";
        int outerMaxBatch = 10000;
        int n = 200;
        double intervalMs = 25;
        int messageBytes = 256;
        String label;
        long warmupMs = 2000;
        long connectTimeoutMs = 5000;
        long stallTimeoutMs = 15000;
        String out;

        static Config parse(String[] args) {
            Config c = new Config();
            for (int k = 0; k < args.length; k += 2) {
                String name = args[k];
                if (!name.startsWith("--") || k + 1 >= args.length) {
                    throw new IllegalArgumentException("flags are --name value pairs; got " + name);
                }
                String v = args[k + 1];
                switch (name.substring(2)) {
                    case "broker" -> c.broker = v;
                    case "partitions" -> c.partitions = atLeast(name, v, 1);
                    case "linger-ms" -> c.lingerMs = (long) atLeast(name, v, 0);
                    case "batch-size" -> c.batchSize = atLeast(name, v, 0);
                    case "max-in-flight" -> c.maxInFlight = atLeast(name, v, 1);
                    case "acks" -> c.acks = oneOf(name, v, "all", "-1", "0", "1");
                    case "idempotence" -> c.idempotence = oneOf(name, v, "true", "false");
                    case "outer-linger-ms" -> c.outerLingerMs = v.equals("none") ? -1 : atLeast(name, v, 0);
                    case "outer-timer" -> c.outerTimer = oneOf(name, v, "debounce", "deadline");
                    case "outer-max-batch" -> c.outerMaxBatch = atLeast(name, v, 1);
                    case "n" -> c.n = atLeast(name, v, 1);
                    case "interval-ms" -> c.intervalMs = atLeast(name, v, 0);
                    case "message-bytes" -> c.messageBytes = atLeast(name, v, 12);
                    case "label" -> c.label = v;
                    case "warmup-ms" -> c.warmupMs = atLeast(name, v, 0);
                    case "connect-timeout-ms" -> c.connectTimeoutMs = atLeast(name, v, 1);
                    case "stall-timeout-ms" -> c.stallTimeoutMs = atLeast(name, v, 1);
                    case "out" -> c.out = v;
                    default -> throw new IllegalArgumentException("unknown flag " + name);
                }
            }
            if (c.broker == null || c.broker.isEmpty()) {
                throw new IllegalArgumentException(
                    "the '--broker' flag is required (host:port), or set SIMBATCH_KAFKA_BOOTSTRAP");
            }
            return c;
        }

        static int atLeast(String name, String v, int min) {
            try {
                int x = Integer.parseInt(v);
                if (x >= min) {
                    return x;
                }
            } catch (NumberFormatException ignored) {
                // reported below
            }
            throw new IllegalArgumentException(
                "the '" + name + "' flag must be an integer >= " + min + "; got " + v);
        }

        static String oneOf(String name, String v, String... allowed) {
            if (Arrays.asList(allowed).contains(v)) {
                return v;
            }
            throw new IllegalArgumentException("the '" + name + "' flag must be one of "
                + String.join(", ", allowed) + "; got " + v);
        }
    }

    static void checkReachable(String broker, long timeoutMs) throws HarnessError {
        int colon = broker.lastIndexOf(':');
        if (colon < 0) {
            throw new HarnessError("the broker address must be host:port; got " + broker);
        }
        String host = broker.substring(0, colon);
        int port = Integer.parseInt(broker.substring(colon + 1));
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        Exception last = null;
        while (System.nanoTime() < deadline) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(host, port), 1000);
                return;
            } catch (IOException e) {
                last = e;
                sleepMs(200);
            }
        }
        throw new HarnessError("no Kafka broker reachable at " + broker + " within "
            + timeoutMs / 1000.0 + " s (" + last + ")");
    }

    /** Creates the topic (replication 1) and waits until every partition has a leader. */
    static void createTopic(String broker, String topic, int partitions, long timeoutMs)
            throws HarnessError {
        Properties p = new Properties();
        p.put("bootstrap.servers", broker);
        p.put("default.api.timeout.ms", (int) timeoutMs + 5000);
        p.put("request.timeout.ms", (int) timeoutMs);
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all()
                .get(timeoutMs + 5000, java.util.concurrent.TimeUnit.MILLISECONDS);
            long deadline = System.nanoTime() + (timeoutMs + 5000) * 1_000_000L;
            while (System.nanoTime() < deadline) {
                try {
                    TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get()
                        .get(topic);
                    if (d.partitions().size() == partitions
                            && d.partitions().stream().allMatch(x -> x.leader() != null)) {
                        return;
                    }
                } catch (Exception ignored) {
                    // not known yet
                }
                sleepMs(100);
            }
        } catch (Exception e) {
            throw new HarnessError("could not create topic " + topic + " on " + broker + ": " + e);
        }
        throw new HarnessError("topic " + topic + " on " + broker + " did not show " + partitions
            + " partitions with leaders in time");
    }

    static void sleepMs(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void run(Config cfg) throws Exception {
        checkReachable(cfg.broker, cfg.connectTimeoutMs);
        String topic = "simbatch-java-" + Long.toHexString(System.nanoTime());
        String label = cfg.label != null ? cfg.label : topic;
        createTopic(cfg.broker, topic, cfg.partitions, cfg.connectTimeoutMs);

        final long t0 = System.nanoTime();
        final double steal0 = stealSeconds();
        final int n = cfg.n;
        double[][] rec = new double[COLUMNS.length][n];
        for (double[] col : rec) {
            Arrays.fill(col, Double.NaN);
        }
        final int PART = 1, PUB = 2, PROD = 3, ACK = 4, CONS = 5, LATE = 7, STALL = 8;
        AtomicInteger consumed = new AtomicInteger();
        AtomicInteger warmSeen = new AtomicInteger();
        Object lock = new Object();
        java.util.concurrent.CountDownLatch assigned = new java.util.concurrent.CountDownLatch(1);
        volatileStop = false;

        Properties cp = new Properties();
        cp.put("bootstrap.servers", cfg.broker);
        cp.put("enable.auto.commit", "false");
        cp.put("fetch.max.wait.ms", "100");
        cp.put("key.deserializer", ByteArrayDeserializer.class.getName());
        cp.put("value.deserializer", ByteArrayDeserializer.class.getName());
        Thread reader = new Thread(() -> {
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
                List<TopicPartition> tps = new ArrayList<>();
                for (int p = 0; p < cfg.partitions; p++) {
                    tps.add(new TopicPartition(topic, p));
                }
                consumer.assign(tps);
                consumer.seekToBeginning(tps);
                for (TopicPartition tp : tps) {
                    consumer.position(tp);   // resolve now: assigned before the first message
                }
                assigned.countDown();
                while (!volatileStop) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(50))) {
                        double t = (System.nanoTime() - t0) / 1e9;
                        int i = Integer.parseInt(new String(r.value(), 0, 12, StandardCharsets.US_ASCII).trim());
                        if (i < 0) {
                            warmSeen.incrementAndGet();
                            continue;
                        }
                        synchronized (lock) {
                            if (i < n && Double.isNaN(rec[CONS][i])) {
                                rec[CONS][i] = t;
                                rec[PART][i] = r.partition();
                                consumed.incrementAndGet();
                            }
                        }
                    }
                }
            }
        }, "consumer");
        reader.setDaemon(true);
        reader.start();
        if (!assigned.await(cfg.connectTimeoutMs + 10000, java.util.concurrent.TimeUnit.MILLISECONDS)) {
            throw new HarnessError("the consumer could not be assigned the partitions of " + topic);
        }

        Properties pp = new Properties();
        pp.put("bootstrap.servers", cfg.broker);
        pp.put("key.serializer", ByteArraySerializer.class.getName());
        pp.put("value.serializer", ByteArraySerializer.class.getName());
        pp.put("linger.ms", String.valueOf(cfg.lingerMs));
        if (cfg.batchSize != null) {
            pp.put("batch.size", String.valueOf(cfg.batchSize));
        }
        if (cfg.maxInFlight != null) {
            pp.put("max.in.flight.requests.per.connection", String.valueOf(cfg.maxInFlight));
        }
        if (cfg.acks != null) {
            pp.put("acks", cfg.acks);
        }
        if (cfg.idempotence != null) {
            pp.put("enable.idempotence", cfg.idempotence);
        }
        // delivery.timeout.ms must be >= linger.ms + request.timeout.ms (the client checks)
        pp.put("delivery.timeout.ms", String.valueOf(Math.max(120000, cfg.lingerMs + 60000)));
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp);
        byte[] pad = "x".repeat(cfg.messageBytes - 12).getBytes(StandardCharsets.US_ASCII);
        try {
            for (int p = 0; p < cfg.partitions; p++) {   // warm-up: metadata, connection, fetching
                producer.send(new ProducerRecord<>(topic, p, null, value(-1, new byte[0])));
            }
            producer.flush();
            long wDeadline = System.nanoTime() + (cfg.connectTimeoutMs + 10000) * 1_000_000L;
            while (warmSeen.get() < cfg.partitions && System.nanoTime() < wDeadline) {
                sleepMs(10);
            }
            if (warmSeen.get() < cfg.partitions) {
                throw new HarnessError("the consumer saw " + warmSeen.get() + " of " + cfg.partitions
                    + " warm-up records from " + cfg.broker);
            }
            sleepMs(cfg.warmupMs);

            AtomicInteger errors = new AtomicInteger();
            AtomicReference<String> firstErr = new AtomicReference<>();
            java.util.function.IntConsumer produce = i -> {
                synchronized (lock) {
                    rec[PROD][i] = (System.nanoTime() - t0) / 1e9;
                }
                byte[] key = ("k-" + label + "-" + i).getBytes(StandardCharsets.UTF_8);
                producer.send(new ProducerRecord<>(topic, key, value(i, pad)), (md, e) -> {
                    double t = (System.nanoTime() - t0) / 1e9;
                    if (e != null) {
                        errors.incrementAndGet();
                        firstErr.compareAndSet(null, e.toString());
                        return;
                    }
                    synchronized (lock) {
                        rec[ACK][i] = t;
                    }
                });
            };
            StallMonitor stalls = new StallMonitor(t0);
            stalls.start();
            OuterBatcher outer = null;
            if (cfg.outerLingerMs >= 0) {
                outer = new OuterBatcher(cfg.outerLingerMs * 1_000_000L, cfg.outerMaxBatch,
                    cfg.outerTimer, produce);
                outer.start();
            }
            long intervalNs = Math.round(cfg.intervalMs * 1e6);
            long next = System.nanoTime();
            for (int i = 0; i < n; i++) {
                long now = System.nanoTime();
                synchronized (lock) {
                    rec[LATE][i] = (now - next) / 1e9;
                    rec[PUB][i] = (now - t0) / 1e9;
                }
                if (outer != null) {
                    outer.inbox.put(i);
                } else {
                    produce.accept(i);
                }
                next += intervalNs;
                long sleepNs = next - System.nanoTime();
                if (sleepNs > 0) {
                    Thread.sleep(sleepNs / 1_000_000L, (int) (sleepNs % 1_000_000L));
                }
            }
            if (outer != null) {
                outer.inbox.put(OuterBatcher.CLOSE);
                outer.join(cfg.stallTimeoutMs);
            }
            String error = null;
            int last = -1;
            long lastChange = System.nanoTime();
            while (consumed.get() < n) {
                sleepMs(20);
                int c = consumed.get();
                if (c != last) {
                    last = c;
                    lastChange = System.nanoTime();
                } else if (System.nanoTime() - lastChange > cfg.stallTimeoutMs * 1_000_000L) {
                    error = "the broker at " + cfg.broker + " stopped answering: " + c + " of " + n
                        + " messages consumed, none for " + cfg.stallTimeoutMs / 1000.0 + " s";
                    break;
                }
            }
            producer.flush();
            stalls.halt();
            volatileStop = true;
            reader.join(5000);
            double steal1 = stealSeconds();
            double stealShare = Double.NaN;
            if (!Double.isNaN(steal0) && !Double.isNaN(steal1)) {
                stealShare = (steal1 - steal0)
                    / (Runtime.getRuntime().availableProcessors() * ((System.nanoTime() - t0) / 1e9));
            }
            List<Double> lat = new ArrayList<>();
            synchronized (lock) {
                for (int i = 0; i < n; i++) {
                    rec[0][i] = i;
                    rec[6][i] = rec[CONS][i] - rec[PUB][i];
                    rec[STALL][i] = stalls.maxOverlap(rec[PUB][i], rec[CONS][i]);
                    rec[9][i] = stealShare;
                    if (!Double.isNaN(rec[6][i])) {
                        lat.add(rec[6][i]);
                    }
                }
                if (cfg.out != null) {
                    writeCsv(Path.of(cfg.out), rec, n);
                }
            }
            if (error == null && errors.get() > 0) {
                error = errors.get() + " produce errors, first: " + firstErr.get();
            }
            lat.sort(null);
            System.out.println(String.format(Locale.ROOT,
                "{\"client\": \"kafka-clients 3.9.1\", \"topic\": \"%s\", \"partitions\": %d, "
                + "\"linger_ms\": %d, \"outer_linger_ms\": %s, \"outer_timer\": \"%s\", \"n\": %d, "
                + "\"consumed\": %d, \"p50_s\": %s, \"p99_s\": %s, \"max_s\": %s, "
                + "\"outer_flushes\": %d, \"steal_share\": %s, \"csv\": %s}",
                topic, cfg.partitions, cfg.lingerMs,
                cfg.outerLingerMs < 0 ? "null" : String.valueOf(cfg.outerLingerMs), cfg.outerTimer,
                n, lat.size(), pct(lat, 0.50), pct(lat, 0.99), pct(lat, 1.0),
                outer == null ? 0 : outer.flushes, Double.isNaN(stealShare) ? "null" : stealShare,
                cfg.out == null ? "null" : "\"" + cfg.out + "\""));
            if (error != null) {
                throw new HarnessError(error + (cfg.out != null
                    ? "; measurements so far written to " + cfg.out : ""));
            }
        } finally {
            volatileStop = true;
            producer.close(Duration.ofSeconds(5));
        }
    }

    static volatile boolean volatileStop;

    static byte[] value(int i, byte[] pad) {
        byte[] head = String.format(Locale.ROOT, "%012d", i).getBytes(StandardCharsets.US_ASCII);
        byte[] v = Arrays.copyOf(head, head.length + pad.length);
        System.arraycopy(pad, 0, v, head.length, pad.length);
        return v;
    }

    /** The published test's percentile rule: sorted[floor((n-1)p)]. */
    static String pct(List<Double> sorted, double p) {
        if (sorted.isEmpty()) {
            return "null";
        }
        return String.valueOf(sorted.get((int) Math.floor((sorted.size() - 1) * p)));
    }

    static void writeCsv(Path path, double[][] rec, int n) throws IOException {
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(path))) {
            w.println(String.join(",", COLUMNS));
            for (int i = 0; i < n; i++) {
                StringBuilder sb = new StringBuilder().append(i);
                for (int c = 1; c < COLUMNS.length; c++) {
                    sb.append(',');
                    if (!Double.isNaN(rec[c][i])) {
                        sb.append(String.format(Locale.ROOT, "%.6f", rec[c][i]));
                    }
                }
                w.println(sb);
            }
        }
    }

    /** CPU time the hypervisor took from this VM so far (/proc/stat steal, USER_HZ = 100). */
    static double stealSeconds() {
        try {
            String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
            return Long.parseLong(f[8]) / 100.0;
        } catch (Exception e) {
            return Double.NaN;
        }
    }

    /** Wakes every 1 ms and records late wake-ups (> 2 ms): the process or VM was paused. */
    static final class StallMonitor extends Thread {
        private final long t0;
        private final List<double[]> stalls = new ArrayList<>();
        private volatile boolean stop;

        StallMonitor(long t0) {
            super("stall-monitor");
            setDaemon(true);
            this.t0 = t0;
        }

        @Override
        public void run() {
            double last = (System.nanoTime() - t0) / 1e9;
            while (!stop) {
                sleepMs(1);
                double t = (System.nanoTime() - t0) / 1e9;
                if (t - last > 0.002) {
                    synchronized (stalls) {
                        stalls.add(new double[] {t, t - last});
                    }
                }
                last = t;
            }
        }

        void halt() {
            stop = true;
        }

        double maxOverlap(double from, double to) {
            double end = Double.isNaN(to) ? Double.POSITIVE_INFINITY : to;
            double out = 0;
            synchronized (stalls) {
                for (double[] s : stalls) {
                    if (from <= s[0] && end >= s[0] - s[1] && s[1] > out) {
                        out = s[1];
                    }
                }
            }
            return out;
        }
    }

    private Harness() {
    }
}
