"""`castbench eval --reply-judge MODEL` against a loopback OpenAI-compatible judge (offline, no
key): the judge decides the reply checks and the reward follows it, the rules' verdicts are kept
beside, the agreement figures are printed and stored, the run records the judge (identity,
provenance line, `--output`), and a judge that cannot be read or reached is the judge's failure,
never a 0 blamed on the agent."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from castbench._records.config import read_config
from castbench._records.store import ResultsStore
from castbench._results.compare.comparability import setting_differences
from castbench._results.publish.verify import verify_run
from castbench.domain import load_domain
from tests.models.fault_server import FaultPlan, FaultServer
from tests.support import invoke, sqlite_url

REFUSE, LOOKUP, CHANGE = "retail-test-0008", "retail-test-0015", "retail-test-0002"
"""A refusal (a reason, false claims), a look-up (a required output, false claims, a rival) and a
change (no reply check; its writes' confirmations are checked)."""
_CHECK = re.compile(r"^(\d+)\. (.*)$")


def _checks(body: dict[str, Any]) -> list[tuple[int, str]]:
    prompt = body["messages"][1]["content"]
    listed = prompt.split("\n\nThe agent's replies", 1)[0]
    return [(int(m.group(1)), m.group(2)) for line in listed.splitlines() if (m := _CHECK.match(line))]


def scripted_judge(
    fail_claims: bool, fail_confirmations: bool = False
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Pass every check, except (when `fail_claims`) the false-claim checks and (when
    `fail_confirmations`) the explicit yes of every write: a judge that parts ways with the rules
    on exactly those, so every figure is known in advance."""

    def fails(text: str) -> bool:
        return (fail_claims and "never assert" in text) or (
            fail_confirmations and "explicitly said yes" in text
        )

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        verdicts = [
            {"check": number, "verdict": "fail" if fails(text) else "pass", "reason": "scripted"}
            for number, text in _checks(body)
        ]
        return {"content": json.dumps({"verdicts": verdicts})}

    return respond


@pytest.fixture
def judge_server(request: pytest.FixtureRequest) -> Iterator[FaultServer]:
    respond, plan = getattr(request, "param", (scripted_judge(False), None))
    with FaultServer(respond, plan) as server:
        yield server


def _eval(tmp_path: Path, *extra: str, tasks: str = f"{REFUSE},{LOOKUP},{CHANGE}") -> tuple[Any, str, Path]:
    url, out = sqlite_url(tmp_path / "r.db"), tmp_path / "summary.json"
    result = invoke(
        "eval", "--domain", "retail", "--policy", "oracle", "--trials", "1", "--tasks", tasks,
        "--db", url, "--output", str(out), *extra,
    )  # fmt: skip
    return result, url, out


def test_a_judge_that_agrees_leaves_the_oracle_at_one(tmp_path: Path, judge_server: FaultServer) -> None:
    spec = f"openai/judge?api_base={judge_server.base_url}"
    result, url, out = _eval(tmp_path, "--reply-judge", spec)
    assert result.exit_code == 0, result.output
    assert "replies graded by judge openai/judge" in result.output  # the provenance line
    summary = json.loads(out.read_text())
    assert summary["overall"]["pass_hat"]["1"] == 1.0
    agreement = summary["overall"]["reply_judge"]
    assert agreement["trials"] == 3
    assert agreement["by_kind"]["confirmation"][0] == agreement["by_kind"]["confirmation"][1] > 0
    assert agreement["agreed"] == agreement["checks"] == agreement["rule_pass_judge_pass"] > 10
    assert agreement["agreement"] == 1.0 and agreement["kappa"] is None  # both raters always "pass"
    assert (
        f"agreed with the rules on {agreement['checks']} of {agreement['checks']} reply checks"
        in result.output
    )
    judge = summary["config"]["reply_judge"]
    assert judge["model"] == "openai/judge" and judge["temperature"] == 0 and judge["seed"] == 0
    assert summary["provenance"]["reply_judge"] == "openai/judge"
    body = judge_server.bodies[0]
    assert body["temperature"] == 0 and isinstance(body["seed"], int)
    # the judge sees the checks, the agent's replies and the tool results (a write's explicit yes:
    # the dialogue since the last write): never the user's private brief
    trials = {r.task_id: r for r in ResultsStore(url).trials(ResultsStore(url).runs()[0].id)}
    prompts = [b["messages"][1]["content"] for b in judge_server.bodies]
    pack = load_domain("retail")
    briefs = [pack.task(task).scenario.instructions for task in (REFUSE, LOOKUP, CHANGE)]
    assert not any(brief in p for brief in briefs for p in prompts)
    replies_only = [p for p in prompts if "explicitly said yes" not in p]
    assert replies_only and not any(t.opening in p for t in trials.values() for p in replies_only)
    assert trials[REFUSE].usage["reply_judge"].calls == trials[LOOKUP].usage["reply_judge"].calls == 1
    # the change task: one call per proposed write (its explicit yes), none for reply checks
    assert trials[CHANGE].grade is not None
    writes = [c for c in trials[CHANGE].grade.reply_checks if c.kind == "confirmation"]
    assert writes and trials[CHANGE].usage["reply_judge"].calls == len(writes) == len(
        trials[CHANGE].grade.reply_checks
    )
    assert all(c.rule and c.judge == "pass" and "customer:" in c.context for c in writes)
    # the reference floors are graded as the run is (by the judge too): a floor is what refusing
    # scores under this grader
    assert judge_server.requests > 2


@pytest.mark.parametrize("judge_server", [(scripted_judge(True), None)], indirect=True)
def test_the_reward_follows_the_judge_and_the_confusion_table_says_where_it_parts(
    tmp_path: Path, judge_server: FaultServer
) -> None:
    rules, _, rules_out = _eval(tmp_path / "rules")
    assert rules.exit_code == 0, rules.output
    spec = f"openai/judge?api_base={judge_server.base_url}"
    result, url, out = _eval(tmp_path / "judged", "--reply-judge", spec)
    assert result.exit_code == 0, result.output
    summary = json.loads(out.read_text())
    overall = summary["overall"]
    agreement = overall["reply_judge"]
    claims = agreement["by_kind"]["false_claim"]
    assert claims[0] == 0 and claims[1] == agreement["rule_pass_judge_fail"] > 0
    assert agreement["rule_fail_judge_pass"] == agreement["rule_fail_judge_fail"] == 0
    assert agreement["agreed"] == agreement["rule_pass_judge_pass"] == agreement["checks"] - claims[1]
    assert agreement["kappa"] == 0.0  # the rules always pass: no agreement beyond chance
    # the two refuse/look-up tasks fail on the judge's word; the change task passes
    assert overall["pass_hat"]["1"] == pytest.approx(1 / 3)
    assert json.loads(rules_out.read_text())["overall"]["pass_hat"]["1"] == 1.0
    store = ResultsStore(url)
    record = next(r for r in store.trials(store.runs()[0].id) if r.task_id == REFUSE)
    assert record.grade is not None and record.grade.failure_category == "unearned_outcome"
    judged = record.grade.reply_checks
    assert all(c.rule for c in judged) and {c.judge for c in judged if c.kind == "false_claim"} == {"fail"}
    assert any(line.startswith("false claim stated") for line in record.grade.unearned)
    shown = invoke("runs", "show", store.runs()[0].id, "--db", url, "--task", REFUSE, "--trial", "0")
    assert shown.exit_code == 0, shown.output
    assert "reply judge parts ways" in shown.output and "rules pass, judge fail (scripted)" in shown.output
    # the policy's trial is the rule-graded one's, step for step: nothing of the judge reached it
    rule_store = ResultsStore(sqlite_url(tmp_path / "rules" / "r.db"))
    before = next(r for r in rule_store.trials(rule_store.runs()[0].id) if r.task_id == REFUSE)
    assert [s.action for s in before.steps] == [s.action for s in record.steps]
    assert [s.observation for s in before.steps] == [s.observation for s in record.steps]
    # a judged run is another run: another identity, and not comparable with the rule-graded one
    judged_config = read_config(store.runs()[0].config_json, "judged")
    rule_config = read_config(rule_store.runs()[0].config_json, "rules")
    assert judged_config.config_hash() != rule_config.config_hash()
    assert any("reply grader" in d for d in setting_differences(rule_config, judged_config))
    # a verifier re-grades it from the stored verdicts, and a verdict changed since is found
    trials = store.trials(store.runs()[0].id)
    report = verify_run(store.runs()[0].id, judged_config, trials)
    assert not report.mismatches and any("stored verdicts" in note for note in report.notes)
    flipped = [c.model_copy(update={"judge": "pass"}) for c in judged]
    forged = record.model_copy(update={"grade": record.grade.model_copy(update={"reply_checks": flipped})})
    report = verify_run(store.runs()[0].id, judged_config, [forged])
    assert any("re-graded 1.0" in p for m in report.mismatches for p in m.problems)


@pytest.mark.parametrize(
    "judge_server", [(scripted_judge(False, fail_confirmations=True), None)], indirect=True
)
def test_the_strict_reward_follows_the_judges_explicit_yes(tmp_path: Path, judge_server: FaultServer) -> None:
    spec = f"openai/judge?api_base={judge_server.base_url}"
    result, url, out = _eval(tmp_path, "--reply-judge", spec, tasks=CHANGE)
    assert result.exit_code == 0, result.output
    overall = json.loads(out.read_text())["overall"]
    assert overall["pass_hat"]["1"] == 1.0 and overall["strict"]["pass_hat"]["1"] == 0.0
    store = ResultsStore(url)
    (record,) = store.trials(store.runs()[0].id)
    assert record.grade is not None and record.grade.policy_breaks
    assert all(
        b.reason == "no explicit confirmation from the user for this change"
        for b in record.grade.policy_breaks
    )
    writes = [
        s for s in record.steps if s.proposals[-1].label and s.proposals[-1].label.failure_type != "none"
    ]
    assert writes and all(s.proposals[-1].label.failure_type == "domain_violation" for s in writes)  # type: ignore[union-attr]
    agreement = overall["reply_judge"]
    assert agreement["rule_pass_judge_fail"] == agreement["by_kind"]["confirmation"][1] > 0
    # a verifier re-labels every write with the stored verdicts: the run checks out
    config = read_config(store.runs()[0].config_json, "judged")
    assert not verify_run(store.runs()[0].id, config, [record]).mismatches


def _unreadable(body: dict[str, Any]) -> dict[str, Any]:
    return {"content": "Looks fine to me: pass."}


@pytest.mark.parametrize("judge_server", [(_unreadable, None)], indirect=True)
def test_an_unreadable_verdict_leaves_the_trial_unscored_never_failed(
    tmp_path: Path, judge_server: FaultServer
) -> None:
    spec = f"openai/judge?api_base={judge_server.base_url}"
    result, url, out = _eval(tmp_path, "--reply-judge", spec, tasks=REFUSE)
    assert result.exit_code == 1, result.output  # unscored planned trials
    assert "unscored" in result.output
    store = ResultsStore(url)
    (record,) = store.trials(store.runs()[0].id)
    assert record.status == "error" and record.reward is None and record.end_reason == "infra_error"
    assert record.error is not None and "unreadable judge answer" in record.error
    assert record.attempts == 3  # retried as any infrastructure error, then kept unscored
    assert record.usage["reply_judge"].calls == 9  # per attempt: the question and two bounded re-asks
    assert "could not be read" in judge_server.bodies[1]["messages"][-1]["content"]
    assert record.grade is not None and {c.judge for c in record.grade.reply_checks} == {"unreadable"}
    agreement = json.loads(out.read_text())["overall"]["reply_judge"]
    assert agreement["unreadable"] == len(record.grade.reply_checks) and agreement["checks"] == 0


@pytest.mark.parametrize(
    "judge_server", [(scripted_judge(False), FaultPlan(rates={"unauthorized": 1.0}))], indirect=True
)
def test_a_judge_server_that_fails_stops_the_run_with_a_clear_error(
    tmp_path: Path, judge_server: FaultServer
) -> None:
    spec = f"openai/judge?api_base={judge_server.base_url}"
    result, url, _ = _eval(tmp_path, "--reply-judge", spec, tasks=REFUSE)
    assert result.exit_code != 0
    assert "error:" in result.output and "reply judge openai/judge failed" in result.output
    store = ResultsStore(url)
    (run,) = store.runs()
    assert all(r.status == "error" and r.reward is None for r in store.trials(run.id))


def test_a_judge_server_that_is_down_fails_before_any_trial(tmp_path: Path) -> None:
    with FaultServer(scripted_judge(False)) as server:
        spec = f"openai/judge?api_base={server.base_url}"
    result, _, _ = _eval(tmp_path, "--reply-judge", spec, tasks=REFUSE)
    assert result.exit_code != 0
    assert "error:" in result.output and "reply judge" in result.output and "not reachable" in result.output


def test_a_bad_judge_spec_is_one_error_line(tmp_path: Path) -> None:
    result, _, _ = _eval(tmp_path, "--reply-judge", "judge", tasks=REFUSE)
    assert result.exit_code != 0
    assert "error: --reply-judge 'judge': name a model as provider/model" in result.output
