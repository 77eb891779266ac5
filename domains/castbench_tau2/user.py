"""The `tau2` user: an LLM user simulator that reads what τ²'s own user simulator reads.

Its system prompt is τ²'s `UserSimulator.system_prompt`, built by τ²'s own code from the task's
user scenario (`str(task.user_scenario)`, as τ²'s runner passes it) and τ²'s global simulation
guidelines from the package: the guidelines for a user with tools where the pack gives the user
tools of their own (telecom's phone), which it then calls as castbench's `LLMUser` does (each call
run on the trial's own user state and recorded on the user's turn). The conversation starts as
τ²'s orchestrator starts it (the model, playing the user, answers the agent's "Hi! How can I
help you today?", and that answer is the opening) and ends when the model writes any of τ²'s stop
markers (`###STOP###`, `###TRANSFER###`, `###OUT-OF-SCOPE###`). Everything else (provider, retries, usage) is
castbench's `LLMUser`. A castbench trait profile, when a run sets one, is appended as one line.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from castbench.agents import BuiltinAgent, Completion, LLMUser, UserBriefing
from castbench_tau2.source import import_tau2

__all__ = ["TAU2_GREETING", "Tau2User", "tau2_user_prompt"]

TAU2_GREETING = "Hi! How can I help you today?"
"""τ²'s orchestrator's first agent message."""


def tau2_user_prompt(scenario: str, with_tools: bool = False) -> str:
    """τ²'s user system prompt for a scenario, built by τ²'s own simulator class (which picks
    its tool-using guidelines when it is given tools at all)."""
    simulator = import_tau2("tau2.user.user_simulator").UserSimulator
    tools: list[Any] | None = [] if with_tools else None
    return str(simulator(instructions=scenario, tools=tools, llm="unused").system_prompt)


class Tau2User(LLMUser):
    def __init__(self, briefing: UserBriefing, model: str, **settings: Any) -> None:
        base = import_tau2("tau2.user.base")
        self._stop, self._also_stop = base.STOP, (base.TRANSFER, base.OUT_OF_SCOPE)
        super().__init__(briefing, model, **{**settings, "stop_token": self._stop})
        system = tau2_user_prompt(briefing.scenario.instructions, with_tools=self._tools is not None)
        if briefing.traits:
            traits = ", ".join(f"{name}: {level}" for name, level in sorted(briefing.traits.items()))
            system += f"\n- Act out these traits throughout: {traits}."
        self._messages = [{"role": "system", "content": system}]

    def _complete(self) -> Completion:
        """τ²'s other stop markers end the conversation as `###STOP###` does."""
        completion = super()._complete()
        text = completion.text
        for marker in self._also_stop:
            text = text.replace(marker, self._stop)
        return replace(completion, text=text) if text != completion.text else completion

    def open(self) -> str:
        self._messages.append({"role": "user", "content": TAU2_GREETING})
        text = self._complete().text
        self._messages.append({"role": "assistant", "content": text})
        return text.replace(self._stop, "").strip()


TAU2_USER = BuiltinAgent(
    "user",
    "tau2",
    Tau2User,
    "τ²-bench's LLM user: τ²'s own simulator prompt and guidelines (tau2?model=provider/model)",
    model_backed=True,
)
"""Registered through the `castbench.agents` entry point (pyproject): `--user tau2?model=...`."""
