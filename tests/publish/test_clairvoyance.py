"""Clairvoyance forensics: a passing trial whose writes use identifiers nothing in the
conversation revealed could not have been played by an agent that saw only what it was given.
`verify` (exit 2), `import` (exit 2; `--force` imports it marked) and `leaderboard build` refuse
such a run when its agents declared no privilege: an oracle export relabelled as a team's agent
is caught. Honest runs show none: every scripted policy that declares no privilege, on every
castbench domain and τ pack, and an agent that learns every identifier from the conversation (the
oracle on castbench's domains, whose ground truth looks everything up). The committed runs are
examined where they are verified (`test_verify.py::test_the_committed_results_verify`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from castbench._agents.registry import builtin_agents
from castbench._base.conversation import ReplyAction, ToolCallAction, ToolResultTurn, UserTurn
from castbench._records.provenance import AgentPlacement, placement_problems
from castbench._records.store import ResultsStore
from castbench._records.store.export import ExportedRun, export_run, read_export, write_export
from castbench._records.trial import Proposal, StepRecord, TrialRecord
from castbench._results.publish.board import BoardError, BoardSpec, Entry
from castbench._results.publish.forensics import examine_run, examine_trial
from castbench._results.publish.verify import verify_run
from castbench._run.api import evaluate
from castbench.domain import load_domain
from castbench_boards.build import build_board
from tests.support import DOMAINS, invoke, sqlite_url

REPO = Path(__file__).resolve().parents[2]
TAU = ("tau-retail", "tau-airline", "tau-telecom", "tau-telehealth")
TAU_PACKS = [pytest.param(name, marks=pytest.mark.extra("tau")) for name in TAU]
HONEST = [agent.name for agent in builtin_agents("policy") if not agent.privileged and not agent.model_backed]
TASKS = 3


def _tasks(domain: str, count: int) -> list[str]:
    return [task.id for task in load_domain(domain).tasks("test")[:count]]


@dataclass(frozen=True)
class OracleRun:
    path: Path
    exported: ExportedRun


@pytest.fixture(scope="module")
def tau_oracle(tmp_path_factory: pytest.TempPathFactory) -> OracleRun:
    """The oracle on 6 tasks of τ-retail and τ-airline (their ground truth holds only the writes:
    it acts on ids the user never said), exported."""
    root = tmp_path_factory.mktemp("tau-oracle")
    db = sqlite_url(root / "runs.db")
    tasks = _tasks("tau-retail", 6) + _tasks("tau-airline", 6)
    result = evaluate(db=db, domains="tau-retail,tau-airline", tasks=tasks, trials=1, policy="oracle")
    path = root / "results" / "oracle.castbench.json.gz"
    write_export(export_run(ResultsStore(db), result.outcome.run_id), path)
    return OracleRun(path, read_export(path))


def relabelled(exported: ExportedRun) -> ExportedRun:
    """The newcomer audit's forgery, done carefully: a team's agent that declares no privilege,
    recorded as sandboxed (so the placement agrees with the spec), hash recomputed. Only the
    trajectories can give it away."""
    placement = dict(exported.config.placement)
    placement["policy"] = AgentPlacement(agent="my_agent:Agent", where="sandboxed", detail="landlock ABI 7")
    config = exported.config.model_copy(
        update={"policy": "my_agent:Agent", "privileged": [], "placement": placement}
    )
    assert not placement_problems(config), "the forgery is consistent with itself"
    return exported.model_copy(update={"config": config, "config_hash": config.config_hash()})


@pytest.mark.extra("tau")
def test_the_privileged_oracle_may_be_clairvoyant(tau_oracle: OracleRun, tmp_path: Path) -> None:
    exported = tau_oracle.exported
    report = verify_run(exported.run_id, exported.config, exported.trials, exported.config_hash)
    assert report.ok and report.forensics is not None
    assert report.forensics.clairvoyant and not report.clairvoyant  # counted, allowed
    checked = invoke("verify", str(tau_oracle.path))
    assert checked.exit_code == 0 and "clairvoyant (allowed: privileged policy)" in checked.output
    imported = invoke("import", str(tau_oracle.path), "--db", sqlite_url(tmp_path / "i.db"))
    count = len(report.forensics.clairvoyant)
    assert (
        imported.exit_code == 0
        and f"{count} passing trials act on identifiers nobody revealed" in imported.output
    )


@pytest.mark.extra("tau")
def test_a_relabelled_oracle_is_refused_as_clairvoyant_naming_its_trials(
    tau_oracle: OracleRun, tmp_path: Path
) -> None:
    forged = relabelled(tau_oracle.exported)
    report = verify_run(forged.run_id, forged.config, forged.trials, forged.config_hash)
    assert report.verified and report.clairvoyant and not report.ok  # every trial replays: only this
    assert report.forensics is not None
    first = report.forensics.clairvoyant[0]

    path = tmp_path / "results" / "mine.castbench.json.gz"
    write_export(forged, path)
    checked = invoke("verify", str(path))
    assert checked.exit_code == 2, checked.output
    named = f"task {first.task_id} trial {first.trial_index}"
    assert "clairvoyant" in checked.output and named in checked.output

    db = sqlite_url(tmp_path / "import.db")
    imported = invoke("import", str(path), "--db", db)
    assert imported.exit_code == 2 and "clairvoyant" in imported.output and first.task_id in imported.output
    assert ResultsStore(db).runs() == []

    forced = invoke("import", str(path), "--db", db, "--force")
    assert forced.exit_code == 0 and "marked clairvoyant" in forced.output, forced.output
    (row,) = ResultsStore(db).runs()
    marks = json.loads(row.meta_json)["clairvoyant"]
    assert len(marks) == len(report.forensics.clairvoyant) and first.task_id in marks[0]

    spec = BoardSpec(
        name="b",
        title="B",
        domains={"tau-retail": 1, "tau-airline": 1},
        trials=1,
        metrics=["pass^1"],
        entries=[Entry(name="mine", run="results/mine.castbench.json.gz")],
    )  # type: ignore[list-item]
    with pytest.raises(BoardError, match="clairvoyant"):
        build_board(spec, tmp_path, tmp_path / "out", force=True)


@pytest.mark.parametrize("policy", HONEST)
@pytest.mark.parametrize("domain", [*DOMAINS, *TAU_PACKS])
def test_honest_scripted_runs_show_no_clairvoyant_trial(domain: str, policy: str, tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    result = evaluate(db=db, domains=domain, tasks=_tasks(domain, TASKS), trials=1, policy=policy)
    trials = ResultsStore(db).trials(result.outcome.run_id)
    report = examine_run(result.outcome.run_id, [], trials, {domain: load_domain(domain)})
    assert report.clairvoyant == [], report.describe()


@pytest.mark.parametrize("domain", DOMAINS)
def test_an_agent_that_learns_every_id_from_the_conversation_is_not_flagged(
    domain: str, tmp_path: Path
) -> None:
    """The oracle on castbench's domains asks for the user's facts and runs the ground truth's
    look-ups before its writes: every identifier it writes with was revealed first."""
    db = sqlite_url(tmp_path / "runs.db")
    result = evaluate(db=db, domains=domain, tasks=_tasks(domain, 8), trials=1, policy="oracle")
    trials = ResultsStore(db).trials(result.outcome.run_id)
    writes = sum(
        isinstance(step.action, ToolCallAction) and load_domain(domain).toolkit.is_write(step.action.name)
        for trial in trials
        if trial.passed
        for step in trial.steps
    )
    assert writes > 0  # the check has writes to look at
    report = examine_run(result.outcome.run_id, [], trials, {domain: load_domain(domain)})
    assert report.clairvoyant == [], report.describe()


def _trial(*steps: StepRecord, opening: str = "Hi, please cancel my order.") -> TrialRecord:
    return TrialRecord(
        domain="retail",
        domain_version=load_domain("retail").version,
        task_id="t",
        trial_index=0,
        seed=0,
        status="scored",
        reward=1.0,
        end_reason="user_stop",
        opening=opening,
        steps=list(steps),
    )


def _call(index: int, name: str, arguments: dict[str, object], content: str = "{}") -> StepRecord:
    action = ToolCallAction(name=name, arguments=arguments)
    return StepRecord(
        index=index,
        proposals=[Proposal(round=0, action=action)],
        action=action,
        observation=ToolResultTurn(call_id=f"call_{index}", name=name, content=content),
    )


def _answer(index: int, text: str) -> StepRecord:
    reply = ReplyAction(text="Which order?")
    proposals = [Proposal(round=0, action=reply)]
    return StepRecord(index=index, proposals=proposals, action=reply, observation=UserTurn(text=text))


def _an_order() -> tuple[str, str]:
    """A pending order's id and its user's id in the retail data."""
    orders = load_domain("retail").pristine["orders"]
    order_id, row = next((key, row) for key, row in orders.items() if row["status"] == "pending")
    return order_id, row["user_id"]


def test_an_id_nobody_said_is_flagged_and_one_the_user_said_in_another_form_is_not() -> None:
    domain = load_domain("retail")
    order_id, _ = _an_order()
    cancel = {"order_id": order_id, "reason": "no longer needed"}
    blind = _trial(_call(0, "cancel_pending_order", cancel))
    found = examine_trial(domain, blind)
    assert found is not None and found.identifiers == [order_id]  # "no longer needed" is no identifier
    told = _answer(0, f"It is order {order_id.lstrip('#').lower()}.")  # no '#', lower case
    said = _trial(told, _call(1, "cancel_pending_order", cancel))
    assert examine_trial(domain, said) is None


def test_ids_from_nested_tool_output_count_as_revealed() -> None:
    domain = load_domain("retail")
    order_id, user_id = _an_order()
    details = json.dumps({"user_id": user_id, "orders": [{"nested": {"id": order_id}}]})
    trial = _trial(
        _answer(0, f"My user id is {user_id.upper()}"),
        _call(1, "get_user_details", {"user_id": user_id}, details),
        _call(2, "cancel_pending_order", {"order_id": order_id, "reason": "no longer needed"}),
    )
    assert examine_trial(domain, trial) is None
