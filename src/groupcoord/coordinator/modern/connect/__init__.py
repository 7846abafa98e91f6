"""Connect groups (the Connect draft): ``model``, ``handlers``, ``messages``, and ``classic_workers``
(Connect workers on the classic protocol inside a connect group, online migration)."""
