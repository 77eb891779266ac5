"""Reading a trained critic's answers: thinking blocks are not answers, and unreadable verdicts
(counted as passes) are counted apart from answers read in part, which may be flags (issue #45)."""

from __future__ import annotations

from castbench._agents.models.parse import (
    action_from_text,
    find_json_object,
    is_unreadable,
    verdict_from_text,
)
from castbench._base.conversation import Verdict


def test_json_inside_a_think_block_is_not_the_answer() -> None:
    drafted = '<think>maybe {"verdict": "invalid", "failure_type": "wrong_tool"} no</think>\n'
    verdict = verdict_from_text(drafted + '{"verdict": "valid", "failure_type": "none", "explanation": "ok"}')
    assert verdict.verdict == "valid" and verdict.parse_error is None
    action = action_from_text(
        '<think>{"action": "cancel", "arguments": {}}</think>{"action": "reply", "message": "Hi"}'
    )
    assert action.kind == "reply"
    # Qwen3's template may open the block in the prompt: the answer starts inside it
    assert find_json_object('thinking {"verdict": "invalid"}\n</think>\n{"verdict": "valid"}') == {
        "verdict": "valid"
    }


def test_an_answer_that_stops_while_thinking_is_unreadable_and_says_why() -> None:
    verdict = verdict_from_text('<think>the call {"verdict": "invalid"} looks', cut=True)
    assert verdict.verdict == "valid" and is_unreadable(verdict)
    assert "inside its <think> block" in (verdict.parse_error or "")


def test_unreadable_is_no_verdict_at_all_not_an_answer_read_in_part() -> None:
    unreadable = verdict_from_text("I cannot tell")
    cut_flag = verdict_from_text('{"verdict": "invalid", "failure_type": "hallucination", "explan', cut=True)
    odd_type = verdict_from_text('{"verdict": "invalid", "failure_type": "made_up"}')
    assert is_unreadable(unreadable) and not unreadable.flags
    assert cut_flag.flags and cut_flag.parse_error and not is_unreadable(cut_flag)
    assert odd_type.flags and odd_type.parse_error and not is_unreadable(odd_type)
    assert not is_unreadable(Verdict(verdict="valid"))


def test_the_critic_report_counts_unreadable_verdicts_apart_from_flags(db_url: str) -> None:
    from castbench._records.store import ResultsStore
    from castbench._results.report.critic_report import critic_report
    from castbench._run.api import evaluate

    result = evaluate(
        db=db_url,
        domains="retail",
        split="test",
        tasks=["retail-test-0001", "retail-test-0002"],
        policy="scripted:noisy?p=0.5",
        critic="tests.cast.test_cast_verdicts:HalfReadCritic",
        trials=1,
        in_process=True,
    )
    report = critic_report(ResultsStore(db_url).trials(result.outcome.run_id))
    assert report is not None and report.n_verified >= 4
    assert report.parse_errors == report.n_verified  # every answer had a problem...
    flagged = report.counts.flag_invalid + report.counts.flag_valid
    assert report.unreadable == report.n_verified - flagged > 0  # ...but only these were passes
    assert flagged > 0


class HalfReadCritic:
    """Answers in turn: nothing readable, then a flag cut off after its verdict."""

    def __init__(self, briefing: object) -> None:
        self._turn = 0

    def verify(self, view: object) -> Verdict:
        self._turn += 1
        if self._turn % 2:
            return verdict_from_text("no idea")
        return verdict_from_text('{"verdict": "invalid", "failure_type": "wrong_tool", "expl', cut=True)
