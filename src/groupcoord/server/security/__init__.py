"""Security of the wire server: listeners with TLS and SASL (authentication) and ACLs
(authorization), named and behaving as Apache Kafka's."""
