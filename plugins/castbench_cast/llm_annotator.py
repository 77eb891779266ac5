"""The LLM annotation pipeline in CAST's shape: six model calls per proposed action.

1. rule extractor: the rules of the domain policy that bear on the proposed action;
2. tool extractor: the tools this moment calls for, given the ground truth;
3-5. three checkers, each a yes/no finding with its reason: the domain checker (the rules),
   the tool-call checker (tool and arguments against the candidates), the hallucination checker
   (every argument against what the conversation revealed);
6. the orchestrator: the final `{verdict, failure_type, explanation}` from the three findings.

Unlike a deployed critic, the annotator may see the ground truth (the task's actions): it labels
training data, it is not judged. Calls go through castbench's model client (`castbench._agents.models`:
litellm for hosted providers, the lean client for OpenAI-compatible servers), with its retries.
A checker or orchestrator answer that cannot be read is kept as the annotation's `parse_error`.

`annotate_all` annotates `concurrency` actions at once (an action's six calls depend on each
other, so they stay in order) and appends each finished annotation to a journal: a stage that
stops part-way (a server down past its retries, Ctrl-C) resumes from the journal, paying only for
the actions still to do.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from castbench.agents import (
    ModelClient,
    ModelSettings,
    TrialKey,
    configure_model_agent,
    describe_action,
    find_json_object,
    public_briefing,
    resolve,
    tool_manual,
    transcript,
    verdict_from_text,
)
from castbench.domain import Domain, Task, TrialRecord
from castbench_cast.annotations import Annotation, Key, moment_key
from castbench_cast.trajectories import Moment

__all__ = ["AGENTS", "PROMPTS", "AnnotatorStopped", "LLMAnnotator", "read_journal"]

AGENTS = (
    "rule extractor",
    "tool extractor",
    "domain checker",
    "tool call checker",
    "hallucination checker",
    "orchestrator",
)

PROMPTS: dict[str, str] = {
    "rule extractor": "You extract, from a customer-service policy, the rules that bear on one proposed "
    'agent action. Answer with JSON: {"rules": ["<rule>", ...]}.',
    "tool extractor": "You decide which tools an agent may rightly call at this moment of a conversation, "
    'given the ground-truth actions. Answer with JSON: {"candidate_tools": ["<tool>", ...], '
    '"expected_call": "<the call the ground truth makes next, or null>"}.',
    "domain checker": "You check one proposed agent action against the policy rules given. Answer with "
    'JSON: {"violation": true or false, "explanation": "<why>"}.',
    "tool call checker": "You check whether a proposed agent action uses the right tool with the right "
    'arguments for this moment. Answer with JSON: {"violation": true or false, "explanation": "<why>"}.',
    "hallucination checker": "You check whether every argument of a proposed agent action is supported by "
    "what the conversation revealed (an invented id, an unsupported assumption or a contradiction of a tool "
    'result is a hallucination). Answer with JSON: {"violation": true or false, "explanation": "<why>"}.',
    "orchestrator": "You give the final verdict on a proposed agent action from three checkers' findings. "
    "It is invalid when a checker found a real problem: hallucination, domain_violation or wrong_tool. "
    'Answer with JSON: {"explanation": "<one or two sentences>", "failure_type": "hallucination", '
    '"domain_violation", "wrong_tool" or "none", "verdict": "valid" or "invalid"}.',
}


def _settings(spec: str) -> ModelSettings:
    """The model string's settings, validated and checked like an eval role's."""
    agent = resolve("critic", spec, model_factory=lambda *_, **__: None)
    agent, _ = configure_model_agent(agent)
    return ModelSettings(**agent.params)


class AnnotatorStopped(RuntimeError):
    """Annotation stopped part-way; what was done is in the journal, and a rerun resumes."""


def read_journal(path: Path) -> dict[Key, Annotation]:
    """The annotations a stopped run finished. A last line cut short by the stop is ignored."""
    found: dict[Key, Annotation] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                annotation = Annotation.model_validate_json(line)
            except ValueError:
                continue  # only the line being written when the run stopped can be incomplete
            found[annotation.key] = annotation
    return found


class LLMAnnotator:
    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.settings = _settings(spec)
        self.calls = 0
        self._lock = threading.Lock()

    def _ask(self, client: ModelClient, agent: str, content: str) -> tuple[str, dict[str, Any] | None]:
        messages = [{"role": "system", "content": PROMPTS[agent]}, {"role": "user", "content": content}]
        text = client.complete(messages).text
        with self._lock:
            self.calls += 1
        return text, find_json_object(text)

    def annotate_all(
        self,
        items: Iterable[tuple[Domain, Task, TrialRecord, Moment]],
        journal: Path,
        concurrency: int = 1,
        log: Callable[[str], None] = print,
    ) -> tuple[dict[Key, Annotation], int]:
        """Every item's annotation (in the items' order) and how many came from the journal."""
        items = list(items)
        done = read_journal(journal)
        resumed = len(done)
        if resumed:
            log(f"annotate: resuming, {resumed} of {len(items)} actions already annotated ({journal})")
        todo = [item for item in items if moment_key(item[2], item[3]) not in done]
        failures: list[BaseException] = []
        with journal.open("a") as handle, ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = [pool.submit(self.annotate, *item) for item in todo]
            for future in as_completed(futures):
                try:
                    annotation = future.result()
                except Exception as exc:  # the others still finish and are kept
                    failures.append(exc)
                    continue
                done[annotation.key] = annotation
                handle.write(annotation.model_dump_json() + "\n")
                handle.flush()
        if failures:
            raise AnnotatorStopped(
                f"annotate: {len(failures)} of {len(items)} actions could not be annotated "
                f"({failures[0]}); the {len(done)} done are kept in {journal}: run again to resume"
            ) from failures[0]
        ordered = {}
        for item in items:
            key = moment_key(item[2], item[3])
            ordered[key] = done[key]
        return ordered, resumed

    def annotate(self, domain: Domain, task: Task, record: TrialRecord, moment: Moment) -> Annotation:
        client = ModelClient(self.settings, "annotator", TrialKey(record.seed, record.trial_index))
        action = describe_action(moment.proposal.action)
        conversation = transcript(moment.history) or "(nothing yet)"
        truth = "\n".join(f"- {call.canonical()}" for call in task.actions) or "(no change)"
        _, rules = self._ask(
            client, "rule extractor", f"# Policy\n{domain.policy}\n\n# Proposed action\n{action}"
        )
        briefing = public_briefing(domain, record.seed, record.trial_index)
        tools_manual = tool_manual(briefing.tools, briefing.write_tools)
        _, tools = self._ask(
            client,
            "tool extractor",
            f"# Tools\n{tools_manual}\n\n# Conversation\n{conversation}\n\n# Ground truth\n{truth}",
        )
        context = f"# Conversation\n{conversation}\n\n# Proposed action\n{action}"
        findings = {
            "domain checker": self._ask(
                client, "domain checker", f"# Rules\n{_listed(rules, 'rules')}\n\n{context}"
            ),
            "tool call checker": self._ask(
                client,
                "tool call checker",
                f"# Candidate tools\n{json.dumps(tools or {})}\n\n# Ground truth\n{truth}\n\n{context}",
            ),
            "hallucination checker": self._ask(client, "hallucination checker", context),
        }
        report = "\n".join(
            f"- {name}: {json.dumps(found) if found is not None else 'unreadable: ' + text[:300]}"
            for name, (text, found) in findings.items()
        )
        final, _ = self._ask(client, "orchestrator", f"{context}\n\n# Findings\n{report}")
        verdict = verdict_from_text(final)
        return Annotation.of(
            record,
            moment,
            verdict=verdict.verdict,
            failure_type=verdict.failure_type,
            explanation=verdict.explanation,
            annotator=f"llm:{self.settings.model}",
            parse_error=verdict.parse_error,
        )


def _listed(found: dict[str, Any] | None, field: str) -> str:
    items = (found or {}).get(field)
    if not isinstance(items, list) or not items:
        return "(none extracted)"
    return "\n".join(f"- {item}" for item in items)
