"""examples/trainer/grpo_castbench.py: TRL's GRPO trains on castbench's Environment on CPU, its
rewards the labeler's verdicts on the model's actions."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("trl", reason="the train extra: pip install -e '.[train]'")
pytestmark = pytest.mark.extra("train")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trainer" / "grpo_castbench.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("grpo_castbench", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reward_is_castbenchs_verdict_on_the_action() -> None:
    example = _example()
    reward = example.CastbenchReward("retail", seed=0)
    reads = json.dumps({"tool": "list_all_product_types", "arguments": {}})
    invents = json.dumps(
        {"tool": "cancel_pending_order", "arguments": {"order_id": "#W3002897", "reason": "x"}}
    )
    task = ["retail-test-0002"] * 3
    assert reward([""] * 3, [reads, invents, "no json"], task) == [1.0, 0.0, example.UNUSABLE]


@pytest.mark.slow
def test_grpo_runs_steps_on_cpu_with_castbench_rewards(tmp_path: Path) -> None:
    log = _example().train("retail", tasks=2, steps=2, seed=0, output_dir=str(tmp_path))
    assert [entry["step"] for entry in log] == [1, 2]
    assert all(-0.5 <= entry["reward"] <= 1.0 for entry in log)
