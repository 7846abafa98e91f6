"""Online migration between classic groups and the new group types: ``consumer`` (classic <->
consumer, KIP-848), ``connect`` (classic Connect <-> connect, the Connect draft) and ``shared``
(the policy, the refusals and the classic group value both use)."""
