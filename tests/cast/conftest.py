"""Fixtures of the CAST plugin's tests: recipes in a temporary folder, small collected runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="the CAST tests need the train extra: pip install -e '.[train]'")

from castbench_cast.pipeline import Pipeline  # noqa: E402
from castbench_cast.recipe import load_recipe  # noqa: E402

SMALL = """
name = "test"
out = "out"

[collect]
domains = "retail"
limit = 3
policy = "scripted:noisy?p=0.5"
samples = 2
"""


@pytest.fixture
def recipe_file(tmp_path: Path) -> Callable[[str], Path]:
    """`recipe_file(extra_toml)`: the small recipe plus `extra_toml`, written to `tmp_path`."""

    def write(extra: str = "") -> Path:
        path = tmp_path / "recipe.toml"
        path.write_text(SMALL + extra)
        return path

    return write


@pytest.fixture
def pipeline(recipe_file: Callable[[str], Path]) -> Pipeline:
    return Pipeline(load_recipe(recipe_file("")), log=lambda line: None)
