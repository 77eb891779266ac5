"""The reliability profile: faults injected by the harness at tool execution (recorded on the
step, retryable), user and environment perturbations, the perturbations in a run's identity and
comparability, the profile's figures from stored trials, and `castbench profile` end to end.

Tasks: retail-test-0002 (authenticate, look the order up, confirm, cancel it) and a few more
retail tasks whose gold actions include writes, so a failed write that is never retried fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from castbench._agents.registry import resolve
from castbench._base.conversation import ReplyAction, ToolCallAction, ToolResultTurn
from castbench._records.perturbations import Perturbations, TrialPerturber
from castbench._records.store import ResultsStore
from castbench._records.trial import StepRecord, TrialRecord
from castbench._results.compare.comparability import setting_differences
from castbench._run.api import build_config, evaluate
from castbench._trial.rollout import AgentSet, TrialSpec, run_trial
from castbench.domain import Domain
from castbench_analyses.profile_metrics import predictability, reliability_profile
from castbench_analyses.profile_run import profile
from tests.support import invoke, sqlite_url

TASKS = ["retail-test-0002", "retail-test-0004", "retail-test-0005", "retail-test-0006", "retail-test-0009"]
RETRYING = "tests.profile.agents:RetryingOracle"
PLAIN = "oracle"


def trial(retail: Domain, perturbations: Perturbations, policy: str = PLAIN, seed: int = 7) -> TrialRecord:
    task = retail.task("retail-test-0002")
    agents = AgentSet(policy=resolve("policy", policy, in_process=True), user=resolve("user", "scripted"))
    return run_trial(
        TrialSpec(retail, task, 0, seed, agents, retail.replay(task), perturbations=perturbations)
    )


def test_faults_are_recorded_on_the_step_and_nothing_executes(retail: Domain) -> None:
    record = trial(retail, Perturbations(tool_faults=1.0, fault_kinds=["timeout"]))
    faulted = [step for step in record.steps if step.fault is not None]
    assert faulted and {step.fault for step in faulted} == {"timeout"}
    for step in faulted:
        assert isinstance(step.action, ToolCallAction)
        assert isinstance(step.observation, ToolResultTurn) and step.observation.error
        assert "timed out" in step.observation.content
    names = [step.action.name for step in faulted if isinstance(step.action, ToolCallAction)]
    assert "cancel_pending_order" in names
    assert not record.passed  # the cancellation never reached the database
    stored = record.model_dump(mode="json")["steps"]
    assert [s.get("fault") for s in stored] == [step.fault for step in record.steps]


def test_a_retried_call_succeeds_and_the_retrying_agent_passes(retail: Domain) -> None:
    record = trial(retail, Perturbations(tool_faults=1.0, fault_kinds=["error"]), policy=RETRYING)
    calls = [step for step in record.steps if isinstance(step.action, ToolCallAction)]
    for first, retry in zip(calls, calls[1:], strict=False):
        if first.fault is not None:
            assert retry.action == first.action and retry.fault is None
    assert record.passed


def test_clean_runs_hold_no_perturber_and_keep_their_hash() -> None:
    config, _ = build_config(domains="retail", policy="oracle", trials=1, tasks=TASKS[:1])
    assert "perturbations" not in json.loads(json.dumps(config._dump()))
    assert Perturbations().perturber(3) is None
    faulty, _ = build_config(
        domains="retail",
        policy="oracle",
        trials=1,
        tasks=TASKS[:1],
        perturbations=Perturbations(tool_faults=0.1),
    )
    other_seed, _ = build_config(
        domains="retail",
        policy="oracle",
        trials=1,
        tasks=TASKS[:1],
        perturbations=Perturbations(tool_faults=0.1, seed=1),
    )
    hashes = {config.config_hash(), faulty.config_hash(), other_seed.config_hash()}
    assert len(hashes) == 3
    differences = setting_differences(config, faulty)
    assert any(line.startswith("perturbations") for line in differences)


def test_user_and_env_perturbations_are_seeded_and_keep_the_facts() -> None:
    perturber = TrialPerturber(
        Perturbations(user=["paraphrase", "reorder", "typos"], env=["field_order", "extra_fields"]), 5
    )
    again = TrialPerturber(perturber.p, 5)
    text = "Hi, I'd like to cancel an order I placed recently. My email is ava.lopez4242@example.com. "
    text += "The order is #W1234567, and please hurry."
    changed = perturber.user_text(0, text)
    assert changed == again.user_text(0, text) and changed != text
    for fact in ("ava.lopez4242@example.com", "#W1234567"):
        assert fact in changed
    output = json.dumps({"order_id": "#W1", "status": "pending", "items": [{"id": 1, "price": 2.5}]})
    reshaped = perturber.tool_output(3, output)
    assert reshaped == again.tool_output(3, output)
    value = json.loads(reshaped)
    assert value["order_id"] == "#W1" and value["items"][0]["price"] == 2.5
    assert set(value) - {"order_id", "status", "items"}  # an extra field
    assert perturber.tool_output(3, "Error: no such order") == "Error: no such order"


def test_unknown_kinds_are_refused() -> None:
    with pytest.raises(ValueError, match="bogus"):
        Perturbations(user=["bogus"])
    result = invoke("eval", "-d", "retail", "--tool-faults", "0.5", "--fault-kinds", "error,bogus")
    assert result.exit_code != 0 and "--fault-kinds: unknown fault kinds 'bogus'" in result.output


def _profile(tmp_path: Path, policy: str, name: str) -> dict[str, object]:
    db = sqlite_url(tmp_path / f"{name}.db")
    options = dict(domains="retail", policy=policy, trials=2, tasks=TASKS[:4], in_process=True, db=db)
    clean = evaluate(**options)
    faults = Perturbations(tool_faults=0.5, seed=0)
    faulty = evaluate(**options, perturbations=faults)
    store = ResultsStore(db)
    profile = reliability_profile(
        store.trials(clean.outcome.run_id),
        {"faults": (faults.label(), store.trials(faulty.outcome.run_id))},
        policy=policy,
    )
    return profile.model_dump(mode="json")


def test_retrying_scores_higher_robustness_and_profiles_repeat(tmp_path: Path) -> None:
    plain = _profile(tmp_path, PLAIN, "plain")
    retrying = _profile(tmp_path, RETRYING, "retrying")
    plain_faults, retry_faults = plain["robustness"]["faults"], retrying["robustness"]["faults"]  # type: ignore[index]
    assert plain_faults["clean"] == retry_faults["clean"] == {"1": 1.0, "2": 1.0}
    assert retry_faults["ratio"]["1"] > plain_faults["ratio"]["1"]
    assert retry_faults["ratio"]["2"] > plain_faults["ratio"]["2"]
    assert retrying == _profile(tmp_path, RETRYING, "again") | {"runs": retrying["runs"]}


def _with_confidence(passed: bool, confidence: float | None) -> TrialRecord:
    action = ReplyAction(text="done", confidence=confidence)
    return TrialRecord(
        domain="retail",
        domain_version="1-0",
        task_id="t",
        trial_index=0,
        seed=0,
        status="scored",
        reward=1.0 if passed else 0.0,
        end_reason="user_stop",
        opening="hi",
        steps=[StepRecord(index=0, proposals=[], action=action)],
    )


def test_predictability_is_brier_and_ece_or_not_reported() -> None:
    assert not predictability([_with_confidence(True, None)]).reported
    found = predictability(
        [_with_confidence(True, 0.9), _with_confidence(False, 0.9), _with_confidence(True, 0.2)]
    )
    assert found.reported and found.trials_with_confidence == 3
    assert found.brier == pytest.approx((0.1**2 + 0.9**2 + 0.8**2) / 3)
    # bins: {0.9: successes 1/2} and {0.2: 1/1} -> 2/3·|0.5 − 0.9| + 1/3·|1 − 0.2|
    assert found.ece == pytest.approx(2 / 3 * 0.4 + 1 / 3 * 0.8)


def test_confidence_reaches_the_profile(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "c.db")
    policy = "tests.profile.agents:ConfidentOracle"
    run = evaluate(domains="retail", policy=policy, trials=1, tasks=TASKS[:1], in_process=True, db=db)
    found = predictability(ResultsStore(db).trials(run.outcome.run_id))
    assert found.reported and found.brier == pytest.approx(0.01)  # 90% sure, and it passed


def test_profile_command_writes_the_four_groups_and_a_figure(tmp_path: Path) -> None:
    out = tmp_path / "profile.json"
    args = ["profile", "-d", "retail", "--policy", "oracle", "--trials", "2", "--tasks", ",".join(TASKS[:2])]
    args += ["--db", sqlite_url(tmp_path / "p.db"), "--output", str(out)]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    profile = json.loads(out.read_text())
    assert {"consistency", "robustness", "predictability", "safety"} <= set(profile)
    assert set(profile["runs"]) == {"clean", "faults", "user", "env"}
    assert profile["predictability"] == {"reported": False} | {
        key: None for key in ("brier", "ece", "mean_confidence", "success_rate")
    } | {"trials_with_confidence": 0}
    assert profile["consistency"]["disagreement"] == 0.0
    assert "not reported" in result.output
    svg = out.with_suffix(".svg").read_text()
    assert svg.startswith("<svg") and "robustness" in svg and "not reported" in svg
    rerun = invoke(*args)
    assert rerun.exit_code == 0 and rerun.output.count("(0 trials run") == 4  # every condition resumed
    assert json.loads(out.read_text()) == profile


def test_the_profile_command_is_the_apis_profile(tmp_path: Path) -> None:
    """`castbench profile` is `castbench.profile` shown: the same runs (the API resumes every
    one the command stored) and the same profile; a perturbation left out is no run."""
    db = sqlite_url(tmp_path / "p.db")
    args = ["profile", "-d", "retail", "--policy", "oracle", "--trials", "1", "--tasks", TASKS[0]]
    args += ["--db", db, "--env-perturb", "none", "--tool-faults", "0.5", "--fault-kinds", "error"]
    args += ["--output", str(tmp_path / "p.json")]
    assert invoke(*args).exit_code == 0
    shown = json.loads((tmp_path / "p.json").read_text())
    perturbations = Perturbations(
        tool_faults=0.5, fault_kinds=["error"], user=["paraphrase", "reorder", "typos"]
    )
    found = profile(
        domains="retail", policy="oracle", trials=1, tasks=[TASKS[0]], db=db, perturbations=perturbations
    )
    assert list(found.results) == ["clean", "faults", "user"]
    assert all(result.outcome.ran == 0 for result in found.results.values())  # every run resumed
    assert json.loads(found.profile.model_dump_json()) == shown
    configs = {name: result.summary.config.perturbations for name, result in found.results.items()}
    assert configs["clean"] == Perturbations()
    assert configs["faults"] == Perturbations(tool_faults=0.5, fault_kinds=["error"])
    assert configs["user"] == Perturbations(user=["paraphrase", "reorder", "typos"])


def test_runs_show_and_the_viewer_show_injected_faults(tmp_path: Path) -> None:
    from castbench_boards.viewer.payload import trial_payload

    db = sqlite_url(tmp_path / "f.db")
    faults = Perturbations(tool_faults=1.0, fault_kinds=["rate_limit"])
    run = evaluate(domains="retail", policy="oracle", trials=1, tasks=TASKS[:1], db=db, perturbations=faults)
    shown = invoke("runs", "show", run.outcome.run_id, "--task", TASKS[0], "--db", db)
    assert shown.exit_code == 0 and "fault injected: rate_limit" in shown.output
    summary = invoke("runs", "show", run.outcome.run_id, "--db", db)
    assert "perturbed: faults 100% (rate_limit)" in summary.output
    [record] = ResultsStore(db).trials(run.outcome.run_id)
    steps = trial_payload(record)["steps"]
    assert [s.get("fault") for s in steps] == [step.fault for step in record.steps]
    assert "rate_limit" in [s.get("fault") for s in steps]


def test_verify_replays_a_perturbed_run(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "v.db")
    every = Perturbations(
        tool_faults=0.4, user=["paraphrase", "reorder", "typos"], env=["field_order", "extra_fields"]
    )
    run = evaluate(
        domains="retail", policy="scripted:noisy", trials=2, tasks=TASKS[:3], db=db, perturbations=every
    )
    records = ResultsStore(db).trials(run.outcome.run_id)
    assert any(step.fault for record in records for step in record.steps)
    verified = invoke("verify", run.outcome.run_id, "--db", db)
    assert verified.exit_code == 0, verified.output
    assert "re-executed and re-graded as stored" in verified.output
