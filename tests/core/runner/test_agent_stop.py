"""An agent may end the conversation itself: its closing message (an explicit end, or the stop
marker in its text) ends the trial as `agent_stop`, graded like any other ending, so a correct
trial the agent ends is rewarded 1; the scripted user says goodbye when the agent does."""

from __future__ import annotations

import pytest

from castbench import evaluate
from castbench._agents.scripted.user import ScriptedUser
from castbench._base.conversation import AGENT_STOP, ReplyAction, UserTurn
from castbench._records.store import ResultsStore
from castbench._records.trial import CLEAN_ENDS, UNFINISHED_ENDS
from castbench._results.publish.verify import verify_run
from castbench.domain import Domain

TASKS = ["retail-test-0002", "retail-test-0005"]


@pytest.mark.parametrize("policy", ["ClosingOracle", "MarkerOracle"])
def test_a_correct_trial_the_agent_ends_is_rewarded_1_and_verifies(db_url: str, policy: str) -> None:
    result = evaluate(
        db=db_url,
        domains="retail",
        tasks=TASKS,
        policy=f"tests.core.closing_agents:{policy}",
        trials=1,
        in_process=True,
    )
    store = ResultsStore(db_url)
    run_id = result.outcome.run_id
    records = store.trials(run_id)
    assert len(records) == len(TASKS)
    for record in records:
        assert record.end_reason == "agent_stop", record.end_reason
        assert record.reward == 1.0 and record.grade is not None and record.grade.surface.ended_cleanly
        last = record.steps[-1]
        assert isinstance(last.action, ReplyAction) and last.action.ends
        assert isinstance(last.observation, UserTurn) and "Goodbye" in last.observation.text
        assert last.user_stop  # the scripted user took its leave too
    report = verify_run(run_id, store.config(run_id), records)
    assert report.mismatches == []


def test_the_user_never_hears_the_stop_marker() -> None:
    closing = ReplyAction(text=f"Your order is cancelled. {AGENT_STOP}")
    assert closing.ends and closing.said == "Your order is cancelled."
    assert not ReplyAction(text="Your order is cancelled.").ends
    assert ReplyAction(text="Bye", end=True).model_dump(mode="json")["end"] is True
    assert "end" not in ReplyAction(text="Hello").model_dump(mode="json")  # stored records unchanged


def test_agent_stop_is_a_clean_finished_ending() -> None:
    assert "agent_stop" in CLEAN_ENDS and "agent_stop" not in UNFINISHED_ENDS


@pytest.mark.parametrize("farewell", ["Goodbye.", "Done, good-bye!", "Thanks, have a great day!", "Bye now"])
def test_the_scripted_user_answers_a_farewell_with_its_own(retail: Domain, farewell: str) -> None:
    from castbench._agents.views import user_briefing_for

    task = retail.task(TASKS[0])
    user = ScriptedUser(user_briefing_for(retail, task, 1, retail.initial_database(task), None))
    user.open()
    reply = user.reply(farewell)
    assert reply.stop and "Goodbye" in reply.text
    assert not user.reply("Okay, let me look that up for you.").stop
