"""The viewer shows the same reasons as `runs show` (it left out "not earned" and the policy
breaks), and `runs why` evidence names the change, the field and the step rather than
"graded missing_state_change"."""

from __future__ import annotations

import pytest

from castbench import evaluate
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._results.attribution import attribute
from castbench._results.report.reasons import trial_reasons
from castbench_boards.viewer.payload import trial_payload
from tests.support import invoke


@pytest.fixture(scope="module")
def failed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[TrialRecord]]:
    db = f"sqlite:///{tmp_path_factory.mktemp('reasons') / 'runs.db'}"
    result = evaluate(
        db=db, domains="retail", policy="scripted:noisy?p=0.6&recover=0", trials=2, in_process=True
    )
    records = [r for r in ResultsStore(db).trials(result.outcome.run_id) if not r.passed]
    assert records
    return db, records


def test_the_viewer_carries_the_lines_runs_show_prints(failed: tuple[str, list[TrialRecord]]) -> None:
    db, records = failed
    unearned = next(r for r in records if r.grade is not None and r.grade.unearned)
    broke = next(r for r in records if r.grade is not None and r.grade.policy_breaks)
    for record in (unearned, broke):
        reasons = trial_payload(record)["reasons"]
        assert reasons == trial_reasons(record)
        shown = " ".join(
            invoke(
                "runs",
                "show",
                "latest",
                "--task",
                record.task_id,
                "--trial",
                str(record.trial_index),
                "--db",
                db,
            ).output.split()
        )
        for reason in reasons:
            assert " ".join(reason.split())[:60] in shown, reason
    assert any(line.startswith("not earned:") for line in trial_reasons(unearned))
    assert any(line.startswith("policy broken at step") for line in trial_reasons(broke))


def test_a_missing_change_is_named_with_its_field_and_step(failed: tuple[str, list[TrialRecord]]) -> None:
    _, records = failed
    for record in records:
        blame = attribute(record)
        assert blame is not None
        assert blame.evidence.detail.strip() and not blame.evidence.detail.startswith("graded ")
        if blame.evidence.rule == "grade_category" and record.grade is not None and record.grade.diff:
            first = record.grade.diff[0]
            assert f"{first.table} {first.key}: {first.field}" in blame.evidence.detail
            assert f"(shown at step {blame.step})" in blame.evidence.detail
