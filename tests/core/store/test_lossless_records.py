"""Every output an agent can produce is stored and read back as it was, so no agent behaviour
leaves its own trial unscored: lone surrogates (in values and keys, raw or as JSON escapes a tool
parses and echoes), NUL characters (Postgres `text` refuses them raw), non-BMP characters, NaN,
the infinities, big integers. What nothing can store (an integer of thousands of digits) is the
agent's failure, scored 0 with the reason; never castbench's `harness_error`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from castbench._base import lossless
from castbench._base.conversation import ReplyAction, ToolCallAction, ToolResultTurn
from castbench._records.config import RunConfig
from castbench._records.store import ResultsStore
from castbench._records.store.export import export_run, read_export, write_export
from castbench._records.trial import Proposal, StepRecord, TrialRecord
from castbench._results.publish.verify import verify_run
from castbench._run import engine
from castbench._run.api import evaluate
from tests.core.poison_agents import POISONS, RAW
from tests.postgres import new_database
from tests.support import invoke, sqlite_url

POISON = "tests.core.poison_agents:PoisonPolicy"
TASK = "retail-test-0001"

# every Python string: lone surrogates, NUL and non-BMP characters included
text = st.text(alphabet=st.characters(codec=None, categories=None), max_size=12)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=8,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN (and -0.0 told from 0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _record(arguments: dict[str, Any], content: str, reply: str, index: int = 0) -> TrialRecord:
    call = ToolCallAction(name="get_order_details", arguments=arguments, text=reply)
    return TrialRecord(
        domain="retail",
        domain_version="2-0",
        task_id=f"t-{index}",
        trial_index=0,
        seed=1,
        status="scored",
        reward=0.0,
        end_reason="user_stop",
        opening=reply,
        steps=[
            StepRecord(
                index=0,
                proposals=[Proposal(round=0, action=call)],
                action=call,
                observation=ToolResultTurn(call_id="call_0", name="get_order_details", content=content),
            ),
            StepRecord(index=1, proposals=[Proposal(round=0, action=ReplyAction(text=reply))], action=None),
        ],
        error=reply,
    )


def _round_trip(store: ResultsStore, records: list[TrialRecord]) -> list[TrialRecord]:
    config = RunConfig(domains={"retail": "2-0"}, policy="p", trials=1)
    run_id, _ = store.open_run(config, {}, fresh=True)
    for record in records:
        assert store.add_trial(run_id, record)
    return store.trials(run_id)


def _check(records: list[TrialRecord], back: list[TrialRecord]) -> None:
    assert len(back) == len(records)
    for record, read in zip(sorted(records, key=lambda r: r.task_id), back, strict=True):
        assert _same(read.model_dump(mode="python"), record.model_dump(mode="python"))


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> ResultsStore:
    return ResultsStore(sqlite_url(tmp_path_factory.mktemp("lossless") / "runs.db"))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments=st.dictionaries(text, json_values, max_size=4), content=text, reply=text)
def test_any_json_an_agent_produces_round_trips_through_sqlite(
    sqlite_store: ResultsStore, arguments: dict[str, Any], content: str, reply: str
) -> None:
    record = _record(arguments, content, reply)
    assert lossless.problem(record) is None
    _check([record], _round_trip(sqlite_store, [record]))


def test_records_of_stored_runs_still_read() -> None:
    """The fast path is Pydantic's own JSON: records written before read the same."""
    record = _record({"order_id": "#W1"}, "found", "hello")
    assert lossless.dumps(record) == record.model_dump_json()
    assert lossless.loads(TrialRecord, record.model_dump_json()) == record


def test_what_nothing_can_store_is_named() -> None:
    assert "4300" in (lossless.problem(ToolCallAction(name="x", arguments={"n": 10**5000})) or "")
    assert lossless.problem(ToolCallAction(name="x", arguments={"n": object()})) is not None


@pytest.fixture(scope="module")
def postgres_store(postgres: str) -> ResultsStore:
    return ResultsStore(new_database(postgres))


def test_the_awkward_values_round_trip_through_postgres(postgres_store: ResultsStore) -> None:
    records = [
        _record({"order_id": value, "nested": [{"k": value}]}, f"Error: no order {value!s}", str(value), i)
        for i, value in enumerate(POISONS.values())
    ]
    records.append(_record({"\x00": "\x00\ud800"}, "\x00", "\x00", len(records)))
    _check(records, _round_trip(postgres_store, records))


@settings(max_examples=30, deadline=None)
@given(arguments=st.dictionaries(text, json_values, max_size=3), content=text)
def test_any_json_round_trips_through_postgres(
    postgres_store: ResultsStore, arguments: dict[str, Any], content: str
) -> None:
    record = _record(arguments, content, content)
    _check([record], _round_trip(postgres_store, [record]))


THROUGH_A_WORKER = (
    "surrogate",
    "nul",
    "nan",
    "big_int",
    "surrogate_key",
    "escaped_surrogate",
    "huge_int_text",
)
"""The modes also run in the agent's own worker process (slower): its answers cross a pipe."""


@pytest.mark.parametrize(
    ("mode", "in_process"),
    [(mode, True) for mode in (*POISONS, *RAW)] + [(mode, False) for mode in THROUGH_A_WORKER],
)
def test_an_agent_with_awkward_output_gets_its_trial_scored_and_stored_as_it_was(
    tmp_path: Path, mode: str, in_process: bool
) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    policy = f"{POISON}?mode={mode}"
    evaluate(domains="retail", tasks=[TASK], trials=1, db=db, policy=policy, in_process=in_process)
    store = ResultsStore(db)
    run = store.run("latest")
    (record,) = store.trials(run.id)
    assert record.status == "scored" and record.error is None, record.error
    assert record.end_reason in ("user_stop", "max_steps")
    assert run.status == "complete"
    call = record.steps[0].action
    assert isinstance(call, ToolCallAction)
    expected = RAW[mode] if mode in RAW else {"order_id": POISONS[mode]}
    assert _same(call.arguments, expected)
    assert isinstance(record.steps[0].observation, ToolResultTurn) and record.steps[0].observation.error

    exported = export_run(store, run.id)
    path = tmp_path / "run.castbench.json.gz"
    write_export(exported, path)
    again = read_export(path)
    assert _same(again.trials[0].steps[0].action.arguments, expected)  # type: ignore[union-attr]
    assert verify_run(again.run_id, again.config, again.trials).ok
    shown = invoke("runs", "show", run.id, "--db", db, "--failures", "1")
    assert shown.exit_code == 0, shown.output


def test_an_integer_nothing_can_store_is_the_agents_failure(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    evaluate(domains="retail", tasks=[TASK], trials=1, db=db, policy=f"{POISON}?mode=huge_int")
    store = ResultsStore(db)
    (record,) = store.trials(store.run("latest").id)
    assert (record.status, record.end_reason, record.reward) == ("scored", "agent_error", 0.0)
    assert "cannot be stored" in (record.error or "") and "4300" in (record.error or "")


def test_a_record_that_still_cannot_be_written_blames_the_output_that_broke_it(tmp_path: Path) -> None:
    """An in-process agent can change what it returned after the check: the engine's last guard
    stores the trial as that agent's failure, scored 0, and verify accepts it as such."""
    bad = ToolCallAction.model_construct(name="x", arguments={"n": object()}, kind="tool_call", text="")
    record = _record({"order_id": "#W1"}, "found", "hi")
    record.steps[0].proposals[0] = Proposal.model_construct(round=0, action=bad, label=None, verdict=None)
    store = ResultsStore(sqlite_url(tmp_path / "runs.db"))
    run_id, _ = store.open_run(RunConfig(domains={"retail": "2-0"}, policy="p", trials=1), {}, fresh=True)
    engine._store(store, run_id, record)
    (stored,) = store.trials(run_id)
    assert (stored.status, stored.end_reason, stored.reward) == ("scored", "agent_error", 0.0)
    assert "the policy's output at step 0 cannot be stored" in (stored.error or "")
