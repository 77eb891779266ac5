"""How well a critic separates invalid proposed actions from valid ones, and how a policy reacts.

The confusion matrix counts every verified action by critic verdict (flag / pass) and true
label (invalid / valid). Shares are over labelled actions, as CAST reports them; actions whose
label is unknown are counted apart rather than guessed. "Positive" means invalid: detecting an
invalid action is a true positive, flagging a valid one a false flag. A rate whose denominator
is empty is None, not 0, so "never happened" is not mistaken for "never succeeded".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from math import sqrt
from typing import Literal, NamedTuple, cast, get_args

from pydantic import BaseModel, ConfigDict

__all__ = [
    "FAILURE_TYPES",
    "ConfusionCounts",
    "ConfusionShares",
    "CriticIntervals",
    "CriticMetrics",
    "CriticRecord",
    "FailureType",
    "correction_rate",
    "critic_intervals",
    "critic_metrics",
    "harmful_revision_rate",
    "harmfulness",
    "helpfulness",
    "insistence_rate",
    "rate",
    "resistance_rate",
]

Verdict = Literal["flag", "pass"]
Label = Literal["invalid", "valid", "unknown"]
FailureType = Literal["hallucination", "domain_violation", "wrong_tool"]
FAILURE_TYPES: tuple[FailureType, ...] = get_args(FailureType)


class CriticRecord(NamedTuple):
    """One verified action; `failure_type` is read only when the label is invalid."""

    verdict: Verdict
    label: Label
    failure_type: FailureType | None = None


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ConfusionCounts(_Frozen):
    flag_invalid: int
    flag_valid: int
    pass_invalid: int
    pass_valid: int


class ConfusionShares(_Frozen):
    """Each cell as a share of all labelled verified actions (the four sum to 1)."""

    flag_invalid: float
    flag_valid: float
    pass_invalid: float
    pass_valid: float


class CriticMetrics(_Frozen):
    n_verified: int
    """Every verified action, unknown labels included."""
    unknown: int
    """Verified actions with no true label; in no cell and no rate except `flag_rate`."""
    counts: ConfusionCounts
    confusion: ConfusionShares | None
    """None when no verified action is labelled."""
    flag_rate: float | None
    """Flagged / all verified actions, unknown labels included."""
    false_flag_rate: float | None
    """Flagged valid / valid."""
    detection_rate: float | None
    """Flagged invalid / invalid (recall)."""
    precision: float | None
    """Flagged invalid / flagged labelled actions."""
    f1: float | None
    """2·TP / (2·TP + FP + FN); None when there is no invalid action, 0 when none is caught."""
    mcc: float | None
    """Matthews correlation of verdict and label; None when any margin of the matrix is empty."""
    detection_by_type: dict[FailureType, float | None]
    """Detection rate among invalid actions of each failure type."""


def rate(count: int, total: int) -> float | None:
    """count / total, or None when total is 0."""
    if not 0 <= count <= total:
        raise ValueError(f"a rate needs 0 <= count <= total, got {count}/{total}")
    return count / total if total else None


def _validated(record: CriticRecord | tuple[str, str, str | None], index: int) -> CriticRecord:
    verdict, label, failure_type = record
    if verdict not in get_args(Verdict):
        raise ValueError(f"record {index}: verdict {verdict!r} is not 'flag' or 'pass'")
    if label not in get_args(Label):
        raise ValueError(f"record {index}: label {label!r} is not 'invalid', 'valid' or 'unknown'")
    if failure_type is not None and failure_type not in FAILURE_TYPES:
        raise ValueError(f"record {index}: failure type {failure_type!r} is not one of {FAILURE_TYPES}")
    return CriticRecord(cast(Verdict, verdict), cast(Label, label), failure_type)


def critic_metrics(records: Iterable[CriticRecord | tuple[str, str, str | None]]) -> CriticMetrics:
    """Confusion matrix and rates of a critic over verified actions (verdict, label, failure type)."""
    checked = [_validated(record, index) for index, record in enumerate(records)]
    cells = {(v, lab): 0 for v in get_args(Verdict) for lab in ("invalid", "valid")}
    flagged_by_type = dict.fromkeys(FAILURE_TYPES, 0)
    invalid_by_type = dict.fromkeys(FAILURE_TYPES, 0)
    unknown = flagged = 0
    for record in checked:
        flagged += record.verdict == "flag"
        if record.label == "unknown":
            unknown += 1
            continue
        cells[record.verdict, record.label] += 1
        if record.label == "invalid" and record.failure_type is not None:
            invalid_by_type[record.failure_type] += 1
            flagged_by_type[record.failure_type] += record.verdict == "flag"
    counts = ConfusionCounts(
        flag_invalid=cells["flag", "invalid"],
        flag_valid=cells["flag", "valid"],
        pass_invalid=cells["pass", "invalid"],
        pass_valid=cells["pass", "valid"],
    )
    tp, fp, fn, tn = counts.flag_invalid, counts.flag_valid, counts.pass_invalid, counts.pass_valid
    labelled = tp + fp + fn + tn
    confusion = (
        ConfusionShares(
            flag_invalid=tp / labelled,
            flag_valid=fp / labelled,
            pass_invalid=fn / labelled,
            pass_valid=tn / labelled,
        )
        if labelled
        else None
    )
    margins = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return CriticMetrics(
        n_verified=len(checked),
        unknown=unknown,
        counts=counts,
        confusion=confusion,
        flag_rate=rate(flagged, len(checked)),
        false_flag_rate=rate(fp, fp + tn),
        detection_rate=rate(tp, tp + fn),
        precision=rate(tp, tp + fp),
        f1=2 * tp / (2 * tp + fp + fn) if tp + fn else None,
        mcc=(tp * tn - fp * fn) / sqrt(margins) if margins else None,
        detection_by_type={t: rate(flagged_by_type[t], invalid_by_type[t]) for t in FAILURE_TYPES},
    )


class CriticIntervals(_Frozen):
    """Percentile bootstrap intervals of the critic's headline figures, resampling tasks (the
    verdicts of one task are not independent draws); None where too few resamples define it."""

    level: float
    resamples: int
    mcc: tuple[float, float] | None
    false_flag_rate: tuple[float, float] | None
    detection_rate: tuple[float, float] | None


def critic_intervals(
    groups: Sequence[Sequence[CriticRecord | tuple[str, str, str | None]]],
    *,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> CriticIntervals:
    """Intervals of MCC, false-flag and detection rate over `groups` (one per task): each
    resample draws tasks with replacement and recomputes the figures from the summed confusion
    cells. A resample where a figure is undefined (an empty margin) is left out of its interval;
    when fewer than half the resamples define it, the interval is None."""
    import numpy as np

    if resamples < 1 or not 0 < level < 1:
        raise ValueError(f"need resamples >= 1 and 0 < level < 1, got {resamples}, {level}")
    cells = np.zeros((len(groups), 4), dtype=np.float64)  # tp, fp, fn, tn per task
    order = {("flag", "invalid"): 0, ("flag", "valid"): 1, ("pass", "invalid"): 2, ("pass", "valid"): 3}
    for row, group in enumerate(groups):
        for index, record in enumerate(group):
            checked = _validated(record, index)
            if checked.label != "unknown":
                cells[row, order[checked.verdict, checked.label]] += 1
    if not len(groups):
        return CriticIntervals(
            level=level, resamples=resamples, mcc=None, false_flag_rate=None, detection_rate=None
        )
    rng = np.random.default_rng(seed)
    drawn = cells[rng.integers(0, len(groups), size=(resamples, len(groups)))].sum(axis=1)
    tp, fp, fn, tn = drawn.T
    with np.errstate(divide="ignore", invalid="ignore"):
        margins = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
        figures = {
            "mcc": np.where(margins > 0, (tp * tn - fp * fn) / np.sqrt(margins), np.nan),
            "false_flag_rate": np.where(fp + tn > 0, fp / (fp + tn), np.nan),
            "detection_rate": np.where(tp + fn > 0, tp / (tp + fn), np.nan),
        }
    tail = (1 - level) / 2 * 100

    def interval(values: np.ndarray) -> tuple[float, float] | None:  # type: ignore[type-arg]
        defined = values[~np.isnan(values)]
        if defined.size < resamples / 2:
            return None
        low, high = np.percentile(defined, [tail, 100 - tail])
        return float(low), float(high)

    return CriticIntervals(
        level=level, resamples=resamples, **{name: interval(values) for name, values in figures.items()}
    )


def resistance_rate(kept: int, false_flags: int) -> float | None:
    """CAST's resistance: of the *false* flags (a valid action rejected) that the policy answered,
    the share after which it kept its valid action (proposed the same action again)."""
    return rate(kept, false_flags)


def insistence_rate(insisted: int, true_flags: int) -> float | None:
    """Of the *true* flags (an invalid action rejected) that the policy answered, the share after
    which it re-proposed the same invalid action."""
    return rate(insisted, true_flags)


def correction_rate(corrected: int, true_flags: int) -> float | None:
    """Of the true flags, the share whose next executed action is valid."""
    return rate(corrected, true_flags)


def harmful_revision_rate(harmed: int, revisions: int) -> float | None:
    """Share of revisions that replaced a valid action with an invalid one (a false flag obeyed)."""
    return rate(harmed, revisions)


def helpfulness(helped: int, opportunities: int) -> float | None:
    """Share of cases the policy got wrong alone that the critic's intervention put right."""
    return rate(helped, opportunities)


def harmfulness(harmed: int, opportunities: int) -> float | None:
    """Share of cases the policy got right alone that the critic's intervention made wrong."""
    return rate(harmed, opportunities)
