package org.apache.kafka.connect.runtime.distributed;

import java.util.Map;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.SaslConfigs;

/**
 * Stand-in for Connect's distributed worker configuration (connect/runtime's DistributedConfig,
 * which extends WorkerConfig: REST server, plugin path, converters, internal topics - none of
 * which the group membership reads). It defines only the keys the Connect group membership
 * reads (WorkerGroupMember's client and metrics set-up, GroupRebalanceConfig for protocol type
 * CONNECT, WorkerCoordinator's protocol and delay), with Kafka's key names and the defaults
 * Kafka's Connect worker documents (heartbeat 3 s, session 10 s, rebalance timeout 60 s,
 * scheduled.rebalance.max.delay.ms 300 s, connect.protocol sessioned).
 */
public class DistributedConfig extends AbstractConfig {
    public static final String GROUP_ID_CONFIG = CommonClientConfigs.GROUP_ID_CONFIG;
    public static final String CONNECT_PROTOCOL_CONFIG = "connect.protocol";
    public static final String SCHEDULED_REBALANCE_MAX_DELAY_MS_CONFIG = "scheduled.rebalance.max.delay.ms";

    private static final ConfigDef.Importance LOW = ConfigDef.Importance.LOW;

    static final ConfigDef CONFIG = new ConfigDef()
        .define(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, ConfigDef.Type.LIST, ConfigDef.Importance.HIGH, "bootstrap")
        .define(CommonClientConfigs.CLIENT_DNS_LOOKUP_CONFIG, ConfigDef.Type.STRING, "use_all_dns_ips", LOW, "dns")
        .define(GROUP_ID_CONFIG, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "group")
        .define(CommonClientConfigs.SESSION_TIMEOUT_MS_CONFIG, ConfigDef.Type.INT, 10_000, LOW, "session")
        .define(CommonClientConfigs.HEARTBEAT_INTERVAL_MS_CONFIG, ConfigDef.Type.INT, 3_000, LOW, "heartbeat")
        .define(CommonClientConfigs.REBALANCE_TIMEOUT_MS_CONFIG, ConfigDef.Type.INT, 60_000, LOW, "rebalance")
        .define(CommonClientConfigs.METADATA_MAX_AGE_CONFIG, ConfigDef.Type.LONG, 5 * 60 * 1000L, LOW, "age")
        .define(CommonClientConfigs.METRICS_NUM_SAMPLES_CONFIG, ConfigDef.Type.INT, 2, LOW, "samples")
        .define(CommonClientConfigs.METRICS_SAMPLE_WINDOW_MS_CONFIG, ConfigDef.Type.LONG, 30_000L, LOW, "window")
        .define(CommonClientConfigs.METRICS_RECORDING_LEVEL_CONFIG, ConfigDef.Type.STRING, "INFO", LOW, "level")
        .define(CommonClientConfigs.METRIC_REPORTER_CLASSES_CONFIG, ConfigDef.Type.LIST, "", LOW, "reporters")
        .define(CommonClientConfigs.RETRY_BACKOFF_MS_CONFIG, ConfigDef.Type.LONG, 100L, LOW, "retry")
        .define(CommonClientConfigs.RETRY_BACKOFF_MAX_MS_CONFIG, ConfigDef.Type.LONG, 1000L, LOW, "retry max")
        .define(CommonClientConfigs.RECONNECT_BACKOFF_MS_CONFIG, ConfigDef.Type.LONG, 50L, LOW, "reconnect")
        .define(CommonClientConfigs.RECONNECT_BACKOFF_MAX_MS_CONFIG, ConfigDef.Type.LONG, 1000L, LOW, "reconnect max")
        .define(CommonClientConfigs.SEND_BUFFER_CONFIG, ConfigDef.Type.INT, 128 * 1024, LOW, "send")
        .define(CommonClientConfigs.RECEIVE_BUFFER_CONFIG, ConfigDef.Type.INT, 32 * 1024, LOW, "receive")
        .define(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, ConfigDef.Type.INT, 40_000, LOW, "request")
        .define(CommonClientConfigs.SOCKET_CONNECTION_SETUP_TIMEOUT_MS_CONFIG, ConfigDef.Type.LONG, 10_000L, LOW, "setup")
        .define(CommonClientConfigs.SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS_CONFIG, ConfigDef.Type.LONG, 30_000L, LOW, "setup max")
        .define(CommonClientConfigs.CONNECTIONS_MAX_IDLE_MS_CONFIG, ConfigDef.Type.LONG, 9 * 60 * 1000L, LOW, "idle")
        .define(CommonClientConfigs.METADATA_RECOVERY_STRATEGY_CONFIG, ConfigDef.Type.STRING, "none", LOW, "recovery")
        .define(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, ConfigDef.Type.STRING, "PLAINTEXT", LOW, "security")
        .define(SaslConfigs.SASL_MECHANISM, ConfigDef.Type.STRING, SaslConfigs.DEFAULT_SASL_MECHANISM, LOW, "sasl")
        .define(CONNECT_PROTOCOL_CONFIG, ConfigDef.Type.STRING, "sessioned", LOW, "protocol")
        .define(SCHEDULED_REBALANCE_MAX_DELAY_MS_CONFIG, ConfigDef.Type.INT, 300_000, LOW, "delay");

    public DistributedConfig(Map<String, String> props) {
        super(CONFIG, props);
    }

    /** The Kafka cluster's id, which the real worker looks up with an admin client; a label only. */
    public String kafkaClusterId() {
        return "groupcoord";
    }
}
