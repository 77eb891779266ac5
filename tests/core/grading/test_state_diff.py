"""The state diff says which table, key and field differ, with the expected and the actual value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from castbench._grading import FieldDiff, state_diff
from castbench._grading.state_diff import _flatten, _normal, _row_diff, same
from castbench.domain import Domain, GradingSpec, load_domain
from castbench_retail.schema import Order
from tests.core.toy import Counter, Ticket, build_toy_domain


@pytest.fixture
def toy(tmp_path: Path) -> Domain:
    return build_toy_domain(tmp_path)


def _call(domain: Domain, db, tool: str, **arguments) -> None:  # type: ignore[no-untyped-def]
    observation = domain.toolkit.call(db, tool, arguments)
    assert not observation.error, observation.content


def test_identical_states_have_no_diff(toy: Domain) -> None:
    final, expected = toy.fresh_database(), toy.fresh_database()
    assert state_diff(final, expected) == []
    _call(toy, final, "add", name="x", amount=2)
    _call(toy, expected, "set_value", name="x", value=7)
    assert state_diff(final, expected) == []  # different calls, same state


def test_a_changed_field_is_listed_with_table_key_field_expected_got(toy: Domain) -> None:
    final, expected = toy.fresh_database(), toy.fresh_database()
    _call(toy, expected, "add", name="x", amount=1)
    _call(toy, final, "add", name="x", amount=2)
    assert state_diff(final, expected) == [
        FieldDiff(table="counters", key="x", field="value", expected=6, got=7)
    ]


def test_a_missing_change_is_listed(toy: Domain) -> None:
    expected = toy.fresh_database()
    _call(toy, expected, "configure", name="y", mode="b", tags=["blue", "green"], note="n")
    diff = state_diff(toy.fresh_database(), expected)
    assert [(d.table, d.key, d.field, d.expected, d.got) for d in diff] == [
        ("counters", "y", "mode", "b", "a"),
        ("counters", "y", "note", "n", ""),
        ("counters", "y", "tags", "<absent>", []),  # the empty list itself
        ("counters", "y", "tags[0]", "blue", "<absent>"),
        ("counters", "y", "tags[1]", "green", "<absent>"),
    ]


def test_list_items_are_compared_one_by_one(toy: Domain) -> None:
    final, expected = toy.fresh_database(), toy.fresh_database()
    _call(toy, expected, "configure", name="x", mode="a", tags=["red", "blue"], note="Hello World")
    _call(toy, final, "configure", name="x", mode="a", tags=["red", "green", "extra"], note="Hello World")
    assert [(d.field, d.expected, d.got) for d in state_diff(final, expected)] == [
        ("tags[1]", "blue", "green"),
        ("tags[2]", "<absent>", "extra"),
    ]


def test_nested_fields_are_named_by_path() -> None:
    retail = load_domain("retail")
    final, expected = retail.fresh_database(), retail.fresh_database()
    order = next(o for o in final.scan(Order) if o.items)
    moved = order.model_copy(deep=True)
    moved.address.city = "Springfield"
    moved.items[0].price = 1.23
    final.put(moved)
    fields = {(d.table, d.key, d.field): (d.expected, d.got) for d in state_diff(final, expected)}
    assert fields == {
        ("orders", order.order_id, "address.city"): (order.address.city, "Springfield"),
        ("orders", order.order_id, "items[0].price"): (order.items[0].price, 1.23),
    }


def test_rows_present_on_one_side_only(toy: Domain) -> None:
    final, expected = toy.fresh_database(), toy.fresh_database()
    _call(toy, expected, "open_ticket", title="help")
    final.delete(Counter, "y")
    diff = state_diff(final, expected)
    assert FieldDiff(table="counters", key="y", field="*", expected="<present>", got="<absent>") in diff
    assert FieldDiff(table="tickets", key="T-0001", field="*", expected="<present>", got="<absent>") in diff
    assert len(diff) == 2


def test_id_sequences_are_not_part_of_the_diff(toy: Domain) -> None:
    final, expected = toy.fresh_database(), toy.fresh_database()
    final.new_id("ticket")
    final.new_id("ticket")
    assert state_diff(final, expected) == []
    final.insert(Ticket(ticket_id="T-0001", title="x"))
    expected.insert(Ticket(ticket_id="T-0001", title="x"))
    assert state_diff(final, expected) == []


def test_a_write_back_of_the_pristine_value_is_no_difference(toy: Domain) -> None:
    final = toy.fresh_database()
    _call(toy, final, "add", name="x", amount=3)
    _call(toy, final, "add", name="x", amount=-3)
    assert state_diff(final, toy.fresh_database()) == []


def test_normalize_text_ignores_case_and_whitespace_of_named_fields(toy: Domain) -> None:
    final, expected = toy.fresh_database(), toy.fresh_database()
    _call(toy, expected, "configure", name="x", mode="a", tags=["red"], note="Left at the Front Door")
    _call(toy, final, "configure", name="x", mode="a", tags=["red"], note="  left at the   front door ")
    assert [d.field for d in state_diff(final, expected)] == ["note"]
    assert state_diff(final, expected, GradingSpec(normalize_text=["counters.note"])) == []
    # normalising does not make different words equal
    _call(toy, final, "configure", name="x", mode="a", tags=["red"], note="left at the back door")
    (diff,) = state_diff(final, expected, GradingSpec(normalize_text=["counters.note"]))
    assert (diff.field, diff.expected, diff.got) == (
        "note",
        "left at the front door",
        "left at the back door",
    )


def test_ignore_fields_leaves_a_field_out(toy: Domain) -> None:
    final, expected = toy.fresh_database(), toy.fresh_database()
    _call(toy, expected, "configure", name="x", mode="b", tags=["red"], note="expected")
    _call(toy, final, "configure", name="x", mode="b", tags=["blue"], note="whatever")
    assert {d.field for d in state_diff(final, expected)} == {"note", "tags[0]"}
    assert [d.field for d in state_diff(final, expected, GradingSpec(ignore_fields=["counters.note"]))] == [
        "tags[0]"
    ]
    both = GradingSpec(ignore_fields=["counters.note", "counters.tags"])
    assert state_diff(final, expected, both) == []
    # a field of another table with the same name is still compared
    assert state_diff(final, expected, GradingSpec(ignore_fields=["tickets.note", "counters.tags"]))


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.sampled_from(["a", "A ", "b"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xyz"), inner, max_size=3),
    max_leaves=12,
)
_rows = st.dictionaries(st.sampled_from(["id", "name", "items", "note"]), _json, max_size=4)


def _leaf_by_leaf(want: dict[str, Any], got: dict[str, Any], ignored: set[str], normal: set[str]) -> list:
    """The definition: flatten both whole rows and compare every leaf path, in path order."""
    flat_want: dict[str, Any] = {}
    flat_got: dict[str, Any] = {}
    _flatten(want, "", flat_want)
    _flatten(got, "", flat_got)
    out = []
    for path in sorted(set(flat_want) | set(flat_got)):
        field = path.split(".", 1)[0].split("[", 1)[0]
        if f"t.{field}" in ignored:
            continue
        a, b = flat_want.get(path, "<absent>"), flat_got.get(path, "<absent>")
        if f"t.{field}" in normal:
            a, b = _normal(a), _normal(b)
        if not same(a, b):
            out.append(FieldDiff(table="t", key="k", field=path, expected=a, got=b))
    return out


@settings(max_examples=300, deadline=None)
@given(want=_rows, got=_rows, ignored=st.sets(st.sampled_from(["t.note", "t.items"])))
def test_a_rows_diff_is_the_leaf_by_leaf_diff_of_its_flattened_fields(
    want: dict[str, Any], got: dict[str, Any], ignored: set[str]
) -> None:
    """Only differing top-level fields are flattened (a speed-up): the result must not change."""
    normal = {"t.name"}
    assert _row_diff("t", "k", want, got, ignored, normal) == _leaf_by_leaf(want, got, ignored, normal)
