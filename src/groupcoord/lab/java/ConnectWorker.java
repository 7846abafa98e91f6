/*
 * One Kafka Connect worker of the lab's KIP-415 calibration on the wire: Apache Kafka's own
 * Connect group membership (connect/runtime's WorkerGroupMember, WorkerCoordinator,
 * EagerAssignor, IncrementalCooperativeAssignor, ConnectProtocol,
 * IncrementalCooperativeConnectProtocol, compiled from the Apache Kafka snapshot by
 * scripts/build_connect_runtime.py) joined to the group as a distributed worker, with a fixed
 * configuration held in memory instead of the config topic.
 *
 *   java -cp KAFKA_CLIENTS_CLASSPATH:CONNECT_MEMBERSHIP_JAR:CLASSES ConnectWorker
 *       --bootstrap HOST:PORT --group G --name c1 --protocol eager|compatible|sessioned
 *       --connectors A=8,B=8 --log FILE [--session-timeout-ms MS] [--heartbeat-interval-ms MS]
 *       [--rebalance-timeout-ms MS] [--max-delay-ms MS] [--task-stop-ms MS]
 *       [--task-start-ms MS] [--start-stop-threads N] [--wait-go]
 *
 * What stands in for the herder (connect/runtime's DistributedHerder, whose closure - Worker,
 * plugins, the REST server, the config/offset/status topics - is not compiled), following its
 * tick loop for what concerns the group:
 * - the tick polls the member (WorkerGroupMember.poll) with a timeout bounded by the scheduled
 *   rebalance (KIP-415's delay: an assignment with delay d schedules a rejoin d ms later);
 * - onRevoked stops the revoked connectors and tasks (always under eager, as the herder does
 *   once its previous rebalance was resolved; under sessioned the revoked ones), then the
 *   member goes on with its JoinGroup;
 * - after onAssigned, the tick starts the assigned connectors and tasks it does not run yet
 *   (eager: all of them), and requests a rejoin when the assignment revoked something (the
 *   follow-up round of incremental cooperative rebalancing) or when its config offset differs
 *   from the worker's snapshot;
 * - a new configuration ("config A=8,B=8,C=3" on stdin) is a new snapshot at the next offset;
 *   a connector added or removed requests a rejoin (the herder's needsReconfigRebalance).
 * A connector or task stop takes --task-stop-ms and a start --task-start-ms (Thread.sleep, as
 * the lab's model times them). --start-stop-threads N (default 8, the herder's
 * START_STOP_THREAD_POOL_SIZE) stops them N at a time, as the herder's start/stop pool does:
 * each of its stop callables (Worker.stopAndAwaitTask) waits for its task's graceful stop;
 * 0 stops them all at once. The pool is the worker's, for its whole life, as the herder's
 * startAndStopExecutor is (a fixed pool made with the herder; startAndStop hands it each
 * rebalance's callables with invokeAll): its threads exist before the first revocation (the
 * herder's first assignment ran its starting callables on them), so a revocation's first stops
 * begin at once, not after the threads of a pool made for it start. Starts stay all at once: the herder's start callable returns once
 * the task is submitted to its own thread, where the task's start-up runs. An item queued
 * behind the pool keeps running until its own stop callable begins (Kafka's
 * Worker.stopAndAwaitTask signals the task, WorkerTask.stop, only then): the "stopping" line
 * (with "queued": true) names the items the revocation queues, and each callable logs an
 * "item-stopping" line for its item as it begins, with the thread it runs on; the harness counts
 * an item down from there.
 *
 * Log: JSON lines with "mono" (System.nanoTime in seconds: CLOCK_MONOTONIC, the clock Python's
 * time.monotonic reads, so the harness compares every worker's lines on one time axis) and
 * "t" (wall-clock seconds): "start" (with the pool's size and its threads already started),
 * "assigned" (generation, leader, config offset, the
 * assignment's connectors, tasks, revoked ones and delay), "stopping"/"item-stopping"/"stopped" and
 * "starting"/"started" (the items), "rejoin" (why), "config", "closing", "closed", "error".
 * Tasks are "connector/N", connectors their name.
 *
 * --wait-go: the JVM creates the member, prints "ready" on stdout and waits for "go" on stdin
 * before its first poll. Then stdin lines: "config SPEC" (a new snapshot), "stop" (leave the
 * group: stop the work as onRevoked does, then WorkerGroupMember.stop sends LeaveGroup),
 * "kill" (exit at once, no LeaveGroup: a crash). EOF on stdin stops the worker.
 */

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.Utils.UncheckedCloseable;
import org.apache.kafka.connect.runtime.RestartRequest;
import org.apache.kafka.connect.runtime.SessionKey;
import org.apache.kafka.connect.runtime.TargetState;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.apache.kafka.connect.runtime.distributed.ExtendedAssignment;
import org.apache.kafka.connect.runtime.distributed.WorkerGroupMember;
import org.apache.kafka.connect.runtime.distributed.WorkerRebalanceListener;
import org.apache.kafka.connect.storage.ClusterConfigState;
import org.apache.kafka.connect.storage.ConfigBackingStore;
import org.apache.kafka.connect.util.ConnectorTaskId;

public final class ConnectWorker {
    private final Map<String, String> args;
    private final PrintWriter out;
    private final String name;
    private final long stopMs;
    private final long startMs;
    private final int threads;
    /** The herder's start/stop pool (DistributedHerder.startAndStopExecutor): null for 0. */
    private final ThreadPoolExecutor startAndStop;
    private final ConcurrentLinkedQueue<String> commands = new ConcurrentLinkedQueue<>();

    private volatile ClusterConfigState snapshot;
    private WorkerGroupMember member;
    // the herder's state (DistributedHerder: assignment, runningAssignment, rebalanceResolved,
    // scheduledRebalance), touched by the tick thread only (the callbacks run inside poll)
    private ExtendedAssignment assignment;
    private boolean resolved = true;
    private long scheduledRebalance = Long.MAX_VALUE;
    private final Set<String> runningConnectors = new TreeSet<>();
    private final Set<ConnectorTaskId> runningTasks = new TreeSet<>();

    private ConnectWorker(Map<String, String> args) throws Exception {
        this.args = args;
        this.name = req("name");
        this.out = new PrintWriter(new OutputStreamWriter(
            new FileOutputStream(req("log"), true), StandardCharsets.UTF_8), true);
        this.stopMs = Long.parseLong(args.getOrDefault("task-stop-ms", "0"));
        this.startMs = Long.parseLong(args.getOrDefault("task-start-ms", "0"));
        this.threads = Integer.parseInt(args.getOrDefault("start-stop-threads", "8"));
        this.snapshot = snapshotOf(0, parseConnectors(req("connectors")));
        this.startAndStop = threads > 0 ? startAndStopPool(threads) : null;
    }

    /**
     * The worker's fixed pool of {@code n} threads, made once (the herder's is made in its
     * constructor, "StartAndStopExecutor-%d"), its threads started and a round of callables run
     * through it now, so that nothing of the pool is first built during a revocation.
     */
    private static ThreadPoolExecutor startAndStopPool(int n) throws InterruptedException {
        AtomicInteger count = new AtomicInteger();
        ThreadFactory factory = r -> {
            Thread t = new Thread(r, "StartAndStopExecutor-" + count.getAndIncrement());
            t.setDaemon(true);
            return t;
        };
        ThreadPoolExecutor pool = new ThreadPoolExecutor(n, n, 0L, TimeUnit.MILLISECONDS,
            new LinkedBlockingQueue<>(), factory);
        pool.prestartAllCoreThreads();
        List<Callable<Void>> warm = new ArrayList<>();
        for (int i = 0; i < n; i++)
            warm.add(new ItemCallable(null, null, 0));
        pool.invokeAll(warm);
        return pool;
    }

    /** One item's start or stop callable: tells {@code worker} its item begins, then takes
     * {@code ms} (Worker.stopAndAwaitTask waits for its one task). */
    private static final class ItemCallable implements Callable<Void> {
        private final ConnectWorker worker;
        private final Object item;
        private final long ms;

        ItemCallable(ConnectWorker worker, Object item, long ms) {
            this.worker = worker;
            this.item = item;
            this.ms = ms;
        }

        @Override
        public Void call() throws InterruptedException {
            if (worker != null)
                worker.itemStopping(Collections.singletonList(item));
            if (ms > 0)
                Thread.sleep(ms);
            return null;
        }
    }

    private String req(String key) {
        String v = args.get(key);
        if (v == null)
            throw new IllegalArgumentException("--" + key + " is required");
        return v;
    }

    // ------------------------------------------------------------------ the configuration

    static Map<String, Integer> parseConnectors(String spec) {
        Map<String, Integer> out = new LinkedHashMap<>();
        for (String part : spec.split(",")) {
            if (part.isBlank())
                continue;
            String[] kv = part.split("=", 2);
            if (kv.length != 2)
                throw new IllegalArgumentException("connector spec takes NAME=TASKS, got " + part);
            int n = Integer.parseInt(kv[1].trim());
            if (n < 0)
                throw new IllegalArgumentException("task count must be >= 0, got " + part);
            out.put(kv[0].trim(), n);
        }
        return out;
    }

    static ClusterConfigState snapshotOf(long offset, Map<String, Integer> connectors) {
        Map<String, Integer> counts = new HashMap<>();
        Map<String, Map<String, String>> configs = new HashMap<>();
        Map<String, TargetState> states = new HashMap<>();
        Map<ConnectorTaskId, Map<String, String>> taskConfigs = new HashMap<>();
        for (Map.Entry<String, Integer> e : connectors.entrySet()) {
            counts.put(e.getKey(), e.getValue());
            configs.put(e.getKey(), Collections.singletonMap("name", e.getKey()));
            states.put(e.getKey(), TargetState.STARTED);
            for (int i = 0; i < e.getValue(); i++)
                taskConfigs.put(new ConnectorTaskId(e.getKey(), i), Collections.emptyMap());
        }
        return new ClusterConfigState(offset, null, counts, configs, states, taskConfigs,
            Collections.emptyMap(), Collections.emptyMap(), Collections.emptyMap(),
            Collections.emptySet(), Collections.emptySet());
    }

    /** The config topic's place: the snapshot this worker has read (all of it, at once). */
    private final class Configs implements ConfigBackingStore {
        @Override public void start() { }
        @Override public void stop() { }
        @Override public ClusterConfigState snapshot() { return snapshot; }
        @Override public boolean contains(String connector) { return snapshot.contains(connector); }
        @Override public void putConnectorConfig(String c, Map<String, String> p, TargetState s) { }
        @Override public void removeConnectorConfig(String c) { }
        @Override public void putTaskConfigs(String c, List<Map<String, String>> configs) { }
        @Override public void removeTaskConfigs(String c) { }
        @Override public void refresh(long timeout, TimeUnit unit) { }
        @Override public void putTargetState(String c, TargetState state) { }
        @Override public void putSessionKey(SessionKey key) { }
        @Override public void putRestartRequest(RestartRequest r) { }
        @Override public void putTaskCountRecord(String c, int taskCount) { }
        @Override public void putLoggerLevel(String namespace, String level) { }
        @Override public void setUpdateListener(UpdateListener listener) { }
    }

    // ------------------------------------------------------------------ the log

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\')
                b.append('\\').append(c);
            else if (c < 0x20)
                b.append(String.format("\\u%04x", (int) c));
            else
                b.append(c);
        }
        return b.append('"').toString();
    }

    private static String list(Collection<?> items) {
        List<String> names = new ArrayList<>();
        for (Object o : items)
            names.add(o instanceof ConnectorTaskId ? ((ConnectorTaskId) o).connector() + "/"
                + ((ConnectorTaskId) o).task() : String.valueOf(o));
        Collections.sort(names);
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < names.size(); i++)
            b.append(i == 0 ? "" : ", ").append(quote(names.get(i)));
        return b.append(']').toString();
    }

    private synchronized void log(String event, String rest) {
        out.println("{\"mono\": " + String.format("%.6f", System.nanoTime() / 1e9)
            + ", \"t\": " + String.format("%.6f", System.currentTimeMillis() / 1e3)
            + ", \"member\": " + quote(name) + ", \"event\": " + quote(event) + rest + "}");
    }

    // ------------------------------------------------------------------ starting and stopping work

    /**
     * Stops or starts the items (connectors first, then tasks, in their sorted order: the
     * herder's list of callables), each taking {@code ms}; on the worker's pool when
     * {@code pooled} (else all at once, on this thread). A stop
     * ({@code stopping}) logs each item's "item-stopping" line as its own callable begins (the
     * item runs until then).
     */
    private void work(Collection<String> connectors, Collection<ConnectorTaskId> tasks, long ms, boolean pooled,
                      boolean stopping) throws InterruptedException {
        List<Object> items = new ArrayList<>(connectors);
        items.addAll(tasks);
        int n = items.size();
        if (n == 0)
            return;
        if (ms <= 0 || !pooled || startAndStop == null) {
            if (stopping)
                itemStopping(items);
            if (ms > 0)
                Thread.sleep(ms);
            return;
        }
        List<Callable<Void>> callables = new ArrayList<>(n);
        for (Object item : items)
            callables.add(new ItemCallable(stopping ? this : null, item, ms));
        startAndStop.invokeAll(callables);  // returns when every one has (DistributedHerder.startAndStop)
    }

    /** The "item-stopping" line: these items' own stop begins now (they ran until now), on
     * this thread (a pool thread's name: StartAndStopExecutor-N). */
    private void itemStopping(List<Object> items) {
        List<Object> cs = new ArrayList<>();
        List<Object> ts = new ArrayList<>();
        for (Object o : items)
            (o instanceof ConnectorTaskId ? ts : cs).add(o);
        log("item-stopping", ", \"connectors\": " + list(cs) + ", \"tasks\": " + list(ts)
            + ", \"thread\": " + quote(Thread.currentThread().getName()));
    }

    private void stopWork(Collection<String> connectors, Collection<ConnectorTaskId> tasks, String why) {
        stopWork(connectors, tasks, why, true);
    }

    private void stopWork(Collection<String> connectors, Collection<ConnectorTaskId> tasks, String why,
                          boolean pooled) {
        Set<String> cs = new TreeSet<>(connectors);
        cs.retainAll(runningConnectors);
        Set<ConnectorTaskId> ts = new TreeSet<>(tasks);
        ts.retainAll(runningTasks);
        log("stopping", ", \"why\": " + quote(why) + ", \"connectors\": " + list(cs) + ", \"tasks\": " + list(ts)
            + ", \"queued\": true");
        try {
            work(cs, ts, stopMs, pooled, true);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        runningConnectors.removeAll(cs);
        runningTasks.removeAll(ts);
        log("stopped", ", \"connectors\": " + list(cs) + ", \"tasks\": " + list(ts));
    }

    private void startWork() {
        Set<String> cs = new TreeSet<>(assignment.connectors());
        cs.removeAll(runningConnectors);
        Set<ConnectorTaskId> ts = new TreeSet<>(assignment.tasks());
        ts.removeAll(runningTasks);
        if (cs.isEmpty() && ts.isEmpty())
            return;
        log("starting", ", \"connectors\": " + list(cs) + ", \"tasks\": " + list(ts));
        try {
            work(cs, ts, startMs, false, false);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        runningConnectors.addAll(cs);
        runningTasks.addAll(ts);
        log("started", ", \"connectors\": " + list(cs) + ", \"tasks\": " + list(ts)
            + ", \"running\": " + (runningConnectors.size() + runningTasks.size()));
    }

    private final class Listener implements WorkerRebalanceListener {
        @Override
        public void onAssigned(ExtendedAssignment a, int generation) {
            assignment = a;
            resolved = false;
            scheduledRebalance = a.delay() > 0 ? Time.SYSTEM.milliseconds() + a.delay() : Long.MAX_VALUE;
            log("assigned", ", \"generation\": " + generation + ", \"leader\": " + quote(String.valueOf(a.leader()))
                + ", \"is_leader\": " + quote(String.valueOf(member.memberId())).equals(quote(String.valueOf(a.leader())))
                + ", \"error\": " + a.error() + ", \"offset\": " + a.offset() + ", \"version\": " + a.version()
                + ", \"delay\": " + a.delay()
                + ", \"connectors\": " + list(a.connectors()) + ", \"tasks\": " + list(a.tasks())
                + ", \"revoked_connectors\": " + list(a.revokedConnectors())
                + ", \"revoked_tasks\": " + list(a.revokedTasks()));
        }

        @Override
        public void onRevoked(String leader, Collection<String> connectors, Collection<ConnectorTaskId> tasks) {
            log("revoked", ", \"connectors\": " + list(connectors) + ", \"tasks\": " + list(tasks));
            stopWork(connectors, tasks, "revoked");
        }

        @Override
        public void onPollTimeoutExpiry() {
            log("poll-timeout", "");
        }
    }

    /** The herder's handling of a completed rebalance (DistributedHerder.handleRebalanceCompleted). */
    private void handleRebalanceCompleted() {
        if (resolved)
            return;
        long now = Time.SYSTEM.milliseconds();
        if (assignment.failed()) {
            rejoin("assignment failed (error " + assignment.error() + ")");
            return;
        }
        if (scheduledRebalance <= now) {
            scheduledRebalance = Long.MAX_VALUE;
            rejoin("scheduled rebalance");
            return;
        }
        if (snapshot.offset() != assignment.offset()) {
            rejoin("config offset " + snapshot.offset() + " differs from the assignment's " + assignment.offset());
            return;
        }
        startWork();
        resolved = true;
        if (!assignment.revokedConnectors().isEmpty() || !assignment.revokedTasks().isEmpty()) {
            assignment.revokedConnectors().clear();
            assignment.revokedTasks().clear();
            rejoin("revocations in the last assignment");
        }
    }

    private void rejoin(String why) {
        log("rejoin", ", \"why\": " + quote(why));
        member.requestRejoin();
    }

    private void applyConfig(String spec) {
        Map<String, Integer> connectors = parseConnectors(spec);
        Set<String> before = new HashSet<>(snapshot.connectors());
        snapshot = snapshotOf(snapshot.offset() + 1, connectors);
        log("config", ", \"offset\": " + snapshot.offset() + ", \"connectors\": " + list(connectors.keySet()));
        if (!before.equals(connectors.keySet()))
            rejoin("connectors added or removed");
        else
            rejoin("task configs changed");
    }

    // ------------------------------------------------------------------ main

    private static Map<String, String> parse(String[] argv) {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String k = argv[i];
            if (!k.startsWith("--"))
                throw new IllegalArgumentException("unexpected argument " + k);
            k = k.substring(2);
            if (k.equals("wait-go")) {
                a.put(k, "true");
                continue;
            }
            if (i + 1 >= argv.length)
                throw new IllegalArgumentException("--" + k + " needs a value");
            a.put(k, argv[++i]);
        }
        return a;
    }

    private void run() throws Exception {
        Map<String, String> props = new HashMap<>();
        props.put("bootstrap.servers", req("bootstrap"));
        props.put("group.id", req("group"));
        props.put("connect.protocol", args.getOrDefault("protocol", "sessioned"));
        props.put("session.timeout.ms", args.getOrDefault("session-timeout-ms", "10000"));
        props.put("heartbeat.interval.ms", args.getOrDefault("heartbeat-interval-ms", "3000"));
        props.put("rebalance.timeout.ms", args.getOrDefault("rebalance-timeout-ms", "60000"));
        props.put("scheduled.rebalance.max.delay.ms", args.getOrDefault("max-delay-ms", "300000"));
        DistributedConfig config = new DistributedConfig(props);
        member = new WorkerGroupMember(config, "http://" + name + ":8083/", new Configs(), new Listener(),
            Time.SYSTEM, "connect-" + name, new LogContext("[Worker " + name + "] "));

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (args.containsKey("wait-go")) {
            System.out.println("ready");
            System.out.flush();
            String line = in.readLine();
            if (line == null || !line.trim().equals("go"))
                return;
        }
        Thread reader = new Thread(() -> {
            try {
                String line;
                while ((line = in.readLine()) != null) {
                    commands.add(line.trim());
                    member.wakeup();
                }
            } catch (Exception e) {
                // the harness is gone: stop as on EOF
            }
            commands.add("stop");
            member.wakeup();
        }, "stdin");
        reader.setDaemon(true);
        reader.start();
        log("start", ", \"client\": \"connect-runtime\", \"version\": "
            + quote(org.apache.kafka.common.utils.AppInfoParser.getVersion()) + ", \"commit\": "
            + quote(org.apache.kafka.common.utils.AppInfoParser.getCommitId()) + ", \"protocol\": "
            + quote(props.get("connect.protocol")) + ", \"connectors\": " + list(snapshot.connectors())
            + ", \"start_stop_threads\": " + threads + ", \"pool_threads\": "
            + (startAndStop == null ? 0 : startAndStop.getPoolSize()));
        UncheckedCloseable noop = () -> { };
        while (true) {
            String cmd;
            boolean stop = false;
            while ((cmd = commands.poll()) != null) {
                if (cmd.equals("kill")) {
                    log("killed", "");
                    out.flush();
                    Runtime.getRuntime().halt(0);
                } else if (cmd.equals("stop")) {
                    stop = true;
                } else if (cmd.startsWith("config ")) {
                    applyConfig(cmd.substring(7));
                } else if (!cmd.isEmpty()) {
                    log("error", ", \"error\": " + quote("unknown command " + cmd));
                }
            }
            if (stop)
                break;
            long now = Time.SYSTEM.milliseconds();
            if (scheduledRebalance <= now && resolved)
                resolved = false;  // the tick's check: handled below
            long timeout = Math.max(0, Math.min(100, scheduledRebalance - now));
            try {
                member.poll(timeout, () -> noop);
            } catch (WakeupException e) {
                // a command arrived
            }
            handleRebalanceCompleted();
        }
        log("closing", "");
        // DistributedHerder.halt: stop the work (Worker.stopAndAwaitConnectors and
        // stopAndAwaitTasks: every item signalled, then awaited, not through the start/stop
        // pool), then leave the group (WorkerGroupMember.stop)
        stopWork(new ArrayList<>(runningConnectors), new ArrayList<>(runningTasks), "shutdown", false);
        member.stop();
        if (startAndStop != null)
            startAndStop.shutdown();
        log("closed", "");
    }

    public static void main(String[] argv) {
        ConnectWorker w;
        try {
            w = new ConnectWorker(parse(argv));
        } catch (Exception e) {
            System.err.println("ConnectWorker: " + e.getMessage());
            System.exit(2);
            return;
        }
        try {
            w.run();
        } catch (Exception e) {
            w.log("error", ", \"error\": " + quote(String.valueOf(e)));
            System.exit(1);
        }
        System.exit(0);
    }
}
