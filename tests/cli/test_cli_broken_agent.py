"""A run whose agent fails every trial the same way stops early, says the reason in one line and
exits non-zero (it ran every trial and exited 0, one table row showing it)."""

from __future__ import annotations

import pytest

from castbench._records.store import ResultsStore
from tests.support import invoke

TRIALS = "4"  # x 30 retail test tasks: 120 planned trials


@pytest.mark.parametrize(
    ("policy", "reason", "isolated"),
    [
        ("tests.cli.broken_agents:NoBriefingPolicy", "takes 1 positional argument but 2 were given", False),
        ("tests.cli.broken_agents:NoViewPolicy", "takes 1 positional argument but 2 were given", True),
        (
            "tests.cli.broken_agents:StrictPolicy?tone=rude",
            "tone must be polite or formal, not 'rude'",
            False,
        ),
    ],
)
def test_a_broken_agent_stops_the_run_with_its_reason(
    db_url: str, policy: str, reason: str, isolated: bool
) -> None:
    where = [] if isolated else ["--in-process"]
    result = invoke(
        "eval", "--domain", "retail", "--trials", TRIALS, "--db", db_url, "--policy", policy, *where
    )
    assert result.exit_code == 4, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and reason in errors[0] and "agent_error" in errors[0], result.output
    assert "Traceback" not in result.output
    store = ResultsStore(db_url)
    (run,) = store.runs()
    stored = store.trials(run.id)
    assert 3 <= len(stored) < 120  # stopped early; what ran is kept
    assert all(record.end_reason == "agent_error" for record in stored)


def test_an_agent_that_fails_only_sometimes_runs_to_the_end(db_url: str) -> None:
    """A run with any trial that did not fail so (here: the scripted policy's) is never cut short."""
    result = invoke(
        "eval", "--domain", "retail", "--trials", "1", "--db", db_url, "--tasks", "retail-test-0001"
    )
    assert result.exit_code == 0, result.output
