"""`castbench verify` of a run on a split other than the default one: τ² telecom's `full` split
holds 2,285 tasks its default split does not; every trial of such a run failed verify with
"no task ... in domain" (found by bench/scale_trials.py, issue 40)."""

from __future__ import annotations

from pathlib import Path

from castbench.domain import load_domain
from tests.support import invoke

TASK = "tau2-telecom-[mms_issue]airplane_mode_on|bad_network_preference[PERSONA:None]"


def test_a_full_split_run_verifies(tmp_path: Path) -> None:
    domain = load_domain("tau2-telecom")
    assert TASK not in {task.id for task in domain.tasks()}  # the case: not in the default split
    db = str(tmp_path / "runs.db")
    ran = invoke(
        "eval",
        "--domain",
        "tau2-telecom",
        "--split",
        "full",
        "--tasks",
        TASK,
        "--trials",
        "2",
        "--policy",
        "oracle",
        "--db",
        db,
    )
    assert ran.exit_code == 0, ran.output
    verified = invoke("verify", "latest", "--db", db)
    assert verified.exit_code == 0, verified.output
    assert "all 2 trials re-executed and re-graded as stored" in verified.output


def test_tasks_looked_up_one_at_a_time_are_the_splits_tasks() -> None:
    """A summary looks each trial's task up by id (`Domain.task`): through the pack's index, the
    same tasks as the split converted at once, in any order of look-ups."""
    from castbench_tau2.telecom_domain import tau2_telecom_domain

    converted = tau2_telecom_domain()
    whole = converted.tasks("full")[::7]  # the split converted at once
    one_by_one = tau2_telecom_domain()
    for task in reversed(whole):
        assert one_by_one.task(task.id) == converted.task(task.id)
    assert [t.id for t in one_by_one.tasks("full")[::7]] == [t.id for t in whole]
