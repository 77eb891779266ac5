"""The agents castbench ships: every command works offline with these."""

from __future__ import annotations

from pydantic import BaseModel, Field

from castbench.agents.critics.oracle import NoisyCritic, NoisyCriticParams, OracleCritic
from castbench.agents.critics.rules import RulesCritic
from castbench.agents.registry import BuiltinAgent, register
from castbench.agents.scripted.misbehaving import ContradictingUser, LeakyUser, QuitterUser
from castbench.agents.scripted.noisy import NoisyParams, NoisyPolicy
from castbench.agents.scripted.oracle import OraclePolicy
from castbench.agents.scripted.refusers import LookupRefusePolicy, RefusePolicy
from castbench.agents.scripted.spray import LookupSprayPolicy, SprayParams
from castbench.agents.scripted.user import ScriptedUser


class ScriptedUserParams(BaseModel):
    patience: int = Field(4, ge=1, description="turns without progress before the user gives up")


register(
    BuiltinAgent(
        "policy", "oracle", OraclePolicy, "replays the ground truth (privileged upper bound)", None, True
    )
)
register(
    BuiltinAgent(
        "policy",
        "scripted:noisy",
        NoisyPolicy,
        "the oracle plus seeded CAST mistakes (hallucination, wrong tool, domain violation)",
        NoisyParams,
        True,
    )
)
register(
    BuiltinAgent(
        "policy",
        "scripted:refuse",
        RefusePolicy,
        "apologises and refuses every request, no tool calls (the blanket-refusal floor)",
    )
)
register(
    BuiltinAgent(
        "policy",
        "scripted:lookup-refuse",
        LookupRefusePolicy,
        "looks up what it can, then refuses citing record statuses (the look-up-then-refuse floor)",
    )
)
register(
    BuiltinAgent(
        "policy",
        "scripted:lookup-spray",
        LookupSprayPolicy,
        "task-blind: looks everything up, offers every change, states every rule and value (the spray floor)",
        SprayParams,
    )
)
register(
    BuiltinAgent(
        "user", "scripted", ScriptedUser, "deterministic user: reveals facts when asked", ScriptedUserParams
    )
)
for _name, _user, _summary in (
    ("scripted:leaky", LeakyUser, "misbehaves: says what it should hold back (facts unasked, its brief)"),
    ("scripted:contradicting", ContradictingUser, "misbehaves: wrong facts, declines what it came for"),
    ("scripted:quitter", QuitterUser, "misbehaves: leaves after its first answer"),
):
    register(BuiltinAgent("user", _name, _user, _summary, ScriptedUserParams))


register(
    BuiltinAgent("critic", "rules", RulesCritic, "model-free checks on the visible conversation (deployable)")
)
register(
    BuiltinAgent(
        "critic",
        "oracle",
        OracleCritic,
        "flags exactly what the labeler calls invalid (privileged)",
        None,
        True,
    )
)
register(
    BuiltinAgent(
        "critic",
        "scripted:noisy",
        NoisyCritic,
        "the oracle critic with seeded false flags and misses (privileged simulation)",
        NoisyCriticParams,
        True,
    )
)
