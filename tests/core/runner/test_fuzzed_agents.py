"""No agent behaviour leaves its own trial unscored: an agent that calls every tool with awkward
values (lone surrogates, NUL, NaN, huge integers, a 4400-digit integer in raw argument text) gets
every trial scored, never a `harness_error`, under a critic too, and the run summarises and
verifies. Found this way: the calculator crashed on a surrogate (a `harness_error` any agent could
trigger on the trials it was failing) and the critic report on a 4400-digit integer (the whole
run's summary failed)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from castbench._base.conversation import ToolCallAction, canonical_action
from castbench._domain.common_tools import evaluate_arithmetic
from castbench._domain.tools import ToolError
from castbench._records.store import ResultsStore
from castbench._records.store.export import export_run
from castbench._results.publish.verify import verify_run
from castbench._run.api import evaluate
from castbench.domain import load_domain
from tests.support import DOMAINS, sqlite_url

FUZZ = "tests.core.poison_agents:FuzzPolicy"


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_fuzzing_agent_gets_every_trial_scored(domain: str, tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    tasks = [task.id for task in load_domain(domain).tasks("test")[:2]]
    result = evaluate(
        db=db, domains=domain, tasks=tasks, trials=2, policy=FUZZ, critic="rules", in_process=True
    )
    store = ResultsStore(db)
    records = store.trials(result.outcome.run_id)
    assert Counter(r.status for r in records) == {"scored": 4}, [r.error for r in records]
    assert result.summary.status == "complete"
    exported = export_run(store, result.outcome.run_id)
    report = verify_run(exported.run_id, exported.config, exported.trials, exported.config_hash)
    assert report.ok, report.describe()


@pytest.mark.parametrize(
    "expression", ["\ud800", "1 + \x00", "(" * 100_000 + "1" + ")" * 100_000, "9" * 5000]
)
def test_the_calculator_answers_any_expression_with_an_error_not_a_crash(expression: str) -> None:
    with pytest.raises(ToolError, match="not an arithmetic expression"):
        evaluate_arithmetic(expression)


def test_raw_arguments_no_reader_takes_are_kept_as_text() -> None:
    text = '{"n": ' + "9" * 4400 + "}"
    assert canonical_action(ToolCallAction(name="f", arguments=text)) == f"f({text})"
