"""Deprecated: the agent types (actions, turns, events, verdicts) are public in `castbench.agents`.

Kept for one release (removed in castbench 0.2.0, `castbench.deprecation.REMOVAL`) so that an agent
written against the old path still imports, with a `DeprecationWarning` naming the new place,
instead of failing with "No module named 'castbench.agents.conversation'". The warning reaches the
console through the CLI, also from an agent's worker process (`castbench.deprecation`). Its names
are the objects `castbench.agents` gives.
"""

from __future__ import annotations

from castbench.conversation import *  # noqa: F403  the whole moved module, under its old name
from castbench.conversation import __all__  # noqa: F401
from castbench.deprecation import moved

moved("castbench.agents.conversation", "castbench.agents")
