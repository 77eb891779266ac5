"""Deprecated: the agent types (actions, turns, events, verdicts) are public in `castbench.agents`.

Kept for one release so that an agent written against the old path still imports (with a
`DeprecationWarning` naming the new place) instead of failing with "No module named
'castbench.agents.conversation'". Its names are the objects `castbench.agents` gives.
"""

from __future__ import annotations

import warnings

from castbench.conversation import *  # noqa: F403  the whole moved module, under its old name
from castbench.conversation import __all__  # noqa: F401

warnings.warn(
    "castbench.agents.conversation is deprecated and will be removed in a later release: "
    "import from castbench.agents instead",
    DeprecationWarning,
    stacklevel=2,
)
