"""Deprecated: moved to `castbench_bridges.inspect_log`, the bridges satellite (docs/architecture.md).

Kept for one release (removed in castbench 0.2.0, `castbench.deprecation.REMOVAL`): importing
this module warns and gives the moved module itself, so its names are the same objects.
"""

from __future__ import annotations

import sys

import castbench_bridges.inspect_log
from castbench.deprecation import moved

moved("castbench.publish.inspect_log", "castbench_bridges.inspect_log")
sys.modules[__name__] = castbench_bridges.inspect_log
