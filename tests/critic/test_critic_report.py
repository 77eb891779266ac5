"""Every critic figure pinned on small hand-built trial records with known answers.

The fixture trial has these steps (F = flagged, P = passed; v/i/u = valid/invalid/unknown label):

    s0  get_order                    P v                                  TN
    s1  cancel(a) F i -> cancel(a, keys reordered) F i -> cancel(b) P v   TP TP TN   executed cancel(b)
    s2  modify(x) F v -> modify(y) P i                                    FP FN      executed modify(y)
    s3  reply, not verified
    s4  reply "Done." F u -> reply "  done. " P u (same canonical reply)  unknown x2
    s5  return(z) F i -> return(z) F i  (blocked)                         TP TP      nothing executed
    s6  exchange(w) F v -> exchange(w) P v                                FP TN      executed exchange(w)
    s7  get_user                     P v                                  TN

Counts over labelled verdicts: TP 4, FP 2, FN 1, TN 4 (11 labelled), 2 unknown, 13 verdicts.
Rejections followed by a revision: s1 x2, s2, s4, s5, s6 = 6.
False flags answered (CAST's resistance): s2 r0 (revised away), s6 r0 (kept) -> 1/2.
True flags answered (insistence): s1 r0 (same action, keys reordered), s1 r1 (revised), s5 r0
(same) -> 2/3; per round r0 2/2, r1 0/1. The s4 flag is on a reply (unknown): in neither.
True flags (correction): s1 r0, s1 r1 (cancel(b) executed, valid), s5 r0, s5 r1 (blocked) -> 2/4.
First rejection valid: s2 (harmed), s6 (not harmed). 7 verified steps.
"""

from __future__ import annotations

from math import isclose, sqrt
from typing import Any

import pytest

from castbench._base.conversation import Action, ReplyAction, ToolCallAction, Usage, Verdict
from castbench._records.config import RunConfig
from castbench._records.metrics import critic_metrics
from castbench._records.trial import ActionLabel, Proposal, StepRecord, StepTiming, TrialRecord
from castbench._results.report.critic_report import critic_report, paired_effect
from castbench._results.report.summary import pair_with_baseline, summarize_run

FLAG, PASS = "flag", "pass"


def tool(name: str, **arguments: Any) -> ToolCallAction:
    return ToolCallAction(name=name, arguments=arguments)


def prop(round_: int, action: Action, verdict: str | None, label: str, failure: str = "none") -> Proposal:
    judged = None
    if verdict is not None:
        judged = Verdict(
            verdict="invalid" if verdict == FLAG else "valid",
            failure_type=failure if verdict == FLAG else "none",
        )  # type: ignore[arg-type]
    return Proposal(
        round=round_,
        action=action,
        verdict=judged,
        label=ActionLabel(label=label, failure_type=failure if label == "invalid" else "none"),  # type: ignore[arg-type]
    )


def step(index: int, proposals: list[Proposal], executed: bool = True, **timing: float) -> StepRecord:
    return StepRecord(
        index=index,
        proposals=proposals,
        action=proposals[-1].action if executed else None,
        timing=StepTiming(**timing),
    )


def trial_record(
    steps: list[StepRecord], task: str = "t1", index: int = 0, passed: bool = True, **extra: Any
) -> TrialRecord:
    return TrialRecord(
        domain=extra.pop("domain", "retail"),
        domain_version="1-0",
        task_id=task,
        trial_index=index,
        seed=index,
        status=extra.pop("status", "scored"),
        reward=1.0 if passed else 0.0,
        end_reason="user_stop",
        opening="hi",
        steps=steps,
        **extra,
    )


def fixture_steps() -> list[StepRecord]:
    cancel_a = tool("cancel_pending_order", order_id="#W1", reason="ordered by mistake")
    cancel_a_reordered = tool("cancel_pending_order", reason="ordered by mistake", order_id="#W1")
    cancel_b = tool("cancel_pending_order", order_id="#W2", reason="ordered by mistake")
    modify_x, modify_y = tool("modify_user_address", zip="11111"), tool("modify_user_address", zip="22222")
    return_z = tool("return_delivered_order_items", order_id="#W3")
    exchange_w = tool("exchange_delivered_order_items", order_id="#W4")
    return [
        step(
            0,
            [prop(0, tool("get_order_details", order_id="#W1"), PASS, "valid")],
            policy_s=0.5,
            critic_s=0.25,
        ),
        step(
            1,
            [
                prop(0, cancel_a, FLAG, "invalid", "hallucination"),
                prop(1, cancel_a_reordered, FLAG, "invalid", "hallucination"),
                prop(2, cancel_b, PASS, "valid"),
            ],
            policy_s=1.0,
            critic_s=0.75,
        ),
        step(2, [prop(0, modify_x, FLAG, "valid"), prop(1, modify_y, PASS, "invalid", "wrong_tool")]),
        step(3, [prop(0, ReplyAction(text="What is your order id?"), None, "unknown")], policy_s=0.25),
        step(
            4,
            [
                prop(0, ReplyAction(text="Done."), FLAG, "unknown"),
                prop(1, ReplyAction(text="  done. "), PASS, "unknown"),
            ],
        ),
        step(
            5,
            [
                prop(0, return_z, FLAG, "invalid", "domain_violation"),
                prop(1, return_z, FLAG, "invalid", "domain_violation"),
            ],
            executed=False,
        ),
        step(6, [prop(0, exchange_w, FLAG, "valid"), prop(1, exchange_w, PASS, "valid")]),
        step(7, [prop(0, tool("get_user_details", user_id="u1"), PASS, "valid")]),
    ]


@pytest.fixture
def report() -> Any:
    usage = {"critic": Usage(input_tokens=10, output_tokens=2, calls=1), "policy": Usage(input_tokens=99)}
    result = critic_report([trial_record(fixture_steps(), usage=usage)])
    assert result is not None
    return result


def test_confusion_counts_and_shares(report: Any) -> None:
    assert report.counts.model_dump() == {
        "flag_invalid": 4,
        "flag_valid": 2,
        "pass_invalid": 1,
        "pass_valid": 4,
    }
    assert report.n_verified == 13 and report.unknown == 2
    shares = report.confusion.model_dump()
    assert shares == pytest.approx(
        {"flag_invalid": 4 / 11, "flag_valid": 2 / 11, "pass_invalid": 1 / 11, "pass_valid": 4 / 11}
    )
    assert isclose(sum(shares.values()), 1.0)


def test_rates(report: Any) -> None:
    assert report.false_flag_rate == pytest.approx(2 / 6)
    assert report.detection_rate == pytest.approx(4 / 5)
    assert report.precision == pytest.approx(4 / 6)
    assert report.f1 == pytest.approx(8 / 11)  # 2*TP / (2*TP + FP + FN)
    # MCC = (TP*TN - FP*FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (16 - 2) / sqrt(6*5*6*5) = 14/30
    assert report.mcc == pytest.approx((4 * 4 - 2 * 1) / sqrt(6 * 5 * 6 * 5))
    assert report.mcc == pytest.approx(7 / 15)


def test_flag_rate_counts_unknown_labels_which_are_reported_apart(report: Any) -> None:
    # flagged: 4 invalid + 2 valid + 1 unknown, over all 13 verified actions
    assert report.flag_rate == pytest.approx(7 / 13)
    assert report.unknown == 2
    assert sum(report.counts.model_dump().values()) == 11  # unknowns are in no cell


def test_detection_by_failure_type(report: Any) -> None:
    assert report.detection_by_type == {"hallucination": 1.0, "domain_violation": 1.0, "wrong_tool": 0.0}


def test_resistance_counts_false_flags_only_and_insistence_true_ones(report: Any) -> None:
    assert report.rejections == 6
    assert report.resistance_rate == pytest.approx(1 / 2)  # s6 kept its valid action, s2 gave it up
    assert report.insistence_rate == pytest.approx(2 / 3)  # the reordered keys are the same action
    reactions = report.reactions
    assert (reactions.false_flags_answered, reactions.kept) == (2, 1)
    assert (reactions.true_flags, reactions.true_flags_answered, reactions.insisted) == (4, 3, 2)


def test_reactions_per_round(report: Any) -> None:
    first, second = report.reactions_by_round[0], report.reactions_by_round[1]
    assert first.resistance_rate == pytest.approx(1 / 2) and first.insistence_rate == 1.0
    assert first.correction_rate == pytest.approx(1 / 2)  # s1 r0 corrected, s5 r0 blocked
    assert second.resistance_rate is None and second.insistence_rate == 0.0
    assert second.correction_rate == pytest.approx(1 / 2)  # s1 r1 corrected, s5 r1 blocked
    assert set(report.reactions_by_round) == {0, 1}


def test_correction_harmful_revision_and_rounds(report: Any) -> None:
    assert report.correction_rate == pytest.approx(2 / 4)  # s1's two flags corrected; s5's blocked
    assert report.harmful_revision_rate == pytest.approx(1 / 2)  # s2 harmed; s6 not
    assert report.rounds_mean == pytest.approx(13 / 7)


def test_usage_and_seconds(report: Any) -> None:
    assert report.critic_usage == Usage(input_tokens=10, output_tokens=2, calls=1)
    assert report.policy_seconds == pytest.approx(1.75) and report.critic_seconds == pytest.approx(1.0)


def test_blocked_step_counts_its_verdicts_but_no_correction() -> None:
    return_z = tool("return_delivered_order_items", order_id="#W3")
    blocked = step(
        0,
        [
            prop(0, return_z, FLAG, "invalid", "hallucination"),
            prop(1, return_z, FLAG, "invalid", "hallucination"),
        ],
        executed=False,
    )
    report = critic_report([trial_record([blocked])])
    assert report is not None
    assert report.counts.flag_invalid == 2 and report.detection_rate == 1.0
    assert report.rejections == 1  # the last rejection has no revision
    assert report.insistence_rate == 1.0 and report.resistance_rate is None  # no false flag
    assert report.correction_rate == 0.0 and report.harmful_revision_rate is None
    assert report.rounds_mean == 2.0


def test_report_counts_blocked_steps() -> None:
    report = critic_report([trial_record(fixture_steps())])
    assert report.model_dump()["blocked_steps"] == 1  # type: ignore[union-attr]


def test_the_report_agrees_with_critic_metrics_on_the_same_records(report: Any) -> None:
    records = [
        (PASS, "valid", None),
        (FLAG, "invalid", "hallucination"),
        (FLAG, "invalid", "hallucination"),
        (PASS, "valid", None),
        (FLAG, "valid", None),
        (PASS, "invalid", "wrong_tool"),
        (FLAG, "unknown", None),
        (PASS, "unknown", None),
        (FLAG, "invalid", "domain_violation"),
        (FLAG, "invalid", "domain_violation"),
        (FLAG, "valid", None),
        (PASS, "valid", None),
        (PASS, "valid", None),
    ]
    direct = critic_metrics(records)
    fields = set(type(direct).model_fields)
    assert {k: v for k, v in report.model_dump().items() if k in fields} == direct.model_dump()


def test_empty_denominators_are_none_not_zero() -> None:
    only_valid_passed = step(0, [prop(0, tool("get_user_details", user_id="u1"), PASS, "valid")])
    report = critic_report([trial_record([only_valid_passed])])
    assert report is not None
    assert report.false_flag_rate == 0.0 and report.detection_rate is None and report.precision is None
    assert report.f1 is None and report.mcc is None
    assert (
        report.resistance_rate is None
        and report.correction_rate is None
        and report.harmful_revision_rate is None
    )
    only_unknown = step(0, [prop(0, ReplyAction(text="hi"), FLAG, "unknown")])
    report = critic_report([trial_record([only_unknown])])
    assert report is not None and report.confusion is None and report.flag_rate == 1.0 and report.unknown == 1
    assert (
        critic_report([trial_record([step(0, [prop(0, ReplyAction(text="hi"), None, "unknown")])])]) is None
    )


def test_proposal_without_label_counts_as_unknown() -> None:
    unlabelled = Proposal(
        round=0, action=tool("get_user_details", user_id="u1"), verdict=Verdict(verdict="invalid")
    )
    report = critic_report(
        [trial_record([StepRecord(index=0, proposals=[unlabelled], action=unlabelled.action)])]
    )
    assert report is not None and report.unknown == 1 and report.flag_rate == 1.0


# -- paired effect ------------------------------------------------------------------------------
def outcome(task: str, index: int, passed: bool, **extra: Any) -> TrialRecord:
    return trial_record([], task=task, index=index, passed=passed, **extra)


PAIRS = [  # (task, trial, passed without the critic, passed with it)
    ("t1", 0, False, True),  # helped
    ("t1", 1, False, False),
    ("t2", 0, False, True),  # helped
    ("t2", 1, True, True),
    ("t3", 0, True, False),  # harmed
    ("t3", 1, True, True),
    ("t4", 0, True, True),
    ("t4", 1, False, False),
]


def test_paired_effect_on_hand_built_pairs() -> None:
    without = [outcome(t, i, alone) for t, i, alone, _ in PAIRS]
    with_critic = [outcome(t, i, withc) for t, i, _, withc in PAIRS]
    helpfulness, harmfulness = paired_effect(with_critic, without)
    assert helpfulness == pytest.approx(2 / 4)  # failed alone: 4, of which 2 passed with the critic
    assert harmfulness == pytest.approx(1 / 4)  # passed alone: 4, of which 1 failed with the critic


def test_paired_effect_pairs_by_trial_and_skips_unscored_or_unmatched() -> None:
    without = [
        outcome("t1", 0, False),
        outcome("t1", 1, True),
        outcome("t2", 0, False, status="error"),  # not scored alone: no pair
        outcome("t3", 0, True, domain="airline"),  # another domain's t3
    ]
    with_critic = [
        outcome("t1", 1, False),  # order does not matter: paired by key
        outcome("t1", 0, True),
        outcome("t2", 0, True),
        outcome("t3", 0, False),  # retail t3: no retail baseline
        outcome("t9", 0, True),  # no baseline at all
    ]
    assert paired_effect(with_critic, without) == (1.0, 1.0)
    with_error = [outcome("t1", 0, True, status="error"), outcome("t1", 1, True)]
    assert paired_effect(with_error, without) == (None, 0.0)  # t1#0 errored with the critic: unpaired
    assert paired_effect([], without) == (None, None)


def test_pair_with_baseline_adds_the_effect_to_the_summary() -> None:
    def records(critic: bool) -> list[TrialRecord]:
        verified = [
            step(
                0,
                [
                    prop(0, tool("get_user_details", user_id="u1"), FLAG, "valid"),
                    prop(1, tool("get_user_details", user_id="u1"), PASS, "valid"),
                ],
            )
        ]
        return [
            trial_record(verified if critic else [], task=t, index=i, passed=(withc if critic else alone))
            for t, i, alone, withc in PAIRS
        ]

    config = RunConfig(domains={"retail": "1-0"}, policy="p", critic="c", trials=2)
    alone_config = config.model_copy(update={"critic": "none"})
    with_critic, without = records(True), records(False)
    summary = summarize_run("r-with", config, with_critic)
    alone = summarize_run("r-alone", alone_config, without)
    assert alone.domains["retail"].critic is None
    paired = pair_with_baseline(summary, alone, with_critic, without)
    for report in (paired.domains["retail"], paired.overall):
        critic = report.critic
        assert critic is not None
        assert critic.helpfulness == pytest.approx(0.5) and critic.harmfulness == pytest.approx(0.25)
        assert critic.paired_run_id == "r-alone"
        assert critic.pass_hat_without_critic == alone.domains["retail"].pass_hat
    # pass^1 alone: t1 0/2, t2 1/2, t3 2/2, t4 1/2 -> mean 0.5; with the critic: 1/2, 2/2, 1/2, 1/2 -> 0.625
    assert alone.domains["retail"].pass_hat[1] == pytest.approx(0.5)
    assert paired.domains["retail"].pass_hat[1] == pytest.approx(0.625)
    # the summary it came from is left as it was
    assert (
        summary.domains["retail"].critic is not None and summary.domains["retail"].critic.helpfulness is None
    )
