"""What the new-protocol group types share (KIP-848 and the Connect draft): the base of their
models (``group``: ``ModernGroup`` and the group states; ``member``: ``ModernGroupMember``, the
member states and the leave epochs), the base of their handlers (``group_manager``),
``reconciliation``, the client-side assignment flow (``client_assignment``), ``membership``,
``subscription``, the translation of classic members (``classic_bridge``) and the shared rules
of online migration (``migration``). The group types themselves are ``consumer/`` and
``connect/``; the next one (KIP-932 share groups) would be ``share/`` on the same bases."""
