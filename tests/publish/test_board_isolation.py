"""Trial isolation on boards and in the gate: every row says what kept its trials independent;
`require_isolated_trials` refuses runs whose agent could carry memory between trials
(`--in-process`, agent services); rows of agents outside castbench's sandbox are marked and
refused where `allow_outside_castbench = false`; runs whose retries an agent could have caused are
refused by boards and by the gate, and the gate refuses runs of different isolation."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._records.provenance import AgentPlacement, Provenance, RunOrigin, provenance
from castbench._records.store import ResultsStore
from castbench._records.store.export import ExportedRun, export_run
from castbench._results.compare.comparability import comparability_number, comparability_problems
from castbench._results.publish.board import BoardSpec, load_board
from castbench._results.report.summary import summarize_run
from castbench._run.api import evaluate
from castbench.domain import resolve_domains
from castbench_boards.rows import eligibility_problems
from tests.support import sqlite_url

TEAM = "tests.core.fixtures_agents:TeamPolicy"
REROLL = "tests.core.runner.remembering_agents:RerollingPolicy"
TASKS = ["retail-test-0001", "retail-test-0002"]


def _board(tmp_path: Path, settings: str = "") -> BoardSpec:
    number = comparability_number(resolve_domains("retail")[0].version)
    path = tmp_path / "leaderboards" / "b.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'title = "B"\ndomains = {{ retail = {number} }}\ntrials = 2\nmetrics = ["pass^1"]\n{settings}'
    )
    return load_board(path)


def _export(tmp_path: Path, policy: str, **options: object) -> ExportedRun:
    db = sqlite_url(tmp_path / f"{abs(hash((policy, tuple(options.items()))))}.db")
    result = evaluate(domains="retail", policy=policy, trials=2, tasks=TASKS, db=db, **options)  # type: ignore[arg-type]
    return export_run(ResultsStore(db), result.outcome.run_id)


def _problems(spec: BoardSpec, exported: ExportedRun) -> list[str]:
    summary = summarize_run(exported.run_id, exported.config, exported.trials)
    found = eligibility_problems(spec, exported, summary)
    return [problem for problem in found if "subset" not in problem and "inside castbench" not in problem]


def test_boards_require_isolated_trials_where_they_say_so(tmp_path: Path) -> None:
    worker = _export(tmp_path, TEAM)
    in_process = _export(tmp_path, TEAM, in_process=True)
    strict = _board(tmp_path, "require_isolated_trials = true\n")
    assert _problems(strict, worker) == []
    assert _problems(strict, in_process) == [
        "trial isolation none: the agent runs in castbench's process: the board requires isolated trials "
        "(require_isolated_trials)"
    ]
    assert _problems(_board(tmp_path), in_process) == []


def test_rows_outside_castbench_are_refused_where_the_board_says_so(tmp_path: Path) -> None:
    from castbench_boards.rows import _isolation_problems

    service = Provenance(
        origin=RunOrigin(kind="run"),
        agents={"policy": AgentPlacement(agent="http://127.0.0.1:9/", where="service")},
    )
    assert service.outside_castbench == ["policy"] and not service.isolated_trials
    assert _isolation_problems(_board(tmp_path), service) == []
    refusing = _board(tmp_path, "allow_outside_castbench = false\n")
    assert _isolation_problems(refusing, service) == [
        "the policy ran outside castbench's sandbox (an agent service); the board allows none "
        "(allow_outside_castbench = false)"
    ]


@pytest.mark.parametrize("in_process", [False, True])
def test_retries_an_agent_could_have_caused_are_refused(in_process: bool, tmp_path: Path) -> None:
    exported = _export(tmp_path, REROLL, in_process=in_process)
    retried = [record for record in exported.trials if record.attempts > 1]
    problems = _problems(_board(tmp_path), exported)
    if not in_process:  # in its worker, raising buys nothing: no retry, nothing to refuse
        assert retried == [] and problems == []
        return
    assert retried, "castbench retried the in-process agent's InfrastructureError (this seed)"
    assert problems == [
        f"{len(retried)} trial(s) retried after infrastructure errors that its policy could have raised; "
        "a re-rolled trial is not an independent one"
    ]


def test_the_gate_refuses_runs_of_different_isolation(tmp_path: Path) -> None:
    worker, in_process = _export(tmp_path, TEAM), _export(tmp_path, TEAM, in_process=True)
    summaries = [
        summarize_run(e.run_id, e.config, e.trials).model_copy(
            update={"provenance": provenance(e.config, e.meta)}
        )
        for e in (worker, in_process)
    ]
    assert comparability_problems(summaries[0], summaries[0]) == []
    assert comparability_problems(*summaries) == [
        "trial isolation differs: process per trial (baseline) vs "
        "none: the agent runs in castbench's process (candidate)"
    ]
