"""The generator rebuilds data/ and tasks/ byte-identically from the seed."""

from __future__ import annotations

from pathlib import Path

import castbench_telecom
from castbench_telecom.generate import DEFAULT_SEED, generate

FILES = ["data/state.json", "tasks/test.json", "tasks/train.json"]
PACKAGE = Path(castbench_telecom.__file__).parent


def test_same_seed_same_bytes_as_committed(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    generate(DEFAULT_SEED, first)
    generate(DEFAULT_SEED, second)
    for name in FILES:
        produced = (first / name).read_bytes()
        assert produced == (second / name).read_bytes(), name
        assert produced == (PACKAGE / name).read_bytes(), f"{name} is stale: rerun the generator"


def test_another_seed_gives_other_data(tmp_path: Path) -> None:
    generate(DEFAULT_SEED + 1, tmp_path)
    assert (tmp_path / FILES[0]).read_bytes() != (PACKAGE / FILES[0]).read_bytes()


def test_state_stays_small() -> None:
    assert (PACKAGE / "data" / "state.json").stat().st_size < 3_000_000
