package org.apache.kafka.connect.runtime;

/**
 * Stand-in for Connect's worker configuration base: WorkerGroupMember names only its two
 * metrics-context label keys (the real class's ConfigDef covers the whole worker).
 */
public final class WorkerConfig {
    public static final String CONNECT_KAFKA_CLUSTER_ID = "connect.kafka.cluster.id";
    public static final String CONNECT_GROUP_ID = "connect.group.id";

    private WorkerConfig() {
    }
}
