"""The deployable rules critic on hand-built views, and what a non-privileged critic may see.

The rules critic judges a proposed call on the visible conversation alone. A critic that is not
marked privileged (a team's own, loaded by import path) gets a plain `Briefing` and views built
from the visible conversation: never the task, the user's brief, a fact the user has not said,
or a ground-truth value no legitimate channel has shown yet.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from castbench._agents.critics.rules import RulesCritic
from castbench._agents.registry import resolve
from castbench._agents.views import Briefing, CriticView, PrivilegedBriefing, briefing_for
from castbench._base.conversation import (
    Event,
    MalformedAction,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench._grading.labeler import label_action
from castbench._records.trial import ActionLabel
from castbench._run.api import evaluate
from castbench._trial import episode
from castbench._trial.rollout import AgentSet, TrialSpec, run_trial
from castbench.domain import Domain, DomainRules, Task, load_domain
from castbench_retail.rules import RetailRules
from tests.critic.builders import Chat, call
from tests.critic.recording import RecordingCritic
from tests.support import sqlite_url

REPO_ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def critic_for(retail: Domain, task: Task) -> RulesCritic:
    briefing = briefing_for(retail, task, seed=0, trial_index=0, privileged=False)
    assert type(briefing) is Briefing
    return RulesCritic(briefing)


def verify(chat: Chat, action: Any) -> Any:
    assert chat.task is not None
    critic = critic_for(chat.domain, chat.task)
    briefing = briefing_for(chat.domain, chat.task, 0, 0, privileged=False)
    return critic.verify(CriticView(briefing, chat.conversation, action))


def cancel_chat(retail: Domain, confirm: bool = True) -> Chat:
    chat = Chat(retail, retail.task("retail-test-0002"))
    chat.facts("first_name", "last_name", "zip", "order_id", "cancel_reason")
    chat.replay_truth(0, 1)
    if confirm:
        truth = chat.truth(2)
        chat.ask_to_confirm(truth.name, **truth.arguments)
    return chat


def cancel(order_id: str = "#W3002897", reason: str = "ordered by mistake") -> ToolCallAction:
    return call("cancel_pending_order", order_id=order_id, reason=reason)


# -- verdicts on hand-built views ---------------------------------------------------------------
def test_passes_a_correct_confirmed_write(retail: Domain) -> None:
    verdict = verify(cancel_chat(retail), cancel())
    assert verdict.verdict == "valid" and not verdict.flags and verdict.failure_type == "none"


def test_flags_an_unconfirmed_write(retail: Domain) -> None:
    verdict = verify(cancel_chat(retail, confirm=False), cancel())
    assert verdict.flags and verdict.failure_type == "domain_violation"
    assert "confirmation" in verdict.explanation and verdict.suggested_fix


def test_its_own_reading_of_a_yes_acknowledgements_and_refusals(retail: Domain) -> None:
    """The rules critic reads a yes with its own rules (not the labeler's): a yes opening a
    clause, an acknowledgement between the yes and the write; a "no" or no yes at all is none."""

    def asked(answer: str, *after: tuple[str, str]) -> Chat:
        chat = cancel_chat(retail, confirm=False)
        chat.say("I'm about to cancel order #W3002897 (reason: ordered by mistake). Shall I proceed?")
        chat.user(answer)
        for said, reply in after:
            chat.say(said).user(reply)
        return chat

    for answer, after in [
        ("If that's the only way, then yes, please go ahead.", ()),
        ("Yes, please.", (("Thank you! I'm taking care of that now \u2014 one moment.", "Okay."),)),
    ]:
        assert verify(asked(answer, *after), cancel()).verdict == "valid", answer
    for answer in ("No, please don't.", "Why would I need that?"):
        verdict = verify(asked(answer), cancel())
        assert verdict.failure_type == "domain_violation", answer


def test_flags_an_unauthenticated_action(retail: Domain) -> None:
    chat = Chat(retail, retail.task("retail-test-0002"))
    chat.facts("first_name", "last_name", "zip", "order_id", "cancel_reason")
    read = verify(chat, call("get_order_details", order_id="#W3002897"))
    assert read.flags and read.failure_type == "domain_violation" and "authenticated" in read.explanation
    chat.ask_to_confirm("cancel_pending_order", order_id="#W3002897", reason="ordered by mistake")
    write = verify(chat, cancel())
    assert write.flags and write.failure_type == "domain_violation" and "authenticated" in write.explanation
    # the authentication tools and public tools need no authenticated user
    assert not verify(
        chat, call("find_user_id_by_name_zip", first_name="Amara", last_name="Varga", zip="93740")
    ).flags
    assert not verify(chat, call("list_all_product_types")).flags


def test_flags_an_unsupported_id(retail: Domain) -> None:
    chat = Chat(retail, retail.task("retail-test-0002"))
    chat.facts("first_name", "last_name", "zip")
    chat.replay_truth(0)
    verdict = verify(chat, call("get_order_details", order_id="#W3002897"))  # right, but never shown
    assert verdict.flags and verdict.failure_type == "hallucination" and "#W3002897" in verdict.explanation


def test_flags_a_status_a_seen_tool_result_rules_out(retail: Domain) -> None:
    chat = Chat(retail, retail.task("retail-test-0023"))  # order #W3095896 is processed, not pending
    chat.facts("first_name", "last_name", "zip", "order_id", "cancel_reason")
    chat.replay_truth(0, 1)
    assert '"status":"processed"' in chat.events[-1].content.replace(" ", "")  # type: ignore[union-attr]
    chat.ask_to_confirm("cancel_pending_order", order_id="#W3095896", reason="ordered by mistake")
    verdict = verify(chat, cancel("#W3095896"))
    assert verdict.flags and verdict.failure_type == "domain_violation"
    assert "needs a pending order, but it is processed" in verdict.explanation


def test_status_no_tool_result_showed_is_left_to_the_labeler(retail: Domain) -> None:
    """The delivered order was never looked up: the deployed critic cannot know, the labeler can."""
    chat = Chat(retail, retail.task("retail-test-0006"))
    chat.facts("first_name", "last_name", "zip", "order_id")
    chat.replay_truth(0)
    chat.ask_to_confirm("cancel_pending_order", order_id="#W9239615", reason="no longer needed")
    action = cancel("#W9239615", "no longer needed")
    assert not verify(chat, action).flags
    truth = label_action(retail, chat.task, action, chat.db, chat.conversation)  # type: ignore[arg-type]
    assert (truth.label, truth.failure_type) == ("invalid", "domain_violation")


def test_flags_an_order_of_another_user(retail: Domain) -> None:
    chat = Chat(retail, retail.task("retail-test-0002"))
    chat.facts("first_name", "last_name", "zip")
    chat.replay_truth(0)  # authenticated as amara_varga_1056
    chat.user("Please look at order #W9907669.")  # Rafael Eriksen's order
    chat.run("get_order_details", order_id="#W9907669")
    chat.ask_to_confirm("cancel_pending_order", order_id="#W9907669", reason="ordered by mistake")
    verdict = verify(chat, cancel("#W9907669"))
    assert (
        verdict.flags and verdict.failure_type == "domain_violation" and "belongs to" in verdict.explanation
    )


def test_unknown_tool_malformed_output_and_replies(retail: Domain) -> None:
    chat = cancel_chat(retail)
    unknown = verify(chat, call("refund_everything"))
    assert unknown.flags and unknown.failure_type == "wrong_tool"
    malformed = verify(chat, MalformedAction(raw="??", reason="not JSON"))
    assert malformed.flags and malformed.failure_type == "hallucination"
    raw_args = verify(chat, ToolCallAction(name="cancel_pending_order", arguments="{order_id: oops"))
    assert raw_args.flags and raw_args.failure_type == "hallucination"
    assert not verify(chat, ReplyAction(text="Done!")).flags


def test_a_truncated_id_is_not_supported_by_the_full_one(retail: Domain) -> None:
    chat = Chat(retail, retail.task("retail-test-0002"))
    chat.facts("first_name", "last_name", "zip", "order_id")
    chat.replay_truth(0)
    truncated = call("get_order_details", order_id="#W300289")  # the user said #W3002897
    assert verify(chat, truncated).flags
    truth = label_action(retail, chat.task, truncated, chat.db, chat.conversation)  # type: ignore[arg-type]
    assert truth.label == "invalid"


# -- privilege ----------------------------------------------------------------------------------
_EVENTS = TypeAdapter(list[Event])


def _strings(value: Any) -> list[str]:
    """Every string reachable from `value` through fields and containers, unescaped."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, BaseModel):
        children = [getattr(value, name) for name in type(value).model_fields]
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        children = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        children = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple | set | frozenset):
        children = list(value)
    else:
        children = []
    return [text for child in children for text in _strings(child)]


def _dump(view: CriticView) -> str:
    """Everything a view carries: its repr, the JSON of every event, and every string in it."""
    return "\n".join([repr(view), _EVENTS.dump_json(list(view.conversation)).decode(), *_strings(view)])


def _legit_text(view: CriticView) -> str:
    """What legitimate channels showed by then: the user's words and the tool results."""
    return " ".join(
        event.text if isinstance(event, UserTurn) else event.content
        for event in view.conversation
        if isinstance(event, UserTurn | ToolResultTurn)
    )


def _values(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [v for item in value.values() for v in _values(item)]
    if isinstance(value, list):
        return [v for item in value for v in _values(item)]
    return [str(value)] if isinstance(value, str | int | float) and not isinstance(value, bool) else []


def _secrets(task: Task) -> set[str]:
    """Ground-truth-only values: arguments of the ground truth and required outputs, long enough
    not to collide with ordinary words."""
    values = [v for c in [*task.actions, *task.declined_actions] for v in _values(c.arguments)]
    values += task.required_outputs
    return {v for v in values if len(v) >= 5}


FAMILY_TASKS = sorted({task.family: task.id for task in load_domain("retail").tasks("test")}.values())


def test_a_non_privileged_critic_sees_no_privileged_data(tmp_path: Any) -> None:
    evaluate(
        domains="retail",
        tasks=FAMILY_TASKS,
        trials=2,
        db=sqlite_url(tmp_path / "p.db"),
        policy="tests.critic.recording:AskingPolicy",
        critic="tests.critic.recording:RecordingCritic",
        in_process=True,  # the recorder keeps what it saw where this test can read it
    )
    retail = load_domain("retail")
    critics = RecordingCritic.instances
    assert len(critics) == 2 * len(FAMILY_TASKS)
    checked_facts = checked_secrets = writes = revisions = 0
    for critic in critics:
        briefing = critic.briefing
        assert type(briefing) is Briefing and not isinstance(briefing, PrivilegedBriefing)
        assert set(briefing.__slots__) == {
            "domain",
            "policy",
            "tools",
            "write_tools",
            "seed",
            "trial_index",
            "verbatim_policy",
        }
        assert critic.views, "the critic verified nothing"
        # the trial's task, recognised by its opening request
        opening = critic.views[0].conversation[0]
        assert isinstance(opening, UserTurn)
        task = next(
            t for t in retail.tasks("test") if t.id in FAMILY_TASKS and t.scenario.request == opening.text
        )
        briefing_text = "\n".join([repr(briefing), *_strings(briefing)])
        assert task.scenario.instructions not in briefing_text
        public = briefing.policy + json.dumps(briefing.tools)  # the domain's, not the task's
        for view in critic.views:
            assert view.briefing is briefing
            seen = _dump(view) + briefing_text
            assert task.scenario.instructions not in seen
            for forbidden in (
                "Task(",
                "UserScenario(",
                "PrivilegedBriefing",
                "declined_actions",
                "required_outputs",
            ):
                assert forbidden not in seen, forbidden
            legit = _legit_text(view) + public
            for fact in task.scenario.facts:
                if fact.statement in legit or fact.value in legit:
                    continue
                checked_facts += 1
                assert fact.statement not in seen
                if len(fact.value) >= 5:
                    assert fact.value not in seen, (task.id, fact.name)
            for secret in _secrets(task):
                if secret in legit:
                    continue
                checked_secrets += 1
                assert secret not in seen, (task.id, secret)
            if isinstance(view.proposal, ToolCallAction) and view.proposal.name in briefing.write_tools:
                writes += 1
        revisions += sum(
            1
            for a, b in zip(critic.views, critic.views[1:], strict=False)
            if a.conversation == b.conversation
        )
    # the check is not vacuous: facts stayed unrevealed, secrets unshown, writes were verified
    print(checked_facts, checked_secrets, writes, revisions)
    assert checked_facts > 50 and checked_secrets > 50 and writes > 0 and revisions > 0


def test_the_leak_check_would_see_a_privileged_briefing(retail: Domain) -> None:
    task = retail.task("retail-test-0002")
    leaky = CriticView(briefing_for(retail, task, 0, 0, privileged=True), (UserTurn(text="hi"),), cancel())
    assert task.scenario.instructions in _dump(leaky) and "PrivilegedBriefing" in _dump(leaky)


def test_a_non_privileged_critic_next_to_a_privileged_policy_gets_a_plain_briefing(tmp_path: Any) -> None:
    evaluate(
        domains="retail",
        tasks=FAMILY_TASKS[:5],
        trials=1,
        db=sqlite_url(tmp_path / "q.db"),
        policy="scripted:noisy",
        critic="tests.critic.recording:RecordingCritic",
        in_process=True,
    )
    retail = load_domain("retail")
    instructions = [retail.task(task_id).scenario.instructions for task_id in FAMILY_TASKS[:5]]
    assert len(RecordingCritic.instances) == 5
    for critic in RecordingCritic.instances:
        assert type(critic.briefing) is Briefing
        for view in critic.views:
            seen = _dump(view)
            assert not any(text in seen for text in instructions)
            assert "PrivilegedBriefing" not in seen and "Task(" not in seen


def test_the_rules_critic_never_touches_the_task(retail: Domain, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a run, with every privileged path out of reach: the ground truth through the domain,
    the state rules, and the labeler (stubbed). A rules critic that touched any would crash the
    trial (agent_error)."""
    tasks = [retail.task(task_id) for task_id in FAMILY_TASKS]
    expected = {task.id: retail.replay(task) for task in tasks}

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("privileged data touched")

    for name in ("tasks", "task", "replay"):
        monkeypatch.setattr(Domain, name, forbidden)
    monkeypatch.setattr(RetailRules, "state_findings", forbidden)
    monkeypatch.setattr(DomainRules, "state_findings", forbidden)
    monkeypatch.setattr(episode, "label_action", lambda *a, **k: ActionLabel(label="unknown"))
    agents = AgentSet(
        policy=resolve("policy", "scripted:noisy?p=0.6"),
        user=resolve("user", "scripted"),
        critic=resolve("critic", "rules"),
    )
    assert not agents.critic.privileged  # type: ignore[union-attr]
    flags = verdicts = 0
    for task in tasks:
        for index in range(2):
            record = run_trial(TrialSpec(retail, task, index, 1000 + index, agents, expected[task.id]))
            assert record.end_reason == "user_stop" and record.error is None, record.error
            for step in record.steps:
                for proposal in step.proposals:
                    if proposal.verdict is not None:
                        verdicts += 1
                        flags += proposal.verdict.flags
    assert verdicts > 0 and flags > 0


def test_the_rules_critic_module_does_not_load_the_labeler() -> None:
    code = (
        "import sys, json; import castbench._agents.critics.rules; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('castbench'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    loaded = json.loads(out.stdout)
    assert "castbench._agents.critics.rules" in loaded
    privileged_modules = (
        "castbench._grading.labeler",
        "castbench._agents.critics.oracle",
        "castbench._grading",
    )
    for privileged in privileged_modules:
        assert privileged not in loaded
