"""Every built-in domain end to end, and all of them at once as `castbench eval --domain all` runs
them: the oracle passes every task, the noisy policy's reliability falls with k, the same seed
gives the same figures whether a domain runs alone or with the others, and the pooled overall
figures are the per-domain counts pooled (tasks are the unit), recomputed here from the stored
trial rewards (`tests/metrics/reference.py`)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._results.report.summary import RunSummary
from castbench._run.api import evaluate
from castbench.domain import Domain, load_domain
from tests.metrics.reference import recompute
from tests.support import DOMAINS, invoke, sqlite_url

pytestmark = pytest.mark.slow  # every domain's test split, several runs

TRIALS = 4
SAME_FIGURES = ("per_task", "pass_hat", "pass_at", "ci95", "ci95_at", "failure_categories", "end_reasons")


@dataclass(frozen=True)
class PooledRun:
    summary: RunSummary
    """As `--output` wrote it."""
    records: list[TrialRecord]


@pytest.fixture(scope="module")
def pooled(tmp_path_factory: pytest.TempPathFactory) -> PooledRun:
    """The main job: every domain's test split, the noisy policy, seed 0 (4 trials: half the
    default 8 is enough for pass^k to fall and keeps the suite fast)."""
    folder = tmp_path_factory.mktemp("all-domains")
    db, output = sqlite_url(folder / "runs.db"), folder / "summary.json"
    result = invoke("eval", "--domain", "all", "--trials", str(TRIALS), "--seed", "0", "--db", db,
                    "--output", str(output))  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = RunSummary.model_validate(json.loads(output.read_text()))
    return PooledRun(summary, ResultsStore(db).trials(summary.run_id))


def _trials(records: list[TrialRecord]) -> list[tuple[str, int, int, float | None, int]]:
    return [(r.task_id, r.trial_index, r.seed, r.reward, len(r.steps)) for r in records]


def test_the_oracle_passes_every_task(domain: Domain, db_url: str) -> None:
    result = evaluate(domains=domain.name, policy="oracle", trials=2, db=db_url)
    report = result.summary.domains[domain.name]
    n_tasks = len(domain.tasks("test"))
    assert report.n_tasks == n_tasks and report.n_trials == 2 * n_tasks
    assert report.pass_hat == report.pass_at == {1: 1.0, 2: 1.0}
    assert report.errored_trials == 0 and report.incomplete_tasks == [] and report.surface_success == 0
    assert report.failure_categories == {}
    assert result.summary.config.privileged == ["policy"]


def test_a_noisy_domain_alone_falls_with_k_and_repeats_its_figures_in_the_pool(
    domain: Domain, db_url: str, pooled: PooledRun
) -> None:
    result = evaluate(domains=domain.name, policy="scripted:noisy", trials=TRIALS, seed=0, db=db_url)
    report = result.summary.domains[domain.name]
    hat = report.pass_hat
    assert 1.0 > hat[1] > hat[2] > hat[3] > hat[4] > 0.0
    assert all(hat[k] >= hat[k + 1] for k in range(1, TRIALS))
    assert report.pass_at[1] == hat[1] < report.pass_at[TRIALS]
    assert report.failure_categories and report.errored_trials == 0
    # the same seed: the same trials and figures as this domain's part of the run of all domains
    in_pool = pooled.summary.domains[domain.name]
    for figure in SAME_FIGURES:
        assert getattr(report, figure) == getattr(in_pool, figure), figure
    alone = ResultsStore(db_url).trials(result.outcome.run_id)
    assert _trials(alone) == _trials([r for r in pooled.records if r.domain == domain.name])


def test_the_pooled_figures_are_the_domains_counts_pooled(pooled: PooledRun) -> None:
    summary = pooled.summary
    assert list(summary.domains) == list(DOMAINS)
    overall, reports = summary.overall, summary.domains.values()
    assert overall.per_task == {
        f"{name}/{task}": outcome
        for name, report in summary.domains.items()
        for task, outcome in report.per_task.items()
    }
    n_tasks = sum(len(load_domain(name).tasks("test")) for name in DOMAINS)
    assert overall.n_tasks == sum(r.n_tasks for r in reports) == n_tasks
    assert overall.n_trials == sum(r.n_trials for r in reports) == TRIALS * n_tasks == len(pooled.records)
    for k in range(1, TRIALS + 1):  # a task-weighted mean of the domains, not their plain mean
        weighted = sum(r.pass_hat[k] * r.n_tasks for r in reports) / n_tasks
        assert overall.pass_hat[k] == pytest.approx(weighted, abs=1e-12)
    assert overall.end_reasons == {
        reason: sum(r.end_reasons.get(reason, 0) for r in reports) for reason in overall.end_reasons
    }


def test_every_figure_is_recomputed_from_the_stored_rewards(pooled: PooledRun) -> None:
    for name, report in pooled.summary.domains.items():
        reference = recompute([r for r in pooled.records if r.domain == name], TRIALS)
        assert {task: (o.n, o.successes) for task, o in report.per_task.items()} == reference.counts
        assert report.pass_hat == pytest.approx(reference.pass_hat, abs=1e-12), name
        assert report.pass_at == pytest.approx(reference.pass_at, abs=1e-12), name
    reference = recompute(pooled.records, TRIALS, pooled=True)
    overall = pooled.summary.overall
    assert {task: (o.n, o.successes) for task, o in overall.per_task.items()} == reference.counts
    assert overall.pass_hat == pytest.approx(reference.pass_hat, abs=1e-12)
    assert overall.pass_at == pytest.approx(reference.pass_at, abs=1e-12)
    assert 0.0 < overall.pass_hat[TRIALS] < overall.pass_hat[1] < overall.pass_at[TRIALS] <= 1.0


def test_reference_recomputation_sees_a_changed_reward(pooled: PooledRun) -> None:
    """The control: one flipped reward changes the recomputed figures, so the comparison above can fail."""
    first = pooled.records[0]
    flipped = first.model_copy(update={"reward": 0.0 if first.passed else 1.0})
    changed = recompute([flipped, *pooled.records[1:]], TRIALS, pooled=True)
    assert changed.pass_hat[1] != pytest.approx(pooled.summary.overall.pass_hat[1], abs=1e-12)
