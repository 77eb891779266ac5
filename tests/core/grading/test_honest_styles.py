"""Both directions of the grader's validity, on the real domains (a CI-sized `bench/honest_styles.py`):
every honest variant of the oracle (same calls and writes, only the talk changed) passes plain and
strict (the styles of real models too: bulleted summaries, ordinal dates, "your Visa ending in
6645", an acknowledgement between the yes and the write), no spray variant earns more than the
lookup-refuse floor (a task-blind spray of every reason inside conditions included), and a write
without an explicit yes to the change still fails strict."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "honest_styles.py"
DOMAINS = ("retail", "airline", "telecom", "telehealth")
LIMIT = 40
"""The first tasks of each test split: refusals, declines, look-ups and changes among them."""


def _bench() -> ModuleType:
    if "honest_styles" not in sys.modules:
        spec = importlib.util.spec_from_file_location("honest_styles", BENCH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["honest_styles"] = module
        spec.loader.exec_module(module)
    return sys.modules["honest_styles"]


@pytest.mark.slow
@pytest.mark.parametrize("domain", DOMAINS)
def test_every_honest_style_passes_plain_and_strict(domain: str) -> None:
    bench = _bench()
    for name, style in bench.HONEST_STYLES.items():
        score = bench.score_style(domain, bench._honest_spec(name, style), limit=LIMIT, keep=3)
        assert score.worst >= 0.99, (name, score.failures)


@pytest.mark.slow
@pytest.mark.parametrize("domain", DOMAINS)
def test_no_spray_earns_more_than_the_lookup_refuse_floor(domain: str) -> None:
    bench = _bench()
    floor = bench.score_style(domain, bench.SPRAYS["floor: lookup-refuse"], limit=LIMIT)
    for name, spec in bench.SPRAYS.items():
        if name.startswith("floor"):
            continue
        spray = bench.score_style(domain, spec, limit=LIMIT)
        assert spray.plain / spray.tasks <= floor.plain / floor.tasks + 0.02, name


@pytest.mark.slow
@pytest.mark.parametrize("domain", DOMAINS)
def test_an_unconfirmed_write_still_fails_strict(domain: str) -> None:
    """The other direction of the explicit yes: writing without asking, or after a yes to a
    question that said nothing of the change, fails strict wherever the write went through."""
    bench = _bench()
    for name, style in bench.UNCONFIRMED.items():
        score = bench.score_style(domain, bench._honest_spec(name, style), limit=LIMIT)
        assert score.wrote > 0 and score.strict_wrote == 0, (name, score.strict_wrote, score.wrote)


def test_a_skipped_write_is_a_missing_state_change() -> None:
    causes = _bench().skipped_write_causes(["retail", "telecom"], limit=LIMIT)
    for domain, counted in causes.items():
        assert counted and set(counted) == {"missing_state_change"}, (domain, counted)
