"""What every new-protocol group is (KIP-848 consumer groups, the Connect draft's connect
groups, and next KIP-932's share groups): its states, and :class:`ModernGroup`, the base of the
group types' models (``modern/consumer/model.py``, ``modern/connect/model.py``).

Group states (upstream names): Empty (no member), Assigning (group epoch > assignment epoch),
Reconciling (some member not yet STABLE at the assignment epoch), Stable, Dead (deleted).
"""

from __future__ import annotations

from enum import Enum


class GroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"
