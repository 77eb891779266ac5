"""The generator rebuilds data/ and tasks/ byte-identically from the seed."""

from __future__ import annotations

import json
from pathlib import Path
from random import Random

import castbench_telehealth
from castbench.domain import Domain
from castbench_telehealth.generate import DEFAULT_SEED, generate
from castbench_telehealth.world import build_world

FILES = ["data/state.json", "tasks/test.json", "tasks/train.json"]
PACKAGE = Path(castbench_telehealth.__file__).parent


def test_same_seed_same_bytes_as_committed(tmp_path: Path) -> None:
    """Also the determinism check: the committed files came from an earlier run."""
    generate(DEFAULT_SEED, tmp_path)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (PACKAGE / name).read_bytes(), (
            f"{name} is stale: rerun the generator"
        )


def test_another_seed_gives_other_data() -> None:
    ours = json.loads((PACKAGE / FILES[0]).read_text())
    other = build_world(Random(DEFAULT_SEED + 1)).state()
    assert json.loads(json.dumps(other)) != ours
    assert build_world(Random(DEFAULT_SEED)).state() == build_world(Random(DEFAULT_SEED)).state()


def test_state_is_small_and_of_the_intended_scale(telehealth: Domain) -> None:
    assert (PACKAGE / "data" / "state.json").stat().st_size < 3_000_000
    sizes = {table: len(rows) for table, rows in telehealth.pristine.items()}
    assert 280 <= sizes["patients"] <= 320
    assert sizes["providers"] == 60
    assert 18 <= sizes["pharmacies"] <= 30
    assert 500 <= sizes["appointments"] <= 750
    assert 500 <= sizes["prescriptions"] <= 750
    assert sizes["escalations"] == 0
