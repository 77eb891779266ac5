"""Deprecated: the Ray executor moved to its own package, `castbench_ray` (the `ray` extra).

Kept for one release (removed in castbench 0.2.0, `castbench.deprecation.REMOVAL`): importing
this module warns and gives the moved module itself, so its names are the same objects.
"""

from __future__ import annotations

import sys

import castbench_ray.executor
from castbench.deprecation import moved

moved("castbench.runner.executors.ray", "castbench_ray")
sys.modules[__name__] = castbench_ray.executor
