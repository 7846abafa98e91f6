"""Classic groups (JoinGroup / SyncGroup / Heartbeat / LeaveGroup, static membership, KIP-814):
``model`` (the group), ``handlers`` (the requests, replay, timers), ``messages``."""
