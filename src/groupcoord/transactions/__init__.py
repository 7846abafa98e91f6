"""The transaction coordinator (KIP-98, KIP-360, KIP-588, KIP-664): a pure, event-sourced state
machine beside the group coordinator, as Kafka keeps its ``TransactionCoordinator`` apart from the
group coordinator.

- ``state.py``: the transaction states of Kafka's ``TransactionMetadata`` and their transitions;
  the metadata of one transactional id.
- ``records.py``: the records of the transaction log (Kafka's ``__transaction_state``), encoded.
- ``config.py``: the broker configs of transactions.
- ``coordinator.py``: the handlers (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
  Describe/ListTransactions), replay, timeouts and expiration as data, the marker jobs.

No IO, no clock, no randomness: time is an argument, producer ids come from an injected source,
every state change is a record applied through ``replay``.
"""
