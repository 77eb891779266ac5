"""The rules critic against the labeler on the τ packs, per pack: `scripted:noisy?p=0.3` with
`--critic rules`, one trial per test task (seeded, so the figures are exact), as the cast-paper
board runs it. The bounds are the figures measured on 2026-12-01 with a little room; before the
checks were fixed the false-flag rates were retail 0.084, airline 0.137, telehealth 0.292 (order
numbers said without their `#`, catalogue ids, a calculator's arithmetic, dates of a search,
telehealth's "not found" answers taken as successes). Detection must not fall with them."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._run.api import evaluate
from tests.support import sqlite_url

pytestmark = pytest.mark.extra("tau")

BOUNDS = {  # pack: (false-flag rate at most, detection rate at least); measured 0.044/1.000,
    # 0.072/0.993, 0.000/1.000, 0.097/0.947
    "tau-retail": (0.06, 0.99),
    "tau-airline": (0.10, 0.98),
    "tau-telecom": (0.0, 1.0),
    "tau-telehealth": (0.12, 0.92),
}


def _rates(pack: str, db: str) -> tuple[float, float]:
    result = evaluate(
        domains=pack, split="test", policy="scripted:noisy?p=0.3", critic="rules", trials=1, db=db
    )
    critic = result.summary.domains[pack].critic
    assert critic is not None and critic.false_flag_rate is not None and critic.detection_rate is not None
    return critic.false_flag_rate, critic.detection_rate


@pytest.mark.parametrize("pack", sorted(BOUNDS))
def test_false_flags_stay_low_and_detection_high(pack: str, tmp_path: Path) -> None:
    false_flags, detection = _rates(pack, sqlite_url(tmp_path / "critic.db"))
    most, least = BOUNDS[pack]
    assert false_flags <= most, (pack, false_flags, detection)
    assert detection >= least, (pack, false_flags, detection)
