"""The generator rebuilds data/ and tasks/ byte-identically from the seed."""

from __future__ import annotations

from pathlib import Path

import castbench_airline
from castbench_airline.generate import DEFAULT_SEED, generate

FILES = ["data/state.json", "tasks/test.json", "tasks/train.json"]
PACKAGE = Path(castbench_airline.__file__).parent


def test_same_seed_same_bytes_as_committed(tmp_path: Path) -> None:
    generate(DEFAULT_SEED, tmp_path / "a")
    generate(DEFAULT_SEED, tmp_path / "b")
    for name in FILES:
        produced = (tmp_path / "a" / name).read_bytes()
        assert produced == (tmp_path / "b" / name).read_bytes(), name
        assert produced == (PACKAGE / name).read_bytes(), f"{name} is stale: rerun the generator"


def test_another_seed_gives_other_data(tmp_path: Path) -> None:
    generate(DEFAULT_SEED + 1, tmp_path)
    assert (tmp_path / FILES[0]).read_bytes() != (PACKAGE / FILES[0]).read_bytes()


def test_state_stays_small() -> None:
    assert (PACKAGE / "data" / "state.json").stat().st_size < 3_000_000
