"""The agents castbench ships: every command works offline with these.

`shipped_agents()` lists them; the registry registers them by calling it when a name is first
resolved or listed (`castbench._agents.registry`). Importing this module registers nothing."""

from __future__ import annotations

from pydantic import BaseModel, Field

from castbench._agents.critics.oracle import NoisyCritic, NoisyCriticParams, OracleCritic
from castbench._agents.critics.rules import RulesCritic
from castbench._agents.scripted.misbehaving import ContradictingUser, LeakyUser, QuitterUser
from castbench._agents.scripted.noisy import NoisyParams, NoisyPolicy
from castbench._agents.scripted.oracle import OraclePolicy
from castbench._agents.scripted.refusers import LookupRefusePolicy, RefusePolicy
from castbench._agents.scripted.spray import LookupSprayPolicy, SprayParams
from castbench._agents.scripted.user import ScriptedUser
from castbench._agents.spec import BuiltinAgent

__all__ = ["ScriptedUserParams", "shipped_agents"]


class ScriptedUserParams(BaseModel):
    patience: int = Field(4, ge=1, description="turns without progress before the user gives up")


def shipped_agents() -> list[BuiltinAgent]:
    """castbench's own policies, users and critics, for the registry to register."""
    privileged = True
    return [
        BuiltinAgent(
            "policy",
            "oracle",
            OraclePolicy,
            "replays the ground truth (privileged upper bound)",
            None,
            privileged,
        ),
        BuiltinAgent(
            "policy",
            "scripted:noisy",
            NoisyPolicy,
            "the oracle plus seeded CAST mistakes (hallucination, wrong tool, domain violation)",
            NoisyParams,
            privileged,
        ),
        BuiltinAgent(
            "policy",
            "scripted:refuse",
            RefusePolicy,
            "apologises and refuses every request, no tool calls (the blanket-refusal floor)",
        ),
        BuiltinAgent(
            "policy",
            "scripted:lookup-refuse",
            LookupRefusePolicy,
            "looks up what it can, then refuses citing record statuses (the look-up-then-refuse floor)",
        ),
        BuiltinAgent(
            "policy",
            "scripted:lookup-spray",
            LookupSprayPolicy,
            "task-blind: looks everything up, offers every change, states every rule and value "
            "(the spray floor)",
            SprayParams,
        ),
        BuiltinAgent(
            "user",
            "scripted",
            ScriptedUser,
            "deterministic user: reveals facts when asked",
            ScriptedUserParams,
        ),
        *(
            BuiltinAgent("user", name, user, summary, ScriptedUserParams)
            for name, user, summary in (
                (
                    "scripted:leaky",
                    LeakyUser,
                    "misbehaves: says what it should hold back (facts unasked, its brief)",
                ),
                (
                    "scripted:contradicting",
                    ContradictingUser,
                    "misbehaves: wrong facts, declines what it came for",
                ),
                ("scripted:quitter", QuitterUser, "misbehaves: leaves after its first answer"),
            )
        ),
        BuiltinAgent(
            "critic", "rules", RulesCritic, "model-free checks on the visible conversation (deployable)"
        ),
        BuiltinAgent(
            "critic",
            "oracle",
            OracleCritic,
            "flags exactly what the labeler calls invalid (privileged)",
            None,
            privileged,
        ),
        BuiltinAgent(
            "critic",
            "scripted:noisy",
            NoisyCritic,
            "the oracle critic with seeded false flags and misses (privileged simulation)",
            NoisyCriticParams,
            privileged,
        ),
    ]
