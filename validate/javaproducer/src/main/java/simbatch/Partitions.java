package simbatch;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The partition the Java producer picks for keys k-&lt;label&gt;-&lt;i&gt; at each partition count:
 * BuiltInPartitioner.partitionForKey (what KafkaProducer.partition calls for a keyed record
 * with no custom partitioner: toPositive(murmur2(key)) % n), and with --broker the partition
 * in each RecordMetadata after producing the key to a topic of that many partitions. The two
 * must agree. Output: client,n_partitions,key,partition.
 */
final class Partitions {
    static void main(String[] args) throws Exception {
        String label = "p";
        int n = 2000;
        String counts = "1,8,32,128,256";
        String broker = null;
        String out = null;
        for (int k = 0; k + 1 < args.length; k += 2) {
            switch (args[k]) {
                case "--label" -> label = args[k + 1];
                case "--n" -> n = Harness.Config.atLeast("--n", args[k + 1], 1);
                case "--counts" -> counts = args[k + 1];
                case "--broker" -> broker = args[k + 1];
                case "--out" -> out = args[k + 1];
                default -> throw new IllegalArgumentException("unknown flag " + args[k]);
            }
        }
        List<String> lines = new ArrayList<>();
        lines.add("client,n_partitions,key,partition");
        for (String c : counts.split(",")) {
            int p = Harness.Config.atLeast("--counts", c.trim(), 1);
            int[] api = new int[n];
            for (int i = 0; i < n; i++) {
                api[i] = BuiltInPartitioner.partitionForKey(key(label, i), p);
            }
            if (broker != null) {
                int[] got = produced(broker, p, label, n);
                for (int i = 0; i < n; i++) {
                    if (got[i] != api[i]) {
                        throw new Harness.HarnessError("key k-" + label + "-" + i + " at " + p
                            + " partitions: partitionForKey " + api[i] + ", producer reported " + got[i]);
                    }
                }
                System.err.println("javaproducer partitions: " + p + " partitions: " + n
                    + " keys produced, all match partitionForKey");
            }
            for (int i = 0; i < n; i++) {
                lines.add("java," + p + ",k-" + label + "-" + i + "," + api[i]);
            }
        }
        if (out == null) {
            lines.forEach(System.out::println);
        } else {
            try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(Path.of(out)))) {
                lines.forEach(w::println);
            }
        }
    }

    static byte[] key(String label, int i) {
        return ("k-" + label + "-" + i).getBytes(StandardCharsets.UTF_8);
    }

    static int[] produced(String broker, int p, String label, int n) throws Exception {
        Harness.checkReachable(broker, 5000);
        String topic = "simbatch-javavec-" + p + "-" + Long.toHexString(System.nanoTime());
        Harness.createTopic(broker, topic, p, 5000);
        Properties pp = new Properties();
        pp.put("bootstrap.servers", broker);
        pp.put("key.serializer", ByteArraySerializer.class.getName());
        pp.put("value.serializer", ByteArraySerializer.class.getName());
        // The partitioner does not depend on these. With the idempotent default, a 128-partition
        // topic produced to right after creation once looped on OUT_OF_ORDER_SEQUENCE_NUMBER
        // for one partition (its first batch got NOT_LEADER_OR_FOLLOWER) until the delivery
        // timeout; without idempotence the retry simply succeeds.
        pp.put("enable.idempotence", "false");
        pp.put("acks", "1");
        int[] out = new int[n];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                fs.add(producer.send(new ProducerRecord<>(topic, key(label, i), new byte[] {'v'})));
            }
            for (int i = 0; i < n; i++) {
                out[i] = fs.get(i).get().partition();
            }
        }
        return out;
    }

    private Partitions() {
    }
}
