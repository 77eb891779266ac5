"""Costs are castbench's figures, from tokens and known prices, never an agent's own: a
self-reported `$-0.25` is dropped at the boundary (its tokens kept, never below zero), and
`--max-cost` over spending castbench cannot price says so before the first trial."""

from __future__ import annotations

import pytest

from castbench._agents.models.costs import max_cost_gaps, price_known
from castbench._agents.registry import AgentSpec
from castbench._agents.transports.wire import ACTION, VERDICT, from_agent
from castbench._base.conversation import ReplyAction, ToolCallAction, Usage, Verdict


def test_an_agents_own_cost_never_crosses_the_boundary() -> None:
    claimed = Usage(input_tokens=-40, output_tokens=12, cost=-0.25, latency_s=float("nan"), calls=1)
    for action in [
        ReplyAction(text="done", usage=claimed),
        ToolCallAction(name="cancel", arguments={}, usage=claimed),
    ]:
        wired = ACTION.validate_python(ACTION.dump_python(action, mode="python"))
        kept = from_agent(wired)
        assert kept.usage is not None
        assert kept.usage.cost is None and kept.usage.input_tokens == 0 and kept.usage.output_tokens == 12
        assert kept.usage.latency_s == 0.0 and kept.usage.calls == 1
    verdict = from_agent(VERDICT.validate_python({"verdict": "valid", "usage": claimed.model_dump()}))
    assert isinstance(verdict, Verdict) and verdict.usage is not None and verdict.usage.cost is None
    assert from_agent(claimed).cost is None
    assert from_agent(ReplyAction(text="no usage")).usage is None


def _spec(kind: str, **params: object) -> AgentSpec:
    return AgentSpec(role="policy", spec="x", name="x", factory=None, params=dict(params), kind=kind)  # type: ignore[arg-type]


def test_max_cost_warns_where_castbench_cannot_price() -> None:
    assert price_known({"model": "x/unknown", "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6})
    assert not price_known({"model": "hosted_vllm/my-finetune"})
    specs = [
        ("policy", _spec("import")),
        ("critic", _spec("model", model="hosted_vllm/my-finetune")),
        ("user", _spec("builtin")),
    ]
    gaps = max_cost_gaps(specs, 1.5)
    assert len(gaps) == 2 and all(gap.startswith("warning: --max-cost $1.5") for gap in gaps)
    assert "calls its models itself" in gaps[0] and "has no price castbench knows" in gaps[1]
    assert max_cost_gaps(specs, None) == []


@pytest.mark.parametrize("cost", [-0.25, 1e9])
def test_any_reported_cost_is_dropped_whatever_its_size(cost: float) -> None:
    assert from_agent(Usage(cost=cost)).cost is None
