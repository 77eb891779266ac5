"""Deprecated: moved to `castbench_boards.profile`, the boards satellite (docs/architecture.md).

Kept for one release (removed in castbench 0.2.0, `castbench.deprecation.REMOVAL`): importing
this module warns and gives the moved module itself, so its names are the same objects.
"""

from __future__ import annotations

import sys

import castbench_boards.profile
from castbench.deprecation import moved

moved("castbench.publish.profile", "castbench_boards.profile")
sys.modules[__name__] = castbench_boards.profile
