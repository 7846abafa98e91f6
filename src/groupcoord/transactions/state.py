"""The transaction states and one transactional id's metadata (KIP-98; Kafka's
``TransactionState`` and ``TransactionMetadata``).

A transactional id moves through Empty -> Ongoing -> PrepareCommit / PrepareAbort ->
CompleteCommit / CompleteAbort -> Ongoing (the next transaction) or Empty (a new epoch), and
Dead once expired (``transactional.id.expiration.ms``). :data:`VALID_PREVIOUS` is Kafka's
``validPreviousStates`` table; :func:`check_transition` refuses any other move (a bug, never a
client's fault: the handlers answer the protocol's error before they try one).

PrepareEpochFence is Kafka's transient state of a coordinator aborting a transaction another
producer left open (InitProducerId of a new producer, or a timeout): Kafka never writes it to
the log, it writes PrepareAbort with the bumped epoch. Here too: the state exists for
completeness of the table and is never in a record.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["MAX_PRODUCER_EPOCH", "NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "VALID_PREVIOUS",
           "TransactionMetadata", "TransactionState", "check_transition"]

#: ``Short.MaxValue``: an epoch that would pass ``MAX_PRODUCER_EPOCH - 1`` rotates the producer id
#: instead (Kafka's ``isProducerEpochExhausted``).
MAX_PRODUCER_EPOCH = 32767
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


class TransactionState(Enum):
    """Kafka's states, with their log ids (the ``State`` byte of ``TransactionLogValue``) and the
    names DescribeTransactions / ListTransactions show."""

    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def label(self) -> str:
        return self.value[1]

    @classmethod
    def of_id(cls, state_id: int) -> TransactionState:
        for s in cls:
            if s.id == state_id:
                return s
        raise ValueError(f"unknown transaction state id {state_id}")

    @classmethod
    def of_label(cls, label: str) -> TransactionState | None:
        for s in cls:
            if s.label == label:
                return s
        return None

    @property
    def completed(self) -> bool:
        return self in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @property
    def preparing(self) -> bool:
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)


S = TransactionState

#: Kafka's ``TransactionState.validPreviousStates`` (the transaction version 1 flow: no abort of
#: an Empty or completed transaction, which only transaction version 2 has).
VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


def check_transition(old: TransactionState, new: TransactionState) -> None:
    if old not in VALID_PREVIOUS[new]:
        raise AssertionError(f"transaction state {old.label} cannot move to {new.label}")


@dataclass(slots=True, frozen=True)
class TransactionMetadata:
    """One transactional id, as its newest record says (Kafka's ``TransactionLogValue``):
    producer id and epoch, the epoch before the last bump (KIP-360 / KIP-588 retries), the
    producer id before a rotation, the timeout, the state, the partitions and the groups
    (AddOffsetsToTxn) of the transaction, when it started and when it last changed."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    previous_producer_id: int
    timeout_ms: int
    state: TransactionState
    #: ``(topic, partition)``, sorted.
    partitions: tuple[tuple[str, int], ...] = ()
    #: Group ids whose offsets the transaction commits (AddOffsetsToTxn), sorted.
    groups: tuple[str, ...] = ()
    #: When the current transaction started (first AddPartitions/AddOffsets); -1: none.
    start_ms: int = -1
    last_update_ms: int = -1

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_PRODUCER_EPOCH - 1
