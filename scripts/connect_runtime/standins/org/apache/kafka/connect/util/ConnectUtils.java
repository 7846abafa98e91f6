package org.apache.kafka.connect.util;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collector;
import java.util.stream.Collectors;

/**
 * Stand-in for Connect's utility class with only the collection helpers the Connect group
 * membership (IncrementalCooperativeAssignor) calls, written from their signatures and
 * documented behaviour; the real class also names WorkerConfig and the connector API.
 */
public final class ConnectUtils {
    private ConnectUtils() {
    }

    /** A map with the same keys, each value passed through {@code transformation}. */
    public static <K, I, O> Map<K, O> transformValues(Map<K, I> map, Function<I, O> transformation) {
        return map.entrySet().stream()
            .collect(Collectors.toMap(Map.Entry::getKey, e -> transformation.apply(e.getValue())));
    }

    /** The elements of all the collections, in one list. */
    public static <I> List<I> combineCollections(Collection<Collection<I>> collections) {
        return combineCollections(collections, Function.identity());
    }

    /** The elements of the collection each item yields, in one list. */
    public static <I, T> List<T> combineCollections(Collection<I> collection, Function<I, Collection<T>> extractCollection) {
        return combineCollections(collection, extractCollection, Collectors.toList());
    }

    /** The elements of the collection each item yields, gathered by {@code collector}. */
    public static <I, T, C> C combineCollections(Collection<I> collection, Function<I, Collection<T>> extractCollection,
                                                 Collector<T, ?, C> collector) {
        return collection.stream().flatMap(item -> extractCollection.apply(item).stream()).collect(collector);
    }
}
