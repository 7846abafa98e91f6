"""The coordinator core: a pure, deterministic state machine (docs/design.md "The core contract").
The frame (``shard``, ``records``, ``offsets``, ``config``, ``timers``, ...) is at this level; the
group types are in ``classic/`` and ``modern/`` (``modern/consumer/``, ``modern/connect/``), the
server-side assignors in ``assignors/``; online migration between classic groups and the new
group types is ``modern/migration.py`` (the shared rules) and each type's ``migration.py``."""
