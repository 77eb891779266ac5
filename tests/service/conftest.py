"""Trials served over MCP in these tests: a retail episode, reset and ready for an outside agent."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from castbench._agents.registry import resolve
from castbench._trial.episode import AgentSet, Episode, Limits
from castbench._trial.spec import TrialSpec
from castbench.domain import Domain


@pytest.fixture
def open_episode(retail: Domain) -> Callable[..., Episode]:
    """`open_episode(task_id, critic=None, **settings)`: trial 0 of that retail task, reset, with
    the scripted user and the critic named (an import path), its policy outside castbench."""

    def make(task_id: str, critic: str | None = None, **settings: object) -> Episode:
        task = retail.task(task_id)
        agents = AgentSet(
            None,
            resolve("user", "scripted"),
            None if critic is None else resolve("critic", critic, in_process=True),
        )
        spec = TrialSpec(retail, task, 0, 1, agents, retail.replay(task), Limits(max_steps=200), **settings)  # type: ignore[arg-type]
        episode = Episode(spec)
        assert episode.reset() is not None
        return episode

    return make
