"""The Ray executor, a satellite of castbench (`pip install 'castbench[ray]'`, then
`castbench eval --executor ray [--ray-address ADDR]`): a run's trials as Ray tasks on a cluster.

castbench's core names no satellite: `--executor ray` finds this package through the
`castbench.executors` entry point (`castbench._run.executors.make_executor`), and Ray is
imported only when a run starts on it (docs/scale.md).
"""

from __future__ import annotations

from castbench_ray.executor import RayExecutor, TrialKey

__all__ = ["RayExecutor", "TrialKey"]
