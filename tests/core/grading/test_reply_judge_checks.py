"""The reply checks a judge decides (`castbench._grading.replies`), its strict verdict format and
bounded re-asks (`castbench._agents.models.reply_judge`, on a loopback server), and the agreement figures
(`castbench._results.report.reply_judge`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from castbench._agents.models.client import TrialKey
from castbench._agents.models.reply_judge import ModelReplyJudge, judge_settings, parse_verdicts, render
from castbench._base.errors import FatalInfrastructureError
from castbench._grading.earned import EarnedCheck
from castbench._grading.replies import ReplyCheck, StoredVerdicts, judged_outcome, reply_checks
from castbench._records.trial import TrialRecord
from castbench._results.report.reply_judge import reply_judge_agreement
from castbench.domain import load_domain
from tests.models.fault_server import FaultPlan, FaultServer


def _task(task_id: str) -> Any:
    return load_domain("retail").task(task_id)


def test_every_reply_check_of_a_look_up_with_the_rules_verdicts() -> None:
    task = _task("retail-test-0015")  # one required output, false claims, a rival
    assert task.earned is not None
    claim = task.earned.false_claims[0]
    earned = EarnedCheck(false_claims=[claim.any_of[-1]], amid_rivals=[task.earned.rivals[0].output])
    checks = reply_checks(task, missing=[], earned=earned)
    kinds = [c.kind for c in checks]
    assert kinds.count("required_output") == 1 and kinds.count("rival") == 1
    assert kinds.count("false_claim") == len(task.earned.false_claims)
    by_subject = {(c.kind, c.subject): c for c in checks}
    assert not by_subject[("false_claim", claim.any_of[0])].rule  # any of its wordings was stated
    assert not by_subject[("rival", task.earned.rivals[0].output)].rule
    assert by_subject[("required_output", task.required_outputs[0])].rule
    # without the earned check (τ mode on a derived spec), only the required outputs are checked
    assert [c.kind for c in reply_checks(task, [], None)] == ["required_output"]


def test_the_judges_verdicts_decide_the_outcome_and_look_ups_stay_the_rules() -> None:
    task = _task("retail-test-0008")  # a refusal: its reason and false claims
    earned = EarnedCheck(
        missing_lookups=["get_order(...)"], missing_reasons=[task.earned.reasons[0].any_of[0]]
    )
    checks = reply_checks(task, [], earned)
    judged = [
        c.model_copy(update={"judge": "pass" if c.kind == "reason" else "fail"}) for c in checks
    ]  # the judge passes the reason the rules missed, and fails every claim the rules let through
    missing, decided = judged_outcome(judged, earned)
    assert missing == [] and decided is not None
    assert decided.missing_lookups == ["get_order(...)"] and decided.missing_reasons == []
    assert decided.false_claims == [c.subject for c in checks if c.kind == "false_claim"]
    assert not decided.ok


def test_stored_verdicts_regrade_and_a_check_never_judged_is_unreadable() -> None:
    checks = [
        ReplyCheck(kind="required_output", subject="99.25", rule=False, judge="pass", judge_reason="said"),
        ReplyCheck(kind="reason", subject="delivered", rule=True),
    ]
    again = StoredVerdicts(checks[:1])(checks, [], [])
    assert again[0].judge == "pass" and again[0].judge_reason == "said"
    assert again[1].judge == "unreadable"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"verdicts": [{"check": 1, "verdict": "pass"}, {"check": 2, "verdict": "fail"}]}', None),
        (
            '```json\n{"verdicts": [{"check": 1, "verdict": "pass"}, {"check": 2, "verdict": "fail"}]}\n```',
            None,
        ),
        (
            'Sure! {"verdicts": [{"check": 1, "verdict": "pass"}, {"check": 2, "verdict": "fail"}]}',
            "not one JSON",
        ),
        ('{"verdicts": [{"check": 1, "verdict": "pass"}]}', "no verdict for check(s) 2"),
        ('{"verdicts": [{"check": 1, "verdict": "PASS"}, {"check": 2, "verdict": "fail"}]}', 'is not "pass"'),
        (
            '{"verdicts": [{"check": 1, "verdict": "pass"}, {"check": 1, "verdict": "fail"}]}',
            "answered twice",
        ),
        ('{"verdicts": [{"check": 3, "verdict": "pass"}]}', "from 1 to 2"),
        ('{"verdict": "pass"}', 'no "verdicts" list'),
    ],
)
def test_the_verdict_format_is_strict(text: str, problem: str | None) -> None:
    verdicts, found = parse_verdicts(text, 2)
    if problem is None:
        assert found is None and verdicts == {1: (True, ""), 2: (False, "")}
    else:
        assert found is not None and problem in found


def _checks() -> list[ReplyCheck]:
    return [
        ReplyCheck(kind="required_output", subject="99.25", rule=True),
        ReplyCheck(kind="false_claim", subject="delivered", rule=True),
    ]


def test_the_model_judge_reasks_a_bounded_number_of_times_then_says_unreadable() -> None:
    answers = iter(["pass, both", '{"verdicts": [{"check": 1, "verdict": "pass", "reason": "stated"}]}'])

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        return {"content": next(answers, '{"verdicts": [{"check": 1, "verdict": "fail"}]}')}

    with FaultServer(respond) as server:
        judge = ModelReplyJudge(judge_settings(f"openai/judge?api_base={server.base_url}"), TrialKey(7, 0))
        judged = judge(_checks(), ["Your order's total is $99.25."], ['{"order_id": "#W1", "total": 99.25}'])
        assert server.requests == 3 and judge.usage.calls == 3  # the question and two re-asks
        last = server.bodies[-1]["messages"]
        assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
        assert "could not be read (the answer is not one JSON object)" in last[3]["content"]
    # the last answer's readable verdict is kept; the check it left out is unreadable
    assert judged[0].judge == "fail" and judged[1].judge == "unreadable"
    assert "no verdict for check(s) 2" in judged[1].judge_reason
    body = server.bodies[0]
    assert body["temperature"] == 0 and "seed" in body and body["model"] == "judge"


def test_the_judge_prompt_holds_the_checks_the_replies_and_the_records_only() -> None:
    prompt = render(_checks(), ["Your total is $99.25."], ['{"order_id": "#W1"}'])
    assert prompt.startswith("Checks:\n1. The agent's replies tell the user '99.25'")
    assert (
        '[reply 1] "Your total is $99.25."' in prompt and '[result 1] "{\\"order_id\\": \\"#W1\\"}"' in prompt
    )


def test_a_judge_server_error_is_fatal_infrastructure_not_a_verdict() -> None:
    with FaultServer(lambda body: {"content": ""}, FaultPlan(rates={"unauthorized": 1.0})) as server:
        judge = ModelReplyJudge(judge_settings(f"openai/judge?api_base={server.base_url}"), TrialKey(0, 0))
        with pytest.raises(FatalInfrastructureError, match="reply judge openai/judge failed"):
            judge(_checks(), [], [])


def test_judge_settings_are_deterministic_unless_told() -> None:
    settings = judge_settings("openai/judge?api_base=http://127.0.0.1:9/v1&max_tokens=300")
    assert settings.temperature == 0 and settings.seed == 0 and settings.max_tokens == 300
    assert judge_settings("openai/judge?api_base=http://127.0.0.1:9/v1&seed=5").seed == 5


def _record(checks: list[ReplyCheck]) -> TrialRecord:
    from castbench._grading import Grade, SurfaceSignals

    surface = SurfaceSignals(
        ended_cleanly=True, made_write=False, saw_tool_error=False, claimed_success=False
    )
    grade = Grade(
        reward=1.0, state_ok=True, outputs_ok=True, diff=[], missing_outputs=[], surface=surface,
        surface_success=False, failure_category=None, reply_checks=checks,
    )  # fmt: skip
    return TrialRecord(
        domain="retail", domain_version="1", task_id="t", trial_index=0, seed=0, status="scored",
        reward=1.0, end_reason="user_stop", opening="", grade=grade,
    )  # fmt: skip


def test_agreement_confusion_table_and_kappa() -> None:
    def check(rule: bool, judge: str) -> ReplyCheck:
        return ReplyCheck(kind="reason", subject="x", rule=rule, judge=judge)  # type: ignore[arg-type]

    # 20 pass/pass, 5 pass/fail, 10 fail/pass, 15 fail/fail, 2 unreadable
    cells = [(True, "pass")] * 20 + [(True, "fail")] * 5 + [(False, "pass")] * 10 + [(False, "fail")] * 15
    records = [
        _record([check(r, j) for r, j in cells]),
        _record([check(True, "unreadable")] * 2),
        _record([]),
    ]
    agreement = reply_judge_agreement(records)
    assert agreement is not None
    assert (agreement.checks, agreement.agreed, agreement.unreadable, agreement.trials) == (50, 35, 2, 2)
    assert (agreement.rule_pass_judge_fail, agreement.rule_fail_judge_pass) == (5, 10)
    assert agreement.agreement == pytest.approx(0.7)
    # chance: 0.5*0.6 + 0.5*0.4 = 0.5 -> kappa (0.7 - 0.5) / 0.5
    assert agreement.kappa == pytest.approx(0.4)
    assert json.loads(agreement.model_dump_json())["by_kind"] == {"reason": [35, 50]}
    assert reply_judge_agreement([_record([])]) is None  # a rule-graded run has no such figures
