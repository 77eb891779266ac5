"""The `tau` user: an LLM user simulator that reads what τ's own user reads.

Its system prompt is built by τ's `LLMUserSimulationEnv.build_system_prompt` from the package,
given the task's instruction; the conversation starts as τ starts it (the model, playing the
user, answers "Hi! How can I help you today?", and that answer is the opening) and ends when the
model writes `###STOP###`. Everything else (provider, retries, usage, own-side tools) is
castbench's `LLMUser`. A castbench trait profile, when a run sets one, is appended as one line,
as castbench's own LLM user does: τ-Trait's traits come from a hosted steering service that
castbench cannot call.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

from castbench.agents import BuiltinAgent, LLMUser, UserBriefing
from castbench_tau.source import import_tau

__all__ = ["TAU_GREETING", "TauUser", "tau_user_prompt"]

TAU_GREETING = "Hi! How can I help you today?"
_STOP = "###STOP###"


def tau_user_prompt(instruction: str) -> str:
    """τ's user system prompt for an instruction, built by τ's own code (which prints it)."""
    simulator = import_tau("tau_trait.envs.user").LLMUserSimulationEnv
    with contextlib.redirect_stdout(io.StringIO()):
        return str(simulator.build_system_prompt(None, instruction))


class TauUser(LLMUser):
    def __init__(self, briefing: UserBriefing, model: str, **settings: Any) -> None:
        super().__init__(briefing, model, **{**settings, "stop_token": _STOP})
        system = tau_user_prompt(briefing.scenario.instructions)
        if briefing.traits:
            traits = ", ".join(f"{name}: {level}" for name, level in sorted(briefing.traits.items()))
            system += f"- Act out these traits throughout: {traits}.\n"
        self._messages = [{"role": "system", "content": system}]

    def open(self) -> str:
        self._messages.append({"role": "user", "content": TAU_GREETING})
        text = self._complete().text
        self._messages.append({"role": "assistant", "content": text})
        return text.replace(_STOP, "").strip()


TAU_USER = BuiltinAgent(
    "user",
    "tau",
    TauUser,
    "τ-Bench's LLM user: τ's own prompt from the tau-trait package (tau?model=provider/model)",
    model_backed=True,
)
"""Registered through the `castbench.agents` entry point (pyproject): `--user tau?model=...`."""
