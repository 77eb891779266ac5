"""Parity with τ's own code: the same trajectory graded by τ's env and by castbench's harness.

τ's side (`TauReference`) runs it through the package's env (`reset`, `step`, then
`calculate_reward`) with a stub user and no model; castbench's side, the trajectories and their
perturbations are castbench's shared machinery (`castbench_authoring.parity`).
"""

from __future__ import annotations

from castbench.domain import Trajectory
from castbench_tau.domain import TauDomain
from castbench_tau.toolkit import frozen_clock

__all__ = ["TauReference"]


# -- τ's side ------------------------------------------------------------------------------
class _StubUser:
    """What τ's env needs of a user, without a model."""

    def reset(self, instruction: str | None = None) -> str:
        return ""

    def step(self, content: str) -> str:
        return "ok"

    def get_total_cost(self) -> float:
        return 0.0


class TauReference:
    """τ's own env for one domain, reused across trajectories (each `reset` reloads its data)."""

    def __init__(self, domain: TauDomain) -> None:
        source = domain.source
        assert source is not None
        self._source = source
        self._env = source.env_class(user_strategy="human", task_split="test", task_index=0)
        self._env.user = _StubUser()
        self._action = __import__("tau_trait.types", fromlist=["Action"]).Action
        self._now = domain.now

    def run(self, split: str, index: int, trajectory: Trajectory) -> tuple[float, list[str]]:
        """τ's reward for the trajectory, and what its tools answered, on the clock castbench's
        sandboxes give τ's tools (a cancellation is stamped with the day)."""
        with frozen_clock(self._now):
            return self._run(split, index, trajectory)

    def _run(self, split: str, index: int, trajectory: Trajectory) -> tuple[float, list[str]]:
        env = self._env
        env.tasks = self._source.raw_tasks[split]
        env.reset(task_index=index)
        observations = []
        for step in trajectory:
            if step.kind == "call":
                action = self._action(name=step.name, kwargs=step.kwargs)
            else:
                action = self._action(name="respond", kwargs={"content": step.text})
            response = env.step(action)
            if step.kind == "call":
                observations.append(response.observation)
            if response.done:
                return float(response.reward), observations
        return float(env.calculate_reward().reward), observations

    def reward(self, split: str, index: int, trajectory: Trajectory) -> float:
        return self.run(split, index, trajectory)[0]
