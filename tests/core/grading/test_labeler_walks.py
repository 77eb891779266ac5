"""The labeler walks each trial's conversation once, carrying on from where the trial's last
action left it (on the model loop, trials interleave on one thread): what it derives from a
conversation is the same whether it carried on or walked it from scratch."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from castbench._base.conversation import Event
from castbench._grading import labeler
from castbench._records.store import ResultsStore
from castbench._run.api import build_config
from castbench._run.engine import run_eval
from castbench._trial import replay
from castbench.domain import load_domain

TASKS = [f"retail-test-{index:04d}" for index in range(1, 121, 10)]


def _derived(trail: Any) -> tuple[object, ...]:
    return (trail.authenticated, trail.revealed, trail.since_last_write)


def test_interleaved_trials_derive_what_each_alone_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, agents = build_config(
        domains="retail", policy="scripted:noisy?p=0.4", critic="rules", trials=1, seed=3, tasks=TASKS
    )
    store = ResultsStore(f"sqlite:///{tmp_path}/runs.db")
    records = store.trials(run_eval(config, agents, store).run_id)
    domain = load_domain("retail")
    seen: list[tuple[str, tuple[Event, ...]]] = []
    real = replay.label_action

    def recording(
        domain: Any,
        task: Any,
        action: Any,
        db: Any,
        conversation: Sequence[Event],
        confirm: Any = None,
        run: Any = None,
    ) -> Any:
        seen.append((task.id, tuple(conversation)))
        return real(domain, task, action, db, conversation, confirm, run)

    monkeypatch.setattr(replay, "label_action", recording)
    for record in records:  # every labelled action's conversation, as `castbench verify` sees it
        task = domain.task(record.task_id)
        _, problems = replay.replay_trial(
            domain, task, record, domain.replay(task), run_seed=3, user="scripted", traits={},
            grading="castbench", critic="rules",
        )  # fmt: skip
        assert problems == []
    by_task = [[c for t, c in seen if t == task_id] for task_id in TASKS]
    interleaved = [c for group in itertools.zip_longest(*by_task) for c in group if c is not None]
    assert len(interleaved) > 100
    fresh = domain.fresh_database()
    task = domain.task(TASKS[0])
    carried = [_derived(labeler._trail(c, domain, task, fresh)) for c in interleaved]
    alone = []
    for conversation in interleaved:
        labeler._WALKS.__dict__.clear()
        alone.append(_derived(labeler._trail(conversation, domain, task, fresh)))
    assert carried == alone
