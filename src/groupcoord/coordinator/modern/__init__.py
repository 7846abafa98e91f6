"""What the new-protocol group types share (KIP-848 and the Connect draft): the base of their
handlers (``group_manager``), ``reconciliation``, ``target_assignment``, the client-side
assignment flow (``client_assignment``), ``membership``, ``subscription``, and the translation of
classic members (``classic_bridge``). The group types themselves are ``consumer/`` and
``connect/``."""
