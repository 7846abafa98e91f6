package org.apache.kafka.connect.runtime;

import java.util.Map;

/**
 * Stand-in for Connect's config-provider transformer, which ClusterConfigState names: the
 * membership's config snapshots are built without one (null), so nothing calls it. The real
 * class needs the Worker and the config providers.
 */
public class WorkerConfigTransformer {
    public Map<String, String> transform(Map<String, String> configs) {
        return configs;
    }

    public Map<String, String> transform(String connectorName, Map<String, String> configs) {
        return configs;
    }
}
