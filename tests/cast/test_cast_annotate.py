"""Annotation: the labeler's, the LLM pipeline's (against a loopback OpenAI-compatible server),
and how far they agree."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from castbench.domain import load_domain
from castbench_cast.annotations import Annotation, agreement, read_annotations
from castbench_cast.llm_annotator import AGENTS, PROMPTS, read_journal
from castbench_cast.pipeline import Pipeline, StageError
from castbench_cast.recipe import load_recipe
from tests.models.fault_server import FaultPlan, FaultServer

_CALL = re.compile(r"# Proposed action\ncall (\w+)\(")


class AnnotatorModel:
    """Answers each of the six agents in shape. The tool call checker finds a violation when the
    proposed tool is not one the ground truth (given in its prompt) uses; the orchestrator turns
    any violation into a `wrong_tool` verdict."""

    def __init__(self) -> None:
        self.agents: Counter[str] = Counter()
        self.prompts: dict[str, list[str]] = {}

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        system, user = (message["content"] for message in body["messages"])
        agent = next(name for name, prompt in PROMPTS.items() if prompt == system)
        self.agents[agent] += 1
        self.prompts.setdefault(agent, []).append(user)
        tool = _CALL.search(user)
        if agent == "rule extractor":
            answer: dict[str, Any] = {"rules": ["Authenticate the user first."]}
        elif agent == "tool extractor":
            answer = {"candidate_tools": re.findall(r"^- (\w+)\(", user, re.M), "expected_call": None}
        elif agent == "tool call checker":
            gold = set(re.findall(r"^- (\w+)\(", user.split("# Ground truth\n")[1], re.M))
            answer = {"violation": bool(tool and tool.group(1) not in gold), "explanation": "tool vs truth"}
        elif agent == "orchestrator":
            flagged = '"violation": true' in user
            answer = {
                "explanation": "a checker found a problem" if flagged else "fine",
                "failure_type": "wrong_tool" if flagged else "none",
                "verdict": "invalid" if flagged else "valid",
            }
        else:
            answer = {"violation": False, "explanation": "nothing found"}
        return {"content": json.dumps(answer)}


@pytest.fixture
def model_server() -> Any:
    model = AnnotatorModel()
    with FaultServer(model, FaultPlan()) as server:
        yield model, server


@pytest.mark.parametrize(
    "provider",
    [
        "openai",  # castbench's lean client for OpenAI-compatible servers
        "litellm_proxy",  # through litellm itself (it wants a key: any value)
    ],
)
def test_llm_pipeline_annotates_every_tool_call_and_reports_agreement(
    provider: str,
    model_server: tuple[AnnotatorModel, FaultServer],
    recipe_file: Callable[[str], Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, server = model_server
    monkeypatch.setenv("CAST_TEST_KEY", "any")
    spec = f"{provider}/annotator?api_base={server.base_url}&temperature=0&api_key_env=CAST_TEST_KEY"
    recipe = load_recipe(recipe_file(f'[annotate]\nllm = "{spec}"\n'))
    said: list[str] = []
    pipeline = Pipeline(recipe, log=said.append)
    pipeline.collect()
    manifest = pipeline.annotate()
    folder = pipeline.folder("annotate")
    labeler = read_annotations(folder / "annotations-labeler.jsonl")
    llm = read_annotations(folder / "annotations-llm.jsonl")
    assert set(llm) == set(labeler) and len(llm) == manifest.counts["actions"] > 0
    assert dict(model.agents) == {agent: len(llm) for agent in AGENTS}  # six calls per action
    assert manifest.counts["llm_calls"] == 6 * len(llm)
    # the annotator may see the ground truth: the tool extractor got the gold calls
    tasks = {t.id: t for t in load_domain("retail").tasks("train")}
    gold = {task_id: {c.name for c in tasks[task_id].actions} for (_, task_id, *_) in llm}
    for key, annotation in llm.items():
        proposed = _proposed_tool(pipeline, key)
        wrong = proposed not in gold[key[1]]
        assert (annotation.verdict, annotation.failure_type) == (
            ("invalid", "wrong_tool") if wrong else ("valid", "none")
        )
    assert any(
        tasks[key[1]].actions[0].canonical() in prompt
        for key in llm
        for prompt in model.prompts["tool extractor"]
    )
    agreed = json.loads((folder / "agreement.json").read_text())
    same = sum(labeler[key].verdict == llm[key].verdict for key in llm)
    assert agreed["actions"] == len(llm) and agreed["verdict_agreement"] == pytest.approx(same / len(llm))
    assert manifest.info["agreement"] == agreed
    assert f"labeler vs LLM on {len(llm)} actions: verdicts agree {same / len(llm):.1%}" in "\n".join(said)
    # the critic data is built from the labeler unless the recipe says `use = "llm"`
    assert read_annotations(folder / "annotations.jsonl") == labeler


def _proposed_tool(pipeline: Pipeline, key: tuple[str, str, int, int, int]) -> str:
    _, task_id, trial, step, round_ = key
    record = next(r for r in pipeline.records("collect") if (r.task_id, r.trial_index) == (task_id, trial))
    return record.steps[step].proposals[round_].action.name  # type: ignore[union-attr]


def _annotation(verdict: str, failure: str = "none", n: int = 0) -> Annotation:
    return Annotation(
        domain="d",
        task_id="t",
        trial_index=0,
        step=n,
        round=0,
        verdict=verdict,  # type: ignore[arg-type]
        failure_type=failure,
        explanation="",
        annotator="x",  # type: ignore[arg-type]
    )


def test_agreement_counts_verdicts_kappa_and_failure_types() -> None:
    pairs = [("valid", "valid"), ("valid", "valid"), ("invalid", "invalid"), ("invalid", "valid")]
    first = {
        a.key: a
        for a in (
            _annotation(v, "none" if v == "valid" else "hallucination", n) for n, (v, _) in enumerate(pairs)
        )
    }
    second = {
        a.key: a
        for a in (
            _annotation(v, "none" if v == "valid" else "wrong_tool", n) for n, (_, v) in enumerate(pairs)
        )
    }
    found = agreement(first, second)
    # observed 3/4; shares valid 1/2 and 3/4: chance 1/2*3/4 + 1/2*1/4 = 1/2; kappa (3/4-1/2)/(1/2)
    assert (found.actions, found.verdict_agreement, found.cohen_kappa) == (4, 0.75, 0.5)
    assert found.failure_type_agreement == 0.0
    assert found.confusion == {"invalid/invalid": 1, "invalid/valid": 1, "valid/valid": 2}


class OutageServer(FaultServer):
    """Answers 500 to every request while `down` is set: a server gone past the client's retries."""

    down = False

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]]:
        if self.down:
            return 500, {}, {"error": {"message": "down (test)", "type": "server_error"}}
        return super().answer(body)


def test_llm_annotation_runs_actions_at_once_and_resumes_after_an_outage(
    recipe_file: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = AnnotatorModel()
    together = threading.Barrier(2, timeout=30)  # passes only with two actions in flight at once
    server = OutageServer(lambda body: model(body), FaultPlan())

    lock, outage = threading.Lock(), threading.Event()

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        with lock:
            answer = model(body)
            starting = (
                model.agents["rule extractor"]
                if body["messages"][0]["content"] == PROMPTS["rule extractor"]
                else 0
            )
            if model.agents["orchestrator"] == 3 and not outage.is_set():
                outage.set()  # three actions annotated, then the server goes away (once)
                server.down = True
        if starting in (1, 2):
            together.wait()
        return answer

    server.responder = respond
    monkeypatch.setenv("CAST_TEST_KEY", "any")
    spec = f"openai/annotator?api_base={server.base_url}&max_attempts=1&api_key_env=CAST_TEST_KEY"
    recipe = load_recipe(recipe_file(f'[annotate]\nllm = "{spec}"\nconcurrency = 2\n'))
    with server:
        Pipeline(recipe, log=lambda line: None).collect()
        with pytest.raises(StageError, match="run again to resume"):
            Pipeline(recipe, log=lambda line: None).annotate()
        journal = next(recipe.stage_dir("annotate").glob("annotations-llm.journal-*.jsonl"))
        kept = read_journal(journal)
        assert len(kept) >= 3 and together.broken is False
        server.down, calls_before = False, server.requests
        said: list[str] = []
        manifest = Pipeline(recipe, log=said.append).annotate()
    actions = manifest.counts["actions"]
    assert manifest.counts["llm_resumed"] == len(kept) < actions
    assert manifest.counts["llm_calls"] == server.requests - calls_before == 6 * (actions - len(kept))
    assert f"resuming, {len(kept)} of {actions} actions already annotated" in "\n".join(said)
    llm = read_annotations(recipe.stage_dir("annotate") / "annotations-llm.jsonl")
    assert len(llm) == actions and all(llm[key] == annotation for key, annotation in kept.items())
    assert not journal.exists()


class EchoingModel(AnnotatorModel):
    """The worst annotator for leakage: the tool call checker copies the ground truth it was
    given into its finding, and the orchestrator copies the findings into its explanation."""

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        answer = super().__call__(body)
        system, user = (message["content"] for message in body["messages"])
        found = json.loads(answer["content"])
        if system == PROMPTS["tool call checker"]:
            found["explanation"] = "GT-ECHO " + user.split("# Ground truth\n")[1].split("\n\n")[0]
        elif system == PROMPTS["orchestrator"]:
            found["explanation"] = "echo: " + user.split("# Findings\n")[1]
        return {"content": json.dumps(found)}


def test_the_ground_truth_reaches_two_labelling_roles_and_never_the_critics_input(
    recipe_file: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #57: the annotator may see the ground truth, as CAST's does, in 2 of its 6 roles
    (the tool extractor and the tool call checker); what they find reaches the orchestrator and
    so the annotation (the critic's target), never the critic's input, which is built from the
    public briefing and the visible events alone."""
    model = EchoingModel()
    monkeypatch.setenv("CAST_TEST_KEY", "any")
    with FaultServer(model, FaultPlan()) as server:
        spec = f"openai/annotator?api_base={server.base_url}&api_key_env=CAST_TEST_KEY"
        extra = f'[annotate]\nuse = "llm"\nllm = "{spec}"\n[critic_data]\ntarget = "rationale-first"\n'
        pipeline = Pipeline(load_recipe(recipe_file(extra)), log=lambda line: None)
        pipeline.collect()
        pipeline.annotate()
        pipeline.critic_data()
    seeing = {
        agent for agent, prompts in model.prompts.items() if any("# Ground truth" in p for p in prompts)
    }
    assert seeing == {"tool extractor", "tool call checker"}
    rows = [json.loads(line)["messages"] for line in (pipeline.folder("critic-data") / "train.jsonl").open()]
    assert rows
    echoed = [row for row in rows if "GT-ECHO" in row[-1]["content"]]
    assert echoed  # the ground truth did reach targets, through the orchestrator
    tasks = {t.id: t for t in load_domain("retail").tasks("train")}
    gold = {call.name for task in tasks.values() for call in task.actions}
    named = {found for row in echoed for found in re.findall(r"GT-ECHO - (\w+)\(", row[-1]["content"])}
    assert named and named <= gold  # the gold calls themselves, as the annotator was given them
    for row in rows:
        for message in row[:-1]:
            assert "GT-ECHO" not in message["content"] and "# Ground truth" not in message["content"]
