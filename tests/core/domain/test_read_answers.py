"""A read tool's answer is shared between the sandboxes of one pristine state (`read_through`) only
while every table it read is unchanged there: the shared answer is always the one the sandbox
would have computed itself."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from castbench._domain.database import PristineIndex
from castbench.domain import Database, Domain, load_domain
from tests.core.toy import TOY_STATE, Counter, build_toy_domain

NATIVE_DOMAINS = ["retail", "airline", "telecom", "telehealth"]


@pytest.fixture
def toy(tmp_path: Path) -> Domain:
    return build_toy_domain(tmp_path)


def _counting(db: Database, name: str, computed: list[str]):  # type: ignore[no-untyped-def]
    def compute() -> int:
        computed.append(name)
        return db.get(Counter, name).value

    return compute


def test_an_answer_is_computed_once_for_every_sandbox_whose_tables_are_pristine(toy: Domain) -> None:
    computed: list[str] = []
    first, second = toy.fresh_database(), toy.fresh_database()
    assert first.read_through("x", _counting(first, "x", computed)) == 5
    assert second.read_through("x", _counting(second, "x", computed)) == 5
    assert computed == ["x"]


def test_a_sandbox_that_changed_a_table_the_answer_read_computes_its_own(toy: Domain) -> None:
    computed: list[str] = []
    pristine, changed = toy.fresh_database(), toy.fresh_database()
    assert pristine.read_through("x", _counting(pristine, "x", computed)) == 5
    changed.put(Counter(name="y", value=11))  # another row of the same table
    assert changed.read_through("x", _counting(changed, "x", computed)) == 5
    assert computed == ["x", "x"]
    changed.put(Counter(name="x", value=7))
    assert changed.read_through("x", _counting(changed, "x", computed)) == 7
    fresh = toy.fresh_database()
    assert fresh.read_through("x", _counting(fresh, "x", computed)) == 5
    assert computed == ["x", "x", "x"]


def test_an_answer_computed_on_a_changed_table_is_not_shared(toy: Domain) -> None:
    computed: list[str] = []
    changed = toy.fresh_database()
    changed.put(Counter(name="x", value=7))
    assert changed.read_through("x", _counting(changed, "x", computed)) == 7
    fresh = toy.fresh_database()
    assert fresh.read_through("x", _counting(fresh, "x", computed)) == 5


def test_a_change_still_pending_in_a_transaction_is_seen(toy: Domain) -> None:
    computed: list[str] = []
    shared = toy.fresh_database()
    assert shared.read_through("x", _counting(shared, "x", computed)) == 5
    db = toy.fresh_database()
    with db.transaction():
        db.put(Counter(name="x", value=9))
        assert db.read_through("x", _counting(db, "x", computed)) == 9


@pytest.mark.parametrize("peek", ["writes", "pristine", "materialize", "fork"])
def test_a_computation_that_writes_or_looks_past_the_rows_is_never_shared(toy: Domain, peek: str) -> None:
    runs: list[int] = []

    def compute(db: Database) -> int:
        runs.append(1)
        if peek == "writes":
            db.new_id("ticket")
        elif peek == "pristine":
            _ = db.pristine
        elif peek == "materialize":
            db.materialize()
        else:
            db.fork()
        return len(runs)

    one, two = toy.fresh_database(), toy.fresh_database()
    assert one.read_through("k", lambda: compute(one)) == 1
    assert two.read_through("k", lambda: compute(two)) == 2


def test_an_answer_shared_inside_another_computation_counts_as_its_reads(toy: Domain) -> None:
    computed: list[str] = []
    first = toy.fresh_database()
    first.read_through("x", _counting(first, "x", computed))

    def nested(db: Database) -> int:
        return db.read_through("outer", lambda: db.read_through("x", _counting(db, "x", computed)))

    assert nested(toy.fresh_database()) == 5  # its inner answer shared: the outer one read "counters"
    changed = toy.fresh_database()
    changed.put(Counter(name="x", value=8))
    assert nested(changed) == 8


def test_another_clock_is_another_answer(toy: Domain) -> None:
    now = toy.fresh_database()
    later = Database(now.pristine, now.now + timedelta(days=1), PristineIndex(now.pristine))
    index = PristineIndex(now.pristine)
    now, later = Database(now.pristine, now.now, index), Database(now.pristine, later.now, index)
    assert now.read_through("when", lambda: now.now) != later.read_through("when", lambda: later.now)


def test_the_remembered_answers_are_bounded(monkeypatch: pytest.MonkeyPatch, toy: Domain) -> None:
    monkeypatch.setattr(PristineIndex, "ANSWERS_KEPT", 3)
    computed: list[str] = []
    db = toy.fresh_database()
    for name in ["x", "y", "x", "y"]:
        db.read_through(name, _counting(db, name, computed))
    for key in range(5):
        db.read_through(("other", key), lambda: None)
    db.read_through("x", _counting(db, "x", computed))
    assert computed == ["x", "y", "x"]


def test_the_remembered_answers_are_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch, toy: Domain) -> None:
    monkeypatch.setattr(PristineIndex, "ANSWER_BYTES_KEPT", 100)
    computed: list[str] = []
    db = toy.fresh_database()

    def big(name: str):  # type: ignore[no-untyped-def]
        return lambda: computed.append(name) or name * 60

    for name in ["a", "a", "b", "a"]:
        assert db.read_through(name, big(name), len) == name * 60
    assert computed == ["a", "b", "a"]  # b's 60 bytes pushed a's out


def test_a_read_tool_answers_from_the_sandboxs_own_state(toy: Domain) -> None:
    assert '"value":5' in toy.toolkit.call(toy.fresh_database(), "get_counter", {"name": "x"}).content
    changed = toy.fresh_database()
    assert not toy.toolkit.call(changed, "add", {"name": "x", "amount": 2}).error
    assert '"value":7' in toy.toolkit.call(changed, "get_counter", {"name": "x"}).content
    assert '"value":5' in toy.toolkit.call(toy.fresh_database(), "get_counter", {"name": "x"}).content
    missing = toy.toolkit.call(toy.fresh_database(), "get_counter", {"name": "zz"})
    assert missing == toy.toolkit.call(changed, "get_counter", {"name": "zz"})
    assert missing.error
    assert TOY_STATE["counters"]["x"]["value"] == 5


def _unshared_twin(db: Database) -> Database:
    """The same state on an index of its own: nothing it answers comes from another sandbox."""
    twin = Database(db.pristine, db.now, PristineIndex(db.pristine))
    for table, keys in db.touched().items():
        for key in keys:
            twin.set_row(table, key, db.row(table, key))
    return twin


@pytest.mark.parametrize("name", NATIVE_DOMAINS)
def test_every_shared_answer_equals_the_one_computed_alone(name: str) -> None:
    """Each task's ground truth replayed; after every step, each read call of the task is asked of
    the sandbox (answers shared between the tasks' sandboxes) and of an unshared twin."""
    domain = load_domain(name)
    compared = 0
    for task in domain.tasks("test"):
        reads = [call for call in task.actions if not domain.toolkit_for(call.actor).is_write(call.name)]
        db = domain.initial_database(task)
        for call in [*task.actions, None]:
            for read in reads:
                toolkit = domain.toolkit_for(read.actor)
                shared = toolkit.call(db, read.name, read.arguments)
                assert shared == toolkit.call(_unshared_twin(db), read.name, read.arguments), (task.id, read)
                compared += 1
            if call is not None:
                domain.toolkit_for(call.actor).call(db, call.name, call.arguments)
    assert compared > 100
