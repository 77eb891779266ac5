"""`castbench runs why` on trials that passed plain and failed strict (#55): the rule, the write
and the user turn it looked at; a confirmation break filed as a domain violation, never as a
hallucination; and a run whose every trial passed plain but some failed strict never reads
"every trial passed"."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from castbench._agents.registry import resolve
from castbench._base.conversation import ToolCallAction
from castbench._records.config import RunConfig
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._trial.episode import AgentSet, Episode
from castbench._trial.seeds import trial_seed
from castbench._trial.spec import TrialSpec
from castbench.domain import load_domain
from castbench_analyses.why import STRICT_RULE, strict_failure, user_turn_before
from tests.support import invoke, sqlite_url

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench(name: str) -> ModuleType:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def unconfirmed() -> list[TrialRecord]:
    """Trials of a writer that makes the oracle's writes without ever asking (the corpus's
    `unconfirmed-guesser`): each passes plain and fails strict on a confirmation break."""
    _bench("honest_styles")
    corpus = _bench("validity_corpus")
    domain = load_domain("retail")
    agents = AgentSet(policy=corpus.corpus_spec("unconfirmed-guesser"), user=resolve("user", "scripted"))
    records = []
    for task in domain.tasks("test")[:8]:
        if not any(c.actor == "agent" and domain.toolkit.is_write(c.name) for c in task.actions):
            continue
        seed = trial_seed(0, domain.name, task.id, 0)
        episode = Episode(TrialSpec(domain, task, 0, seed, agents, domain.replay(task)))
        try:
            episode.play()
        finally:
            episode.close()
        record = episode.record()
        if record.passed and record.grade is not None and record.grade.strict_reward == 0.0:
            records.append(record)
    assert len(records) >= 2
    return records


def test_a_confirmation_break_is_a_domain_violation_with_the_write_and_the_user_turn(
    unconfirmed: list[TrialRecord],
) -> None:
    for record in unconfirmed:
        found = strict_failure(record)
        assert found is not None
        assert found.cause == "domain_violation" and found.party == "agent"
        assert found.evidence.rule == STRICT_RULE
        assert found.evidence.detail.startswith("no explicit confirmation"), found.evidence.detail
        step = next(s for s in record.steps if s.index == found.step)
        assert isinstance(step.action, ToolCallAction) and found.write.startswith(f"{step.action.name}(")
        assert found.user_turn == user_turn_before(record, found.step) and found.user_turn
        assert f"{found.user_turn!r}" in found.evidence.detail


def test_runs_why_on_a_run_with_strict_failures_only(unconfirmed: list[TrialRecord], tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "runs.db")
    store = ResultsStore(url)
    run_id, _ = store.open_run(RunConfig(domains={"retail": "2-0"}, policy="p", trials=1), {}, fresh=True)
    for record in unconfirmed:
        assert store.add_trial(run_id, record)
    result = invoke("runs", "why", run_id, "--db", url)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "every trial passed plain" in text and f"{len(unconfirmed)} failed strict" in text
    assert f"run {run_id}: every trial passed\n" not in result.output
    assert "domain_violation" in text and "hallucination" not in text
    assert "no explicit confirmation" in text
    rows = json.loads(invoke("runs", "why", run_id, "--db", url, "--json").output)
    assert len(rows) == len(unconfirmed)
    assert {(row["grading"], row["cause"], row["rule"]) for row in rows} == {
        ("strict", "domain_violation", STRICT_RULE)
    }
    assert all(row["write"] and row["user_turn"] for row in rows)
