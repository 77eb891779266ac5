"""Deprecated: moved to `castbench_bridges.openenv_server`, the bridges satellite (docs/architecture.md).

Kept for one release (removed in castbench 0.2.0, `castbench.deprecation.REMOVAL`): importing
this module warns and gives the moved module itself, so its names are the same objects.
"""

from __future__ import annotations

import sys

import castbench_bridges.openenv_server
from castbench.deprecation import moved

moved("castbench.service.openenv_server", "castbench_bridges.openenv_server")
sys.modules[__name__] = castbench_bridges.openenv_server
