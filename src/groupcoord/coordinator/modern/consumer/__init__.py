"""KIP-848 consumer groups: ``model``, ``handlers``, ``messages``, and ``classic_members`` (members
on the classic protocol inside a consumer group, online migration)."""
