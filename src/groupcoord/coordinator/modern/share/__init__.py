"""Share groups (KIP-932): the share group type on the new-protocol base (``modern/``)."""
