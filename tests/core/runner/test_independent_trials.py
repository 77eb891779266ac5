"""Independent trials: an import-path agent gets a fresh process for every trial, so nothing it
kept (module state, a file in its scratch folder, HOME or the temporary folder, a thread started
at import, a shared mapping re-attached by `os.register_at_fork`, a daemon it left behind) reaches
the next trial. A remembering agent scores exactly as its memory-less twin; in castbench's own
process (`--in-process`) the same agent's memory works, which is what these tests would catch.

Raising castbench's infrastructure errors buys no retry, every process a trial started ends with
it, and what the agent wrote is kept with its trial, capped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from castbench._base.errors import FatalInfrastructureError
from castbench._records.store import ResultsStore
from castbench._run.api import build_config, evaluate
from castbench._run.plan import plan_trials
from castbench._trial.seeds import trial_seed
from tests.core.toy import build_toy_domain, register_toy, toy_task
from tests.postgres import new_database
from tests.support import invoke, process_ended, sqlite_url

AGENTS = "tests.core.runner.remembering_agents"
TASKS = ["retail-test-0001", "retail-test-0002", "airline-test-0001", "airline-test-0002"]
ROUTES = ["module", "scratch", "home", "tmp", "thread", "atfork", "daemon"]


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Three tasks a policy that does nothing passes, each with its own opening."""
    openings = ("Hello, case alpha.", "Hello, case bravo.", "Hello, case charlie.")
    tasks = [toy_task(f"toy-{i}", [], outcome="no_change", request=text) for i, text in enumerate(openings)]
    register_toy(monkeypatch, build_toy_domain(tmp_path / "toy", tasks))
    return [task["id"] for task in tasks]


def _port(route: str) -> int:
    return 40000 + (os.getpid() * 7 + ROUTES.index(route)) % 20000


def _run(policy: str, tasks: list[str], db: str, **options: object):  # type: ignore[no-untyped-def]
    return evaluate(domains="toy", policy=policy, trials=4, tasks=tasks, db=db, fresh=True, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("route", ROUTES)
def test_a_remembering_agent_scores_as_its_memoryless_twin(
    route: str, toy: list[str], tmp_path: Path
) -> None:
    db = sqlite_url(tmp_path / "r.db")
    twin = _run(f"{AGENTS}:RememberingPolicy?via=none", toy, db)
    remembering = _run(f"{AGENTS}:RememberingPolicy?via={route}&port={_port(route)}", toy, db)
    assert twin.summary.overall.pass_hat == {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0}
    assert remembering.summary.overall.pass_hat == twin.summary.overall.pass_hat
    assert remembering.summary.domains["toy"].end_reasons == {"agent_error": 12}


def test_in_castbench_s_process_the_memory_works_and_the_run_says_so(toy: list[str], tmp_path: Path) -> None:
    """The control: where the agent is not isolated (`--in-process`), its module state carries."""
    result = _run(
        f"{AGENTS}:RememberingPolicy?via=module", toy, sqlite_url(tmp_path / "r.db"), in_process=True
    )
    assert result.summary.overall.pass_hat[1] == 0.75  # every trial but each task's first
    assert result.summary.domains["toy"].end_reasons == {"agent_error": 3, "user_stop": 9}


def _replies(db: str, run_id: str) -> list[str]:
    return [
        step.action.text  # type: ignore[union-attr]
        for record in ResultsStore(db).trials(run_id)
        for step in record.steps
        if getattr(step.action, "text", None)
    ]


def test_nothing_carries_between_concurrent_trials(toy: list[str], tmp_path: Path) -> None:
    """Trials in flight at once are processes of their own too, and a daemon one left cannot
    answer another over UDP (the sandbox refuses UDP sockets)."""
    db = sqlite_url(tmp_path / "r.db")
    routes = ROUTES
    port = _port("daemon")
    result = _run(f"{AGENTS}:ReportingPolicy?via={','.join(routes)}&port={port}", toy, db, concurrency=3)
    replies = _replies(db, result.outcome.run_id)
    assert len(replies) == 12
    assert all(reply.startswith("remembered " + " ".join(f"{r}=0" for r in routes)) for reply in replies)


def test_a_daemon_the_agent_left_ends_with_its_trial(toy: list[str], tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "r.db")
    result = evaluate(domains="toy", policy=f"{AGENTS}:DaemonPolicy", trials=2, tasks=toy[:1], db=db)
    records = ResultsStore(db).trials(result.outcome.run_id)
    pids = [int(reply.split()[1].rstrip(".")) for reply in _replies(db, result.outcome.run_id)]
    assert len(pids) == 2 and all(
        process_ended(pid, within=0.5) for pid in pids
    )  # dead when the trial was stored
    for record in records:
        assert (
            record.agent_output["policy"] == "[castbench: 1 process(es) the agent left running were killed]"
        )


@pytest.mark.parametrize("fatal", [False, True])
def test_an_agent_raising_infrastructure_errors_gets_no_retry(
    fatal: bool, toy: list[str], tmp_path: Path
) -> None:
    db = sqlite_url(tmp_path / "r.db")
    result = _run(f"{AGENTS}:RerollingPolicy?fatal={str(fatal).lower()}", toy, db)
    records = ResultsStore(db).trials(result.outcome.run_id)
    assert result.summary.status == "complete" and len(records) == 12  # no stop, no re-roll
    assert all(record.attempts == 1 and record.retried_for == [] for record in records)
    failed = [record for record in records if not record.passed]
    assert failed and all(
        record.end_reason == "agent_error" and record.status == "scored" for record in failed
    )
    assert all("the model server is down" in (record.error or "") for record in failed)


def test_what_an_agent_writes_is_kept_with_its_trial_capped(toy: list[str], tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "r.db")
    result = evaluate(domains="toy", policy=f"{AGENTS}:LoudPolicy", trials=1, tasks=toy[:1], db=db)
    (record,) = ResultsStore(db).trials(result.outcome.run_id)
    output = record.agent_output["policy"]
    assert output.startswith("x" * 1000) and len(output) < 70_000
    assert "more bytes of output dropped]" in output


def test_trials_run_round_by_round_with_the_seeds_they_had() -> None:
    config, _ = build_config(domains="retail,airline", policy="oracle", trials=3, tasks=TASKS)
    jobs = list(plan_trials(config))
    order = [(job.domain.name, job.task.id, job.trial_index) for job in jobs]
    per_round = len(TASKS)
    assert [index for _, _, index in order] == [i for i in range(3) for _ in range(per_round)]
    assert all(a[1] != b[1] for a, b in zip(order, order[1:], strict=False))  # never a task twice in a row
    assert sorted(order) == sorted(
        (domain, task, index) for domain, task in {(d, t) for d, t, _ in order} for index in range(3)
    )
    assert all(
        job.seed == trial_seed(config.seed, job.domain.name, job.task.id, job.trial_index) for job in jobs
    )


def test_re_running_a_stopped_run_keeps_the_stopped_trial_on_the_record(
    toy: list[str], tmp_path: Path
) -> None:
    """In castbench's process an agent can still stop the run with a fatal error; the trial it
    stopped is stored, so the re-run's retry of it is on the record (and boards refuse it)."""
    db = sqlite_url(tmp_path / "r.db")
    options = {"domains": "toy", "policy": f"{AGENTS}:RerollingPolicy?fatal=true", "trials": 1, "db": db}
    with pytest.raises(FatalInfrastructureError):
        evaluate(**options, tasks=toy[:1], in_process=True)  # type: ignore[arg-type]
    (stopped,) = ResultsStore(db).trials(ResultsStore(db).run("latest").id)
    assert stopped.status == "error" and stopped.end_reason == "infra_error"
    assert "the run stopped in this trial" in (stopped.error or "")
    resumed = evaluate(**options, tasks=toy[:1], in_process=True)  # type: ignore[arg-type]
    assert resumed.outcome.resumed
    (record,) = ResultsStore(db).trials(resumed.outcome.run_id)
    assert record.passed and record.attempts == 2  # the re-roll, on the record


def test_runs_show_prints_what_the_agent_wrote(toy: list[str], tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "r.db")
    evaluate(domains="toy", policy=f"{AGENTS}:LoudPolicy?size=10", trials=1, tasks=toy[:1], db=db)
    shown = invoke("runs", "show", "latest", "--task", toy[0], "--db", db)
    assert shown.exit_code == 0, shown.output
    assert "policy output: xxxxxxxxxx" in shown.output and "loud policy on stderr" in shown.output


def test_nothing_carries_on_a_shared_store(toy: list[str], postgres: str) -> None:
    """The shared store's placement (trials split through leases) runs the same workers."""
    db = new_database(postgres)
    routes = [route for route in ROUTES if route != "daemon"]
    result = _run(f"{AGENTS}:ReportingPolicy?via={','.join(routes)}", toy, db, concurrency=2)
    assert result.outcome.ran == 12
    assert json.loads(ResultsStore(db).run(result.outcome.run_id).meta_json)["execution"]["shared"]
    replies = _replies(db, result.outcome.run_id)
    assert len(replies) == 12
    assert all(reply.startswith("remembered " + " ".join(f"{r}=0" for r in routes)) for reply in replies)
    twin = _run(f"{AGENTS}:RememberingPolicy?via=none", toy, new_database(postgres))
    remembering = _run(f"{AGENTS}:RememberingPolicy?via=module", toy, new_database(postgres), concurrency=2)
    assert remembering.summary.overall.pass_hat == twin.summary.overall.pass_hat


def test_the_isolation_is_on_the_console_in_the_output_and_in_runs_list(
    toy: list[str], tmp_path: Path
) -> None:
    db, output = sqlite_url(tmp_path / "r.db"), tmp_path / "summary.json"
    ran = invoke(
        "eval", "--domain", "toy", "--policy", f"{AGENTS}:ReportingPolicy", "--trials", "1",
        "--tasks", toy[0], "--db", db, "--output", str(output),
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    assert "trial isolation: process per trial" in ran.output
    assert json.loads(output.read_text())["provenance"]["trial_isolation"] == "process per trial"
    listed = invoke("runs", "list", "--json", "--db", db)
    assert [run["trial_isolation"] for run in json.loads(listed.output)] == ["process per trial"]
    in_process = invoke(
        "eval", "--domain", "toy", "--policy", f"{AGENTS}:ReportingPolicy", "--trials", "1",
        "--tasks", toy[0], "--db", db, "--in-process",
    )  # fmt: skip
    assert "trial isolation none: the agent runs in castbench's process:" in " ".join(
        in_process.output.split()
    )
