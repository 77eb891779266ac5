"""Deprecated: moved to `castbench_boards.render`, the boards satellite (docs/architecture.md).

Kept for one release (removed in castbench 0.2.0, `castbench.deprecation.REMOVAL`): importing
this module warns and gives the moved module itself, so its names are the same objects.
"""

from __future__ import annotations

import sys

import castbench_boards.render
from castbench.deprecation import moved

moved("castbench.publish.render", "castbench_boards.render")
sys.modules[__name__] = castbench_boards.render
