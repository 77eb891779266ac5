"""`castbench import` of τ-bench's results format (`castbench_tau.importer`): small files written
here in the format τ-bench's run.py writes (a JSON list of {task_id, trial, reward, info, traj}),
replayed through the tau-airline pack and graded every way, beside the reward written in them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from castbench._records.store import ResultsStore
from castbench.agents import ToolCallAction, UserTurn
from castbench.domain import load_domain
from castbench.formats import ArchiveError
from castbench_tau.importer import agreement, parse_tau_results, replay_entries
from tests.support import invoke, sqlite_url

TASK = 1  # τ-bench airline task 1: the user ends up cancelling reservation Z7GOZK
USER = "olivia_gonzalez_2305"


class _Writer:
    """A τ-bench trajectory, as its tool-calling agent records one (tool outputs from the pack)."""

    def __init__(self) -> None:
        self.domain = load_domain("tau-airline")
        self.db = self.domain.fresh_database()
        raw = self.domain.source.raw_tasks["original"][TASK]  # type: ignore[attr-defined]
        self.task = {
            "user_id": raw.user_id,
            "actions": [{"name": a.name, "kwargs": a.kwargs} for a in raw.actions],
            "instruction": "You are olivia_gonzalez_2305. " + raw.instruction.split(". ", 1)[1],
            "outputs": list(raw.outputs),
        }
        self.traj: list[dict[str, Any]] = [
            {"role": "system", "content": self.domain.policy},
            {"role": "user", "content": "Hi, I need help with a trip to Texas."},
        ]
        self.calls = 0

    def say(self, agent: str, user: str) -> _Writer:
        self.traj += [{"role": "assistant", "content": agent}, {"role": "user", "content": user}]
        return self

    def call(self, name: str, arguments: dict[str, Any], text: str | None = None) -> _Writer:
        self.calls += 1
        call_id = f"call_{self.calls}"
        function = {"name": name, "arguments": json.dumps(arguments)}
        self.traj.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        result = self.domain.toolkit.call(self.db, name, arguments)
        self.traj.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": result.content})
        return self

    def entry(self, trial: int, reward: float) -> dict[str, Any]:
        info = {"task": self.task, "source": "user", "reward_info": {"reward": reward}}
        return {"task_id": TASK, "trial": trial, "reward": reward, "info": info, "traj": self.traj}


def _identified() -> _Writer:
    writer = _Writer().say("Could you give me your user id?", f"Sure, it's {USER}.")
    return writer.call("get_user_details", {"user_id": USER}).call(
        "get_reservation_details", {"reservation_id": "Z7GOZK"}
    )


def _entries() -> list[dict[str, Any]]:
    confirmed = (
        _identified()
        .say(
            "Your return flight can't be changed: reservation Z7GOZK is basic economy. Since you have "
            "travel insurance, I can cancel reservation Z7GOZK (EWR to IAH and back on 2024-05-28) with "
            "a full refund to the original payment method. Shall I cancel it (yes/no)?",
            "Yes, please cancel it.",
        )
        .call("cancel_reservation", {"reservation_id": "Z7GOZK"}, text="Cancelling now.")
        .say("Reservation Z7GOZK is cancelled; the refund will reach you in 5-7 days.", "Thanks! ###STOP###")
    )
    unasked = (
        _identified()
        .call("cancel_reservation", {"reservation_id": "Z7GOZK"})
        .say("I have cancelled reservation Z7GOZK.", "Okay, thank you.###STOP###")
    )
    wrong = (
        _identified()
        .say("I can cancel reservation K67C4W for you. Shall I proceed (yes/no)?", "Yes.")
        .call("cancel_reservation", {"reservation_id": "K67C4W"})
        .say("Reservation K67C4W is cancelled.", "Thank you. ###STOP###")
    )
    transfer = _identified().call("transfer_to_human_agents", {"summary": "wants a later return flight"})
    cut = _identified()  # τ stopped it at its step limit after a tool result
    return [
        confirmed.entry(0, 1.0),
        unasked.entry(1, 1.0),
        wrong.entry(2, 0.0),
        transfer.entry(3, 0.0),
        cut.entry(4, 0.0),
    ]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tau-import") / "results.json"
    path.write_text(json.dumps(_entries(), indent=2))
    return path


def test_entries_are_read_and_mapped_to_the_packs_tasks(results: Path) -> None:
    pack, entries = parse_tau_results(results)
    assert pack == "airline"
    assert [entry.ended_by for entry in entries] == ["user", "user", "user", "transfer", "limit"]
    domain, replayed = replay_entries(results)
    assert {item.task_id for item in replayed} == {"tau-airline-original-1"}
    by_trial = {item.entry.trial: item for item in replayed}
    assert [by_trial[t].tau.end_reason for t in range(5)] == [
        "user_stop",
        "user_stop",
        "user_stop",
        "transfer",
        "max_steps",
    ]
    # both sides as recorded: every tool call in order, the text sent with a call kept on it, the
    # user's words without τ's stop token
    confirmed = by_trial[0].tau
    calls = [step.action for step in confirmed.steps if isinstance(step.action, ToolCallAction)]
    assert [call.name for call in calls] == [
        "get_user_details",
        "get_reservation_details",
        "cancel_reservation",
    ]
    assert calls[-1].text == "Cancelling now."
    last = confirmed.steps[-1].observation
    assert isinstance(last, UserTurn) and last.text == "Thanks!"


def test_every_grading_beside_the_recorded_reward(results: Path) -> None:
    _, replayed = replay_entries(results)
    by_trial = {item.entry.trial: item.passes for item in replayed}
    assert [by_trial[t]["tau"] for t in range(5)] == [True, True, False, False, False]
    assert [by_trial[t]["plain"] for t in range(5)] == [True, True, False, False, False]
    # a cancellation nobody asked the user about is τ's pass and castbench's strict failure
    assert by_trial[0]["strict"] and not by_trial[1]["strict"]
    assert not by_trial[1]["labels"] and not by_trial[1]["critic"]
    table = agreement(replayed)
    assert table["tau"] == {"agree": 5, "disagree": 0, "passed_tau_failed": [], "failed_tau_passed": []}
    assert table["strict"]["failed_tau_passed"] == ["tau-airline-original-1#1"]


def test_castbench_import_stores_the_tau_graded_run_and_prints_the_agreement(
    results: Path, tmp_path: Path
) -> None:
    db = sqlite_url(tmp_path / "imported.db")
    out = invoke("import", str(results), "--db", db)
    assert out.exit_code == 0, out.output
    assert "5 trials added" in out.output
    assert "agreement with the recorded reward (5 trials)" in out.output
    assert "strict: fails, τ passed: tau-airline-original-1#1" in out.output
    row = [line for line in out.output.splitlines() if line.strip("│ ").startswith("tau ")][0]
    assert row.split("│")[2].strip() == "5"
    stored = ResultsStore(db, read_only=True)
    run_id = out.output.split()[1]
    trials = stored.trials(run_id)
    assert sorted(t.reward for t in trials) == [0.0, 0.0, 0.0, 1.0, 1.0]
    again = invoke("import", str(results), "--db", db)
    assert again.exit_code == 0 and "0 trials added, 5 already there" in again.output, again.output


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("[not json", "not readable JSON"),
        ("{not json", "nor a file any registered format reads"),
        ("[]", "not τ-bench results"),
        ('[{"task_id": 1}]', "no traj"),
        (
            json.dumps(
                [
                    {
                        "task_id": 0,
                        "trial": 0,
                        "reward": 1,
                        "info": {"task": {"instruction": "x"}},
                        "traj": [
                            {"role": "system", "content": "another policy"},
                            {"role": "user", "content": "hi"},
                        ],
                    }
                ]
            ),
            "not the wiki of any τ pack",
        ),
        ('{"results": []}', "nor a file any registered format reads"),
    ],
)
def test_anything_else_is_one_error_line(content: str, says: str, tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(content)
    out = invoke("import", str(path), "--db", sqlite_url(tmp_path / "x.db"))
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), out.output
    assert says in lines[0], out.output


def test_a_task_the_pack_does_not_have_is_refused(tmp_path: Path) -> None:
    entry = _Writer().say("Hello", "Bye ###STOP###").entry(0, 0.0)
    entry["info"]["task"] = {**entry["info"]["task"], "actions": []}
    path = tmp_path / "r.json"
    path.write_text(json.dumps([entry]))
    with pytest.raises(ArchiveError, match="no split of tau-airline has this task"):
        replay_entries(path)


def _unasked_wrong() -> dict[str, Any]:
    """A failed trajectory: the wrong reservation cancelled, unasked, with an id a tool returned."""
    writer = _identified().call("cancel_reservation", {"reservation_id": "K67C4W"})
    return writer.say("I have cancelled reservation K67C4W.", "Thanks. ###STOP###").entry(5, 0.0)


def test_runs_why_explains_strict_failures_and_files_confirmation_breaks_as_violations(
    results: Path, tmp_path: Path
) -> None:
    path = tmp_path / "with-unasked.json"
    path.write_text(json.dumps([*json.loads(results.read_text()), _unasked_wrong()]))
    db = sqlite_url(tmp_path / "why.db")
    imported = invoke("import", str(path), "--db", db)
    assert imported.exit_code == 0, imported.output
    run_id = imported.output.split()[1]
    why = invoke("runs", "why", run_id, "--db", db, "--json")
    assert why.exit_code == 0, why.output
    rows = {(row["trial"], row["grading"]): row for row in json.loads(why.output)}
    # the unasked cancellation passed τ and fails strict: the rule, the write, the user turn before it
    strict = rows[(1, "strict")]
    assert strict["cause"] == "domain_violation" and strict["rule"] == "strict_policy_break"
    assert strict["write"].startswith("cancel_reservation(") and "Z7GOZK" in strict["write"]
    assert strict["user_turn"] == f"Sure, it's {USER}."
    assert (0, "strict") not in rows and (0, "plain") not in rows  # asked and confirmed: passed
    # an unasked write of a revealed id that failed is the policy broken, not a made-up value
    assert rows[(5, "plain")]["cause"] == "domain_violation"
    table = invoke("runs", "why", run_id, "--db", db)
    assert "every trial passed" not in table.output
    assert "failed strict" in table.output and "no explicit confirmation" in table.output.replace("\n", " ")


def test_the_validity_bench_lists_each_strict_failure_of_a_tau_passed_trajectory(results: Path) -> None:
    import subprocess
    import sys

    bench = Path(__file__).resolve().parents[3] / "bench" / "validity.py"
    out = subprocess.run(
        [sys.executable, str(bench), "--trajectories", str(results), "--trials", "0,1,2", "--no-corpus"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "3 trajectories (trials 0,1,2)" in out
    assert "| tau | 3 | 0 | 0 | 0 |" in out
    assert "| strict | 2 | 1 | 0 | 1 |" in out
    assert "tau-airline-original-1#1 step" in out and "cancel_reservation(" in out
    assert f'user before it: "Sure, it\'s {USER}."' in out
    assert "load " in out
