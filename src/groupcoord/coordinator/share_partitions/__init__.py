"""Share partitions (KIP-932 "Share-partition"): the records of one topic partition as a share
group consumes them, each acquired by one member at a time, and the durable share state (what
Kafka's share coordinator persists). Pure: time is an argument, nothing does IO.

``partition.py`` holds the state machine, ``records.py`` the durable share-state record and its
encoding, ``config.py`` the group configurations a share partition reads.
"""
