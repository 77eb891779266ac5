"""`castbench verify`: every stored trial re-executed in a fresh sandbox and graded again.
An export whose rewards were edited, or whose trajectory does not follow from its actions, is
refused by `import` and `leaderboard build`; honest exports, and the committed results, verify."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._base.conversation import ToolResultTurn
from castbench._records.store import ResultsStore
from castbench._records.store.export import ArchiveError, ExportedRun, read_export, write_export
from castbench._results.compare.comparability import comparability_number
from castbench._results.publish.archive import import_run
from castbench._results.publish.board import BoardError, BoardSpec, Entry
from castbench._results.publish.verify import verify_run
from castbench.domain import resolve_domains
from castbench_boards.build import build_board, collect_rows
from tests.publish.exports import Exports
from tests.support import invoke, sqlite_url

RETAIL = comparability_number(resolve_domains("retail")[0].version)
"""The installed retail domain's comparability number (the exports fixture runs it)."""

REPO = Path(__file__).resolve().parents[2]


def flipped(exported: ExportedRun) -> tuple[ExportedRun, list[tuple[str, int]]]:
    """The run with every failed trial's reward (and its grade's) changed from 0 to 1."""
    trials, changed = [], []
    for trial in exported.trials:
        if trial.status == "scored" and trial.reward == 0.0 and trial.grade is not None:
            grade = trial.grade.model_copy(update={"reward": 1.0, "failure_category": None})
            trial = trial.model_copy(update={"reward": 1.0, "grade": grade})
            changed.append((trial.task_id, trial.trial_index))
        trials.append(trial)
    return exported.model_copy(update={"trials": trials}), changed


def test_an_honest_export_verifies(exports: Exports) -> None:
    exported = read_export(exports.noisy)
    report = verify_run(exported.run_id, exported.config, exported.trials)
    assert report.ok and report.trials == 240


def test_flipped_rewards_are_refused_by_import_naming_run_task_and_trial(
    exports: Exports, tmp_path: Path
) -> None:
    forged, changed = flipped(read_export(exports.noisy))
    assert changed, "the noisy run has failed trials to flip"
    report = verify_run(forged.run_id, forged.config, forged.trials)
    assert {(m.task_id, m.trial_index) for m in report.mismatches} == set(changed)
    assert all("stored reward 1.0, re-graded 0.0" in " ".join(m.problems) for m in report.mismatches)

    path = tmp_path / "forged.castbench.json.gz"
    write_export(forged, path)
    db = sqlite_url(tmp_path / "import.db")
    result = invoke("import", str(path), "--db", db)
    assert result.exit_code == 2, result.output
    task, index = changed[0]
    assert f"run {forged.run_id}" in result.output and f"task {task} trial {index}" in result.output
    assert ResultsStore(db).runs() == []  # nothing was written
    with pytest.raises(ArchiveError, match="do not verify"):
        import_run(ResultsStore(db), forged)

    checked = invoke("verify", str(path))
    assert checked.exit_code == 1 and f"task {task} trial {index}" in checked.output
    assert invoke("verify", str(exports.noisy)).exit_code == 0


def test_an_edited_tool_result_is_a_trajectory_mismatch(exports: Exports) -> None:
    exported = read_export(exports.oracle)
    trial = exported.trials[0]
    position, step = next(
        (i, s) for i, s in enumerate(trial.steps) if isinstance(s.observation, ToolResultTurn)
    )
    assert isinstance(step.observation, ToolResultTurn)
    edited = step.model_copy(update={"observation": step.observation.model_copy(update={"content": "ok"})})
    steps = [*trial.steps[:position], edited, *trial.steps[position + 1 :]]
    forged = exported.model_copy(
        update={"trials": [trial.model_copy(update={"steps": steps}), *exported.trials[1:]]}
    )
    report = verify_run(forged.run_id, forged.config, forged.trials)
    (mismatch,) = report.mismatches
    assert mismatch.task_id == trial.task_id and f"step {position}" in mismatch.problems[0]


def test_leaderboard_build_refuses_or_excludes_a_forged_run(exports: Exports, tmp_path: Path) -> None:
    root = tmp_path / "project"
    forged, _ = flipped(read_export(exports.noisy))
    write_export(forged, root / "results" / "forged.castbench.json.gz")
    write_export(read_export(exports.oracle), root / "results" / "oracle.castbench.json.gz")
    spec = BoardSpec(
        name="b", title="B", domains={"retail": RETAIL}, trials=2, metrics=["pass^1"], allow_privileged=True
    )  # type: ignore[list-item]
    found, excluded = collect_rows(spec, root)
    assert [row.run_id for row, _ in found] == [exports.run_ids["oracle"]]
    assert [item.source for item in excluded] == ["results/forged.castbench.json.gz"]
    assert "do not verify" in excluded[0].reason
    declared = spec.model_copy(
        update={"entries": [Entry(name="forged", run="results/forged.castbench.json.gz")]}
    )
    with pytest.raises(BoardError, match="do not verify"):
        build_board(declared, root, tmp_path / "out")
    assert build_board(declared, root, tmp_path / "out", verify=False)  # explicitly unverified


def test_import_counts_the_trials_actually_added(exports: Exports, tmp_path: Path) -> None:
    exported = read_export(exports.oracle)
    doubled = exported.model_copy(update={"trials": [*exported.trials, exported.trials[0]]})
    outcome = import_run(ResultsStore(sqlite_url(tmp_path / "d.db")), doubled)
    assert outcome.added_trials == len(exported.trials) and outcome.already_present == 1


def test_verify_a_stored_run_by_id(exports: Exports) -> None:
    result = invoke("verify", exports.run_ids["oracle"], "--db", exports.db)
    assert result.exit_code == 0, result.output
    assert "all 240 trials re-executed and re-graded as stored" in result.output


# a board's runs replay its domains: the τ packs' (cast-paper) and τ²'s need their extras
BOARD_EXTRAS = {"cast-paper": "tau", "tau2": "tau2"}
COMMITTED = [
    pytest.param(path, id=path.name, marks=[pytest.mark.extra(BOARD_EXTRAS[path.parent.name])])
    if path.parent.name in BOARD_EXTRAS
    else pytest.param(path, id=path.name)
    for path in sorted((REPO / "results").rglob("*.castbench.json.gz"))
]


@pytest.mark.slow
@pytest.mark.parametrize("path", COMMITTED)
def test_the_committed_results_verify(path: Path) -> None:
    """Every committed run, verified as `leaderboard build` verifies it (its stored config hash too),
    and examined for clairvoyance: a run whose agents declared no privilege shows no trial that
    acted on what nobody told it."""
    exported = read_export(path)
    report = verify_run(exported.run_id, exported.config, exported.trials, exported.config_hash)
    assert report.ok, report.describe()
    assert report.forensics is not None
    if not exported.config.privileged:
        assert report.forensics.clairvoyant == [], report.forensics.describe()
