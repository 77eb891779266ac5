"""The critic's effect end to end, on the full retail test split x 8 trials, seed 0 (the issue's
done-when): the oracle critic lifts pass^4, the rules critic's figures are recomputable from the
stored per-action records, an over-eager noisy critic lowers pass^k, the policy's insistence
drives resistance, the critic's misses drive detection; the JSON summary carries every figure.

All runs share one store, so the paired run without the critic reuses the `--critic none` run.
The two knob comparisons (insist, miss) run on a 24-task slice of the split to stay fast.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from castbench._base.conversation import ReplyAction, ToolCallAction
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._run.api import EvalResult, evaluate
from castbench.domain import load_domain
from tests.support import invoke, sqlite_url

pytestmark = pytest.mark.slow  # the full retail split x 8 trials, five critics

NOISY_CRITIC = "scripted:noisy?false_flag=0.45&miss=0.2"
SLICE = [task.id for task in load_domain("retail").tasks("test")[:24]]
CRITIC_KEYS = {
    "confusion",
    "false_flag_rate",
    "detection_rate",
    "precision",
    "f1",
    "mcc",
    "flag_rate",
    "resistance_rate",
    "insistence_rate",
    "correction_rate",
    "harmful_revision_rate",
    "rounds_mean",
}


class Runs:
    def __init__(self, db: str, out: Path) -> None:
        self.db = db
        self.store = ResultsStore(db)
        self.results: dict[str, EvalResult] = {}
        for critic in ("none", "oracle", "rules"):
            self.results[critic] = evaluate(domains="retail", trials=8, seed=0, db=db, critic=critic)
        result = invoke(
            "eval", "--details", "--domain", "retail", "--trials", "8", "--seed", "0",
            "--critic", NOISY_CRITIC, "--paired", "--db", db, "--output", str(out),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        self.cli_output = result.output
        self.noisy_json: dict[str, Any] = json.loads(out.read_text())

    def retail(self, critic: str) -> Any:
        return self.results[critic].summary.domains["retail"]

    def trials(self, critic: str) -> list[TrialRecord]:
        return self.store.trials(self.results[critic].outcome.run_id)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    where = tmp_path_factory.mktemp("effects")
    return Runs(sqlite_url(where / "effects.db"), where / "noisy.json")


def _canonical(action: Any) -> str:
    if isinstance(action, ToolCallAction):
        return action.name + json.dumps(action.arguments, sort_keys=True)
    if isinstance(action, ReplyAction):
        return " ".join(action.text.lower().split())
    return repr(action)


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


def recompute(records: list[TrialRecord]) -> dict[str, Any]:
    """The critic figures, recomputed here from the stored proposals (not with the harness's code)."""
    cells = {"flag_invalid": 0, "flag_valid": 0, "pass_invalid": 0, "pass_valid": 0}
    unknown = flagged = verdicts = verified_steps = 0
    rejections = valid_rejected = harmed = 0
    false_answered = kept = true_flags = true_answered = insisted = corrected = 0
    for record in records:
        for step in record.steps:
            judged = [p for p in step.proposals if p.verdict is not None]
            if not judged:
                continue
            verified_steps += 1
            verdicts += len(judged)
            for proposal in judged:
                flag = proposal.verdict.verdict == "invalid"  # type: ignore[union-attr]
                flagged += flag
                label = proposal.label.label if proposal.label else "unknown"
                if label == "unknown":
                    unknown += 1
                else:
                    cells[f"{'flag' if flag else 'pass'}_{label}"] += 1
            executed = (
                step.proposals[-1].label.label
                if step.action is not None and step.proposals[-1].label
                else None
            )
            for before, after in pairwise([*step.proposals, None]):
                if before.verdict is None or before.verdict.verdict != "invalid":
                    continue
                rejections += after is not None
                same = after is not None and _canonical(before.action) == _canonical(after.action)
                label = before.label.label if before.label else "unknown"
                if label == "valid" and after is not None:
                    false_answered += 1
                    kept += same
                elif label == "invalid":
                    true_flags += 1
                    corrected += executed == "valid"
                    true_answered += after is not None
                    insisted += same
            first = next((p for p in judged if p.verdict.verdict == "invalid"), None)  # type: ignore[union-attr]
            if first is None or first.label is None:
                continue
            if first.label.label == "valid":
                valid_rejected += 1
                harmed += executed == "invalid"
    tp, fp, fn, tn = cells["flag_invalid"], cells["flag_valid"], cells["pass_invalid"], cells["pass_valid"]
    labelled = tp + fp + fn + tn
    margins = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return {
        "counts": cells,
        "confusion": {key: value / labelled for key, value in cells.items()},
        "n_verified": verdicts,
        "unknown": unknown,
        "flag_rate": flagged / verdicts,
        "false_flag_rate": _share(fp, fp + tn),
        "detection_rate": _share(tp, tp + fn),
        "precision": _share(tp, tp + fp),
        "f1": _share(2 * tp, 2 * tp + fp + fn) if tp + fn else None,
        "mcc": (tp * tn - fp * fn) / margins**0.5 if margins else None,
        "resistance_rate": _share(kept, false_answered),
        "insistence_rate": _share(insisted, true_answered),
        "correction_rate": _share(corrected, true_flags),
        "harmful_revision_rate": _share(harmed, valid_rejected),
        "rounds_mean": verdicts / verified_steps,
        "rejections": rejections,
    }


def assert_matches(reported: dict[str, Any], recomputed: dict[str, Any]) -> None:
    for key, value in recomputed.items():
        if isinstance(value, dict):
            assert reported[key] == pytest.approx(value), key
        elif value is None:
            assert reported[key] is None, key
        else:
            assert reported[key] == pytest.approx(value), key


def test_oracle_critic_raises_pass4_with_no_false_flag_and_full_detection(runs: Runs) -> None:
    alone, oracle = runs.retail("none"), runs.retail("oracle")
    assert alone.n_tasks == oracle.n_tasks == 120 and alone.trials_per_task == 8
    assert oracle.pass_hat[4] > alone.pass_hat[4] + 0.1
    assert oracle.pass_hat[1] > alone.pass_hat[1]
    critic = oracle.critic
    assert critic.false_flag_rate == 0.0 and critic.detection_rate == 1.0
    assert critic.precision == 1.0 and critic.f1 == 1.0 and critic.mcc == 1.0
    assert alone.critic is None


def test_rules_critic_reports_both_rates_recomputable_from_the_stored_records(runs: Runs) -> None:
    critic = runs.retail("rules").critic
    assert critic is not None and critic.false_flag_rate is not None and critic.detection_rate is not None
    records = runs.trials("rules")
    assert len(records) == 960
    recomputed = recompute(records)
    assert recomputed["n_verified"] > 1000 and recomputed["counts"]["flag_invalid"] > 0
    assert_matches(critic.model_dump(), recomputed)


def test_noisy_over_eager_critic_lowers_pass_k(runs: Runs) -> None:
    alone = runs.retail("none").pass_hat
    noisy = {int(k): v for k, v in runs.noisy_json["domains"]["retail"]["pass_hat"].items()}
    assert noisy[4] < alone[4] - 0.05
    assert all(noisy[k] < alone[k] for k in (1, 2, 3, 4))
    critic = runs.noisy_json["domains"]["retail"]["critic"]
    assert 0.35 < critic["false_flag_rate"] < 0.55  # near the configured 0.45
    assert 0.7 < critic["detection_rate"] < 0.9  # near 1 - miss
    assert critic["harmful_revision_rate"] > 0  # a flagged right action is revised into a wrong one


def test_json_summary_has_every_critic_figure_recomputable(runs: Runs) -> None:
    critic = runs.noisy_json["domains"]["retail"]["critic"]
    assert critic.keys() >= CRITIC_KEYS
    assert set(critic["confusion"]) == {"flag_invalid", "flag_valid", "pass_invalid", "pass_valid"}
    assert set(critic["counts"]) == {"flag_invalid", "flag_valid", "pass_invalid", "pass_valid"}
    assert runs.noisy_json["config"]["critic"] == NOISY_CRITIC
    run_id = runs.noisy_json["run_id"]
    assert_matches(critic, recompute(runs.store.trials(run_id)))
    assert "critic " + NOISY_CRITIC in runs.cli_output and "false-flag rate" in runs.cli_output


def test_paired_json_has_helpfulness_and_harmfulness_against_the_none_run(runs: Runs) -> None:
    critic = runs.noisy_json["domains"]["retail"]["critic"]
    assert critic["paired_run_id"] == runs.results["none"].outcome.run_id  # reused, not re-run
    with_critic = {(r.task_id, r.trial_index): r.passed for r in runs.store.trials(runs.noisy_json["run_id"])}
    without = {(r.task_id, r.trial_index): r.passed for r in runs.trials("none")}
    assert with_critic.keys() == without.keys() and len(without) == 960
    failed_alone = [key for key, passed in without.items() if not passed]
    passed_alone = [key for key, passed in without.items() if passed]
    assert critic["helpfulness"] == pytest.approx(
        sum(with_critic[k] for k in failed_alone) / len(failed_alone)
    )
    assert critic["harmfulness"] == pytest.approx(
        sum(not with_critic[k] for k in passed_alone) / len(passed_alone)
    )
    assert critic["harmfulness"] > 0
    without_critic = {int(k): v for k, v in critic["pass_hat_without_critic"].items()}
    assert without_critic == pytest.approx(runs.retail("none").pass_hat)


def test_more_insistent_policy_insists_more_and_corrects_less(runs: Runs) -> None:
    insistence, correction = {}, {}
    for insist in (0.1, 0.9):
        result = evaluate(
            domains="retail", tasks=SLICE, trials=8, seed=0, db=runs.db,
            policy=f"scripted:noisy?insist={insist}", critic="oracle",
        )  # fmt: skip
        critic = result.summary.domains["retail"].critic
        # the oracle never flags a valid action: every flag is true, resistance has nothing to count
        assert critic.resistance_rate is None and critic.reactions.false_flags_answered == 0
        insistence[insist], correction[insist] = critic.insistence_rate, critic.correction_rate
    assert insistence[0.9] > insistence[0.1] + 0.4
    assert insistence[0.1] < 0.25 and insistence[0.9] > 0.75
    assert correction[0.1] > correction[0.9]


def test_an_over_eager_critic_meets_resistance_only_on_its_false_flags(runs: Runs) -> None:
    critic = runs.noisy_json["domains"]["retail"]["critic"]
    reactions = critic["reactions"]
    assert reactions["false_flags_answered"] > 0 and reactions["true_flags_answered"] > 0
    assert critic["resistance_rate"] == pytest.approx(reactions["kept"] / reactions["false_flags_answered"])
    by_round = critic["reactions_by_round"]
    assert set(by_round) >= {"0", "1"}
    assert sum(r["true_flags"] for r in by_round.values()) == reactions["true_flags"]
    assert by_round["0"]["insistence_rate"] == pytest.approx(
        by_round["0"]["insisted"] / by_round["0"]["true_flags_answered"]
    )


def test_a_critic_that_misses_less_detects_more(runs: Runs) -> None:
    detection = {}
    for miss in (0.05, 0.6):
        result = evaluate(
            domains="retail", tasks=SLICE, trials=8, seed=0, db=runs.db,
            critic=f"scripted:noisy?false_flag=0.1&miss={miss}",
        )  # fmt: skip
        detection[miss] = result.summary.domains["retail"].critic.detection_rate
    assert detection[0.05] > detection[0.6] + 0.3


def test_critics_and_policies_list_the_built_ins_with_parameters() -> None:
    critics = invoke("critics", "list")
    assert critics.exit_code == 0, critics.output
    for text in ("rules", "oracle", "scripted:noisy", "false_flag=0.1", "miss=0.1"):
        assert text in critics.output, text
    policies = invoke("policies", "list")
    assert policies.exit_code == 0, policies.output
    for text in ("oracle", "scripted:noisy", "p=0.3", "recover=0.3", "insist=0.3", "clarify=0.5"):
        assert text in policies.output, text
