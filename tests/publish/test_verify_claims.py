"""`castbench verify` checks everything a run publishes, not only rewards and trajectories: the
labels its critic figures are computed from (re-derived by the labeler), its config hash
(recomputed from its config) and its privilege markers (a built-in agent that reads the ground
truth must carry one). The forgeries of the newcomer audit are refused by `verify` (exit 1),
`import` and `leaderboard build`; honest exports, and the committed ones, pass."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from castbench._records.store import ResultsStore
from castbench._records.store.export import ArchiveError, ExportedRun, export_run, read_export, write_export
from castbench._records.trial import ActionLabel
from castbench._results.publish.archive import import_run
from castbench._results.publish.board import BoardError, BoardSpec, Entry
from castbench._results.publish.verify import verify_run
from castbench._results.report.critic_report import critic_report
from castbench._run.api import evaluate
from castbench.domain import load_domain
from castbench_boards.build import build_board
from tests.publish.exports import Exports
from tests.support import invoke, sqlite_url

REPO = Path(__file__).resolve().parents[2]
FLIPPED = 40


@dataclass(frozen=True)
class CriticRun:
    path: Path
    exported: ExportedRun


@pytest.fixture(scope="module")
def critic_run(tmp_path_factory: pytest.TempPathFactory) -> CriticRun:
    """The noisy policy under the rules critic on 12 retail tasks, 2 trials each, exported."""
    root = tmp_path_factory.mktemp("critic")
    db = sqlite_url(root / "runs.db")
    tasks = [task.id for task in load_domain("retail").tasks("test")[:12]]
    result = evaluate(db=db, domains="retail", tasks=tasks, trials=2, policy="scripted:noisy", critic="rules")
    path = root / "critic.castbench.json.gz"
    write_export(export_run(ResultsStore(db), result.outcome.run_id), path)
    return CriticRun(path, read_export(path))


def _flip(label: ActionLabel) -> ActionLabel:
    if label.label == "valid":
        return ActionLabel(label="invalid", failure_type="hallucination", reason="flipped")
    return ActionLabel(label="valid", reason="flipped")


def flipped_labels(exported: ExportedRun, count: int) -> ExportedRun:
    """The first `count` labelled proposals that a critic judged get the opposite label."""
    left = count
    trials = []
    for trial in exported.trials:
        steps = []
        for step in trial.steps:
            proposals = []
            for proposal in step.proposals:
                label = proposal.label
                if left and label is not None and label.label != "unknown" and proposal.verdict is not None:
                    proposal = proposal.model_copy(update={"label": _flip(label)})
                    left -= 1
                proposals.append(proposal)
            steps.append(step.model_copy(update={"proposals": proposals}))
        trials.append(trial.model_copy(update={"steps": steps}))
    assert left == 0, "the run has enough labelled proposals with a verdict"
    return exported.model_copy(update={"trials": trials})


def _refused_everywhere(forged: ExportedRun, tmp_path: Path, expected: str) -> None:
    path = tmp_path / "results" / "forged.castbench.json.gz"
    write_export(forged, path)
    checked = invoke("verify", str(path))
    assert checked.exit_code == 1 and expected in checked.output, checked.output
    db = sqlite_url(tmp_path / "import.db")
    imported = invoke("import", str(path), "--db", db)
    assert imported.exit_code == 2 and expected in imported.output, imported.output
    assert ResultsStore(db).runs() == []
    spec = BoardSpec(
        name="b",
        title="B",
        domains={"retail": 2},
        trials=forged.config.trials,
        metrics=["pass^1"],
        allow_privileged=True,
        entries=[Entry(name="forged", run="results/forged.castbench.json.gz")],
    )  # type: ignore[list-item]
    with pytest.raises(BoardError, match=expected):
        build_board(spec, tmp_path, tmp_path / "out", force=True)


def test_forty_flipped_critic_labels_are_refused(critic_run: CriticRun, tmp_path: Path) -> None:
    honest = critic_run.exported
    forged = flipped_labels(honest, FLIPPED)
    before, after = critic_report(honest.trials), critic_report(forged.trials)
    assert before is not None and after is not None
    assert before.false_flag_rate != after.false_flag_rate or before.mcc != after.mcc  # the figures moved
    report = verify_run(forged.run_id, forged.config, forged.trials, forged.config_hash)
    problems = [p for m in report.mismatches for p in m.problems if "label" in p]
    assert len(problems) == FLIPPED and not report.ok
    _refused_everywhere(forged, tmp_path, "label")


def test_flipped_verdicts_of_a_built_in_critic_are_refused(critic_run: CriticRun) -> None:
    """The rules critic is model-free: verify asks it again, so its figures cannot be edited either."""
    exported = critic_run.exported
    left, trials = 10, []
    for trial in exported.trials:
        steps = []
        for step in trial.steps:
            proposals = []
            for proposal in step.proposals:
                verdict = proposal.verdict
                if left and verdict is not None:
                    flipped = "valid" if verdict.flags else "invalid"
                    proposal = proposal.model_copy(
                        update={"verdict": verdict.model_copy(update={"verdict": flipped})}
                    )
                    left -= 1
                proposals.append(proposal)
            steps.append(step.model_copy(update={"proposals": proposals}))
        trials.append(trial.model_copy(update={"steps": steps}))
    forged = exported.model_copy(update={"trials": trials})
    report = verify_run(forged.run_id, forged.config, forged.trials, forged.config_hash)
    assert sum(" verdict:" in p for m in report.mismatches for p in m.problems) == 10


def test_the_honest_critic_run_verifies(critic_run: CriticRun) -> None:
    exported = critic_run.exported
    report = verify_run(exported.run_id, exported.config, exported.trials, exported.config_hash)
    assert report.ok, report.describe()
    assert invoke("verify", str(critic_run.path)).exit_code == 0


def test_a_renamed_policy_with_the_old_hash_is_refused(exports: Exports, tmp_path: Path) -> None:
    exported = read_export(exports.noisy)
    config = exported.config.model_copy(update={"policy": "my_agent:Agent", "privileged": []})
    forged = exported.model_copy(update={"config": config})
    report = verify_run(forged.run_id, forged.config, forged.trials, forged.config_hash)
    assert not report.mismatches and any("config hash" in p for p in report.run_problems)
    _refused_everywhere(forged, tmp_path, "config was edited")


def test_a_removed_privilege_marker_is_refused(exports: Exports, tmp_path: Path) -> None:
    exported = read_export(exports.oracle)
    config = exported.config.model_copy(update={"privileged": []})
    forged = exported.model_copy(update={"config": config, "config_hash": config.config_hash()})
    report = verify_run(forged.run_id, forged.config, forged.trials, forged.config_hash)
    assert report.run_problems == [
        "the policy 'oracle' reads the ground truth, but the run does not mark it privileged",
        "provenance: the policy is marked privileged, but the run's `privileged` does not list it",
    ]
    _refused_everywhere(forged, tmp_path, "does not mark it privileged")
    with pytest.raises(ArchiveError, match="does not mark it privileged"):
        import_run(ResultsStore(sqlite_url(tmp_path / "api.db")), forged)


@pytest.mark.parametrize(
    "path", sorted((REPO / "results").rglob("*.castbench.json.gz")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_the_committed_exports_hold_their_hash_and_markers(path: Path) -> None:
    """The run-level claims only (the slow test of `test_verify.py` re-executes every trial)."""
    exported = read_export(path)
    report = verify_run(exported.run_id, exported.config, [], exported.config_hash)
    assert report.ok and report.run_problems == [], report.describe()


def test_a_relabelled_policy_whose_placement_still_names_the_old_agent_is_refused(
    exports: Exports, tmp_path: Path
) -> None:
    """A forger who renames the policy and recomputes the hash but leaves the recorded placement
    (where the agent ran) as the run wrote it: the run contradicts itself, and verify says so."""
    exported = read_export(exports.oracle)
    assert exported.config.placement, "the run recorded where its agents ran"
    config = exported.config.model_copy(update={"policy": "my_agent:Agent", "privileged": []})
    forged = exported.model_copy(update={"config": config, "config_hash": config.config_hash()})
    report = verify_run(forged.run_id, forged.config, [], forged.config_hash)
    assert any(problem.startswith("provenance: the policy") for problem in report.run_problems), (
        report.run_problems
    )
    _refused_everywhere(forged, tmp_path, "provenance")
