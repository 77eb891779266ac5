"""Deprecated: moved to `castbench_bridges.mcp_cmd`, the bridges satellite (docs/architecture.md).

Kept for one release (removed in castbench 0.2.0, `castbench.deprecation.REMOVAL`): importing
this module warns and gives the moved module itself, so its names are the same objects.
"""

from __future__ import annotations

import sys

import castbench_bridges.mcp_cmd
from castbench.deprecation import moved

moved("castbench.cli.mcp_cmd", "castbench_bridges.mcp_cmd")
sys.modules[__name__] = castbench_bridges.mcp_cmd
