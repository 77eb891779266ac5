"""The Python function of each command, from `castbench` alone, as a script or CI job calls them:
two stored runs compared, gated and verified, a domain validated, without the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

import castbench
from castbench.domain import load_domain

TASKS = ["retail-test-0001", "retail-test-0002", "retail-test-0003"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """The oracle and the noisy scripted policy on the same tasks and seeds (2 trials each)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('runs') / 'r.db'}"
    common = {"domains": "retail", "tasks": TASKS, "trials": 2, "db": url}
    oracle = castbench.evaluate(policy="oracle", **common).outcome.run_id  # type: ignore[arg-type]
    noisy = castbench.evaluate(policy="scripted:noisy", **common).outcome.run_id  # type: ignore[arg-type]
    return url, oracle, noisy


def test_comparison_gives_the_difference_per_domain(runs: tuple[str, str, str]) -> None:
    url, oracle, noisy = runs
    comparison, warnings = castbench.comparison(oracle, noisy, db=url)
    assert warnings == []
    assert [domain.domain for domain in comparison.domains] == ["retail"]
    assert comparison.baseline.startswith(oracle) and comparison.candidate.startswith(noisy)


def test_gate_decides_each_check_and_refuses_a_run_against_itself(runs: tuple[str, str, str]) -> None:
    url, oracle, noisy = runs
    checks = [castbench.Check(metric="pass^1", max_drop=1.0)]
    result = castbench.gate(oracle, noisy, checks, db=url)
    assert [check.verdict.value for check in result.results] == ["PASS"]  # nothing falls by more than 1
    with pytest.raises(castbench.GateError, match="the same run"):
        castbench.gate(oracle, oracle, checks, db=url)
    with pytest.raises(castbench.SourceError):
        castbench.gate("r-nothere", oracle, checks, db=url)


def test_verify_replays_a_stored_and_an_exported_run(runs: tuple[str, str, str], tmp_path: Path) -> None:
    url, oracle, _ = runs
    assert castbench.verify(oracle, db=url).verified
    exported = castbench.export_run(castbench.ResultsStore(url, read_only=True), oracle)
    path = tmp_path / f"{oracle}.castbench.json.gz"
    castbench.write_export(exported, path)
    report = castbench.verify(str(path))
    assert report.verified and report.trials == len(TASKS) * 2
    with pytest.raises(castbench.ArchiveError):
        castbench.verify("r-nothere", db=url)


def test_validate_domain_plays_the_refusal_floor() -> None:
    report = castbench.validate_domain(load_domain("telehealth"))
    assert report.ok and report.refused == [] and sum(report.counts.values()) > 0
