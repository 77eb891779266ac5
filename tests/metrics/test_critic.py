from math import sqrt

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from castbench._records.metrics import (
    ConfusionCounts,
    CriticRecord,
    correction_rate,
    critic_metrics,
    harmful_revision_rate,
    harmfulness,
    helpfulness,
    rate,
    resistance_rate,
)

# TP=3 (2 hallucination, 1 domain violation), FN=2 (1 domain violation, 1 wrong tool), FP=1, TN=4, 2 unknown.
HAND_BUILT = [
    ("flag", "invalid", "hallucination"),
    ("flag", "invalid", "hallucination"),
    ("flag", "invalid", "domain_violation"),
    ("pass", "invalid", "domain_violation"),
    ("pass", "invalid", "wrong_tool"),
    ("flag", "valid", None),
    *[("pass", "valid", None)] * 4,
    ("flag", "unknown", None),
    ("pass", "unknown", None),
]


def test_hand_built_confusion() -> None:
    m = critic_metrics(HAND_BUILT)
    assert m.counts == ConfusionCounts(flag_invalid=3, flag_valid=1, pass_invalid=2, pass_valid=4)
    assert (m.n_verified, m.unknown) == (12, 2)
    assert m.confusion is not None
    assert m.confusion.model_dump() == pytest.approx(
        {"flag_invalid": 0.3, "flag_valid": 0.1, "pass_invalid": 0.2, "pass_valid": 0.4}
    )
    assert m.flag_rate == 5 / 12
    assert m.false_flag_rate == 1 / 5
    assert m.detection_rate == 3 / 5
    assert m.precision == 3 / 4
    assert m.f1 == pytest.approx(2 * 0.75 * 0.6 / (0.75 + 0.6))
    assert m.mcc == pytest.approx((3 * 4 - 1 * 2) / sqrt(4 * 5 * 5 * 6))
    assert m.detection_by_type == {"hallucination": 1.0, "domain_violation": 0.5, "wrong_tool": 0.0}


def test_named_records_and_empty_input() -> None:
    assert (
        critic_metrics([CriticRecord("flag", "invalid", "wrong_tool")]).detection_by_type["wrong_tool"] == 1.0
    )
    empty = critic_metrics([])
    assert empty.confusion is None and empty.flag_rate is None and empty.mcc is None and empty.f1 is None


def test_undefined_rates_are_none() -> None:
    only_valid = critic_metrics([("flag", "valid", None), ("pass", "valid", None)])
    assert only_valid.detection_rate is None and only_valid.mcc is None and only_valid.f1 is None
    assert only_valid.precision == 0.0 and only_valid.false_flag_rate == 0.5
    assert set(only_valid.detection_by_type.values()) == {None}
    never_flags = critic_metrics([("pass", "invalid", "hallucination"), ("pass", "valid", None)])
    assert never_flags.precision is None and never_flags.mcc is None
    assert never_flags.f1 == 0.0 and never_flags.detection_rate == 0.0
    only_unknown = critic_metrics([("flag", "unknown", None)])
    assert only_unknown.confusion is None and only_unknown.flag_rate == 1.0 and only_unknown.unknown == 1


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (("maybe", "valid", None), "verdict"),
        (("flag", "bad", None), "label"),
        (("flag", "invalid", "typo"), "failure type"),
    ],
)
def test_bad_records_raise(record: tuple[str, str, str | None], message: str) -> None:
    with pytest.raises(ValueError, match=f"record 0: {message}"):
        critic_metrics([record])


records = st.lists(
    st.tuples(st.sampled_from(["flag", "pass"]), st.sampled_from(["invalid", "valid", "unknown"]), st.none()),
    max_size=60,
)


@given(records)
def test_shares_sum_to_one_and_mcc_is_phi(recs: list[tuple[str, str, None]]) -> None:
    m = critic_metrics(recs)
    labelled = [(v == "flag", lab == "invalid") for v, lab, _ in recs if lab != "unknown"]
    if m.confusion is not None:
        assert sum(m.confusion.model_dump().values()) == pytest.approx(1.0)
    if m.mcc is not None:
        pred, truth = np.array(labelled, dtype=float).T
        assert m.mcc == pytest.approx(np.corrcoef(pred, truth)[0, 1])
        assert -1 - 1e-12 <= m.mcc <= 1 + 1e-12


def test_count_rates() -> None:
    assert resistance_rate(3, 10) == 0.3
    assert correction_rate(7, 8) == 7 / 8
    assert harmful_revision_rate(1, 4) == 0.25
    assert helpfulness(2, 5) == 0.4
    assert harmfulness(0, 5) == 0.0
    for fn in (rate, resistance_rate, correction_rate, harmful_revision_rate, helpfulness, harmfulness):
        assert fn(0, 0) is None
        with pytest.raises(ValueError, match="0 <= count <= total"):
            fn(3, 2)
        with pytest.raises(ValueError):
            fn(-1, 2)
