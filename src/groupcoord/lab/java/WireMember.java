/*
 * One consumer of the lab's calibration on the wire, with Apache Kafka's Java client
 * (kafka-clients: the classic KafkaConsumer, or with group.protocol=consumer the KIP-848
 * consumer): the Java counterpart of groupcoord.lab.wire_member (confluent-kafka). Same
 * command line, same JSON-lines log, same per-record sleep; see that module's docstring.
 *
 *   java -cp KAFKA_CLIENTS_CLASSPATH:CLASSES WireMember --bootstrap HOST:PORT --group G --name c1
 *       --protocol eager|cooperative|consumer|consumer-range --topics foo,bar --log FILE
 *       [--max-poll-records N] [--processing-ms X] [--auto-commit-interval-ms MS]
 *       [--max-poll-interval-ms MS] [--session-timeout-ms MS] [--heartbeat-interval-ms MS]
 *       [--metadata-max-age-ms MS] [--slow FROM:UNTIL:DELAY_MS[,...]] [--wait-go]
 *
 * What differs from the librdkafka member, because this is the client that member imitates:
 * - poll(100 ms) is the Java client's own: it returns once a record is there, with up to
 *   max.poll.records; each record then takes processing_ms (Thread.sleep) and is logged.
 * - Commits are the Java client's auto-commit (enable.auto.commit with
 *   auto.commit.interval.ms): the positions of what poll returned, committed from inside a
 *   later poll (by then the batch is processed), and synchronously before a revocation and in
 *   close(), by the client itself. A member stopped in the middle of a batch seeks each
 *   partition back to its first unprocessed record before close(), so close() commits what
 *   was processed, as the librdkafka member's stored offsets do. With
 *   --auto-commit-interval-ms 0, auto-commit is off and the revocation callback commits.
 * - The settings the librdkafka member sets explicitly are set here under the Java names
 *   (fetch.max.wait.ms 50, metadata.max.age.ms, reconnect and retry backoffs); everything else
 *   is the Java client's default. Classic members set the session timeout and heartbeat
 *   interval; KIP-848 members get theirs from the group (the broker's configs).
 *
 * --slow: the scenario's slow events, as the librdkafka member takes them (see its docstring):
 * onPartitionsRevoked within [FROM, UNTIL) (wall-clock seconds) sleeps DELAY_MS before it
 * returns, after the client's own commit before the revocation; only a process running when
 * the window began is slow, and the latest window begun is the one that counts.
 *
 * --wait-go: the JVM starts and creates the consumer (class loading and construction, about a
 * second of CPU on the loaded machine), prints "ready" on stdout, then waits for a line "go"
 * on stdin before it logs "start" and subscribes (nothing joins before). Its "start" line names the
 * client, its version and commit (kafka-clients' own, from the jar's version file). SIGTERM stops the loop after
 * the record in hand and closes the consumer (revocation callback, commit, leave); a member
 * whose parent (the harness) is gone exits at once.
 */

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.AppInfoParser;

public final class WireMember {
    private final Map<String, String> args;
    private final PrintWriter out;
    private volatile boolean stop;
    private final KafkaConsumer<byte[], byte[]> consumer;
    /** when run() began (epoch ms): a slow window begun before it is another process's */
    private long startedMs = System.currentTimeMillis();

    private WireMember(Map<String, String> args, PrintWriter out, KafkaConsumer<byte[], byte[]> consumer) {
        this.args = args;
        this.out = out;
        this.consumer = consumer;
    }

    static Map<String, String> parse(String[] argv) {
        Map<String, String> a = new HashMap<>();
        a.put("max-poll-records", "500");
        a.put("processing-ms", "0");
        a.put("auto-commit-interval-ms", "5000");
        a.put("max-poll-interval-ms", "300000");
        a.put("session-timeout-ms", "45000");
        a.put("heartbeat-interval-ms", "3000");
        a.put("metadata-max-age-ms", "5000");
        for (int i = 0; i < argv.length; i++) {
            if (!argv[i].startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument " + argv[i]);
            }
            String key = argv[i].substring(2);
            if (key.equals("wait-go")) {
                a.put(key, "true");
            } else if (i + 1 < argv.length) {
                a.put(key, argv[++i]);
            } else {
                throw new IllegalArgumentException("--" + key + " needs a value");
            }
        }
        for (String required : List.of("bootstrap", "group", "name", "protocol", "topics", "log")) {
            if (!a.containsKey(required)) {
                throw new IllegalArgumentException("--" + required + " is required");
            }
        }
        if (!List.of("eager", "cooperative", "consumer", "consumer-range").contains(a.get("protocol"))) {
            throw new IllegalArgumentException("--protocol: eager, cooperative, consumer or consumer-range");
        }
        slowDelayMs(a.getOrDefault("slow", ""), 0, 0); // a bad --slow fails here, not in a callback
        return a;
    }

    /** The delay of the latest --slow window begun since startedMs, while it lasts; else 0. */
    static long slowDelayMs(String spec, long startedMs, long nowMs) {
        double latest = Double.NEGATIVE_INFINITY;
        long delay = 0;
        for (String part : spec.split(",")) {
            if (part.isBlank()) {
                continue;
            }
            String[] bits = part.trim().split(":");
            if (bits.length != 3) {
                throw new IllegalArgumentException("--slow takes FROM:UNTIL:DELAY_MS, got " + part);
            }
            double from = Double.parseDouble(bits[0]) * 1000;
            double until = Double.parseDouble(bits[1]) * 1000;
            if (startedMs <= from && from <= nowMs && from >= latest) {
                latest = from;
                delay = nowMs < until ? Math.round(Double.parseDouble(bits[2])) : 0;
            }
        }
        return delay;
    }

    static Properties config(Map<String, String> a) {
        Properties p = new Properties();
        int autoCommit = Integer.parseInt(a.get("auto-commit-interval-ms"));
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, a.get("name"));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, Boolean.toString(autoCommit > 0));
        if (autoCommit > 0) {
            p.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, Integer.toString(autoCommit));
        }
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, a.get("max-poll-records"));
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, a.get("max-poll-interval-ms"));
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "50");
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, a.get("metadata-max-age-ms"));
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MS_CONFIG, "50");
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
        p.put(ConsumerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        String protocol = a.get("protocol");
        if (protocol.startsWith("consumer")) {
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            if (protocol.equals("consumer-range")) {
                p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, "range");
            }
        } else {
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, protocol.equals("eager")
                ? RangeAssignor.class.getName() : CooperativeStickyAssignor.class.getName());
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, a.get("session-timeout-ms"));
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, a.get("heartbeat-interval-ms"));
        }
        return p;
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    private static String now() {
        Instant t = Instant.now();
        return String.format("%d.%06d", t.getEpochSecond(), t.getNano() / 1000);
    }

    private synchronized void log(String event, String rest) {
        out.println("{\"t\": " + now() + ", \"e\": " + quote(event) + rest + "}");
        out.flush();
    }

    private void logParts(String event, Collection<TopicPartition> parts) {
        StringBuilder b = new StringBuilder(", \"parts\": [");
        boolean first = true;
        for (TopicPartition tp : parts) {
            b.append(first ? "" : ", ").append('[').append(quote(tp.topic())).append(", ")
                .append(tp.partition()).append(']');
            first = false;
        }
        log(event, b.append(']').toString());
    }

    private final class Listener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            logParts("assign", partitions);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if (Integer.parseInt(args.get("auto-commit-interval-ms")) <= 0 && !partitions.isEmpty()) {
                try {
                    consumer.commitSync();
                } catch (KafkaException e) {
                    // the group moved on: nothing to do, as the librdkafka member
                }
            }
            logParts("revoke", partitions);
            long delayMs = slowDelayMs(args.getOrDefault("slow", ""), startedMs, System.currentTimeMillis());
            if (delayMs > 0) {
                log("slow", ", \"ms\": " + delayMs);
                try {
                    Thread.sleep(delayMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            logParts("lost", partitions);
        }
    }

    int run() {
        log("start", ", \"client\": \"kafka-clients\", \"version\": " + quote(AppInfoParser.getVersion())
            + ", \"commit\": " + quote(AppInfoParser.getCommitId()));
        consumer.subscribe(Arrays.asList(args.get("topics").split(",")), new Listener());
        double processingMs = Double.parseDouble(args.get("processing-ms"));
        long sleepMs = (long) processingMs;
        int sleepNs = (int) Math.round((processingMs - sleepMs) * 1_000_000);
        Map<TopicPartition, Long> rewind = new HashMap<>();
        while (!stop) {
            ConsumerRecords<byte[], byte[]> batch;
            try {
                batch = consumer.poll(Duration.ofMillis(100));
            } catch (KafkaException e) {
                log("error", ", \"error\": " + quote(String.valueOf(e)));
                continue;
            }
            Iterator<ConsumerRecord<byte[], byte[]>> it = batch.iterator();
            while (it.hasNext()) {
                ConsumerRecord<byte[], byte[]> r = it.next();
                if (stop) {
                    rewind.putIfAbsent(new TopicPartition(r.topic(), r.partition()), r.offset());
                    continue;
                }
                if (processingMs > 0) {
                    try {
                        Thread.sleep(sleepMs, sleepNs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                log("rec", ", \"tp\": " + quote(r.topic()) + ", \"p\": " + r.partition()
                    + ", \"o\": " + r.offset());
            }
        }
        log("closing", "");
        for (Map.Entry<TopicPartition, Long> e : rewind.entrySet()) {
            try {
                consumer.seek(e.getKey(), e.getValue());
            } catch (IllegalStateException | KafkaException ex) {
                // no longer assigned: nothing of it will be committed by this member
            }
        }
        consumer.close();
        log("closed", "");
        return 0;
    }

    /** A member whose harness died exits too (no orphan consumers in a group). */
    private static void exitWithParent() {
        Optional<ProcessHandle> parent = ProcessHandle.current().parent();
        Thread watch = new Thread(() -> {
            while (parent.isPresent() && parent.get().isAlive()) {
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    return;
                }
            }
            Runtime.getRuntime().halt(3);
        }, "parent-watch");
        watch.setDaemon(true);
        watch.start();
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a;
        try {
            a = parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("WireMember: " + e.getMessage());
            System.exit(2);
            return;
        }
        exitWithParent();
        // Created before the go: the JVM's class loading and the consumer's construction take
        // about a second of CPU on the loaded machine (the Python member pays its import before
        // the go likewise). Nothing joins before subscribe(); the KIP-848 consumer's background
        // thread may look up the coordinator meanwhile.
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config(a));
        if (a.containsKey("wait-go")) {
            System.out.println("ready");
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line = in.readLine();
            if (line == null || !line.trim().equals("go")) {
                consumer.close(Duration.ZERO);
                return; // the harness gave up on this member
            }
        }
        PrintWriter out = new PrintWriter(new OutputStreamWriter(
            new FileOutputStream(a.get("log"), true), StandardCharsets.UTF_8));
        WireMember member = new WireMember(a, out, consumer);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            member.stop = true;
            try {
                main.join(60_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "stop"));
        member.run();
        out.close();
        // the loop ends only on SIGTERM/SIGINT: the JVM is shutting down already and exits
        // once main returns (the stop hook waits for it)
    }
}
