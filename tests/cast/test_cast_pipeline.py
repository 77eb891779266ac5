"""The whole CAST pipeline on a CPU, offline, through the commands a user types: a tiny model
built from a config is trained as the critic, served, put in the loop of a collect run, and a
policy trained on what that run produced acts in `castbench eval`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from castbench._base.conversation import ToolCallAction
from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench_cast.manifest import MANIFEST, Manifest, completed
from castbench_cast.pipeline import STAGES, Pipeline, with_temperature
from castbench_cast.recipe import load_recipe
from castbench_cast.serving import CheckpointServer
from tests.support import invoke

TINY = """
lr = 5e-3
max_steps = 3
batch = 2
max_length = 512
max_completion = 128
keep = "conversation"
save_steps = 2
[{table}.tiny]
vocab = 600
context = 1024
"""

LOOP = """
[collect_critic]
domains = "retail"
limit = 2
policy = "scripted:noisy?p=0.5"
samples = 1

[policy_data]
allow_privileged_teacher = true  # scripted:noisy reads the task: a stand-in teacher, on purpose
require_critiques = false  # three steps of training teach the tiny critic no flag
"""


def _tiny(table: str) -> str:
    return f"[{table}]" + TINY.format(table=table)


@pytest.fixture
def recipe(recipe_file: Callable[[str], Path]) -> Path:
    return recipe_file(_tiny("train_critic") + LOOP + _tiny("train_policy"))


def _manifest(recipe: Path, stage: str) -> Manifest:
    return Manifest.model_validate_json((recipe.parent / "out" / stage / MANIFEST).read_text())


@pytest.mark.train
@pytest.mark.slow
def test_pipeline_end_to_end_on_a_cpu(recipe: Path, db_url: str) -> None:
    import datasets

    result = invoke("cast", "run", str(recipe))
    assert result.exit_code == 0, result.output
    manifests = {stage: _manifest(recipe, stage) for stage in STAGES}
    assert manifests["annotate"].inputs == {"collect": manifests["collect"].digest}
    assert manifests["train-critic"].inputs == {"critic-data": manifests["critic-data"].digest}
    balance = manifests["critic-data"].balance["verdict"]
    assert sum(balance.values()) == manifests["critic-data"].counts["examples"] > 0
    # the data loads as a `datasets` dataset of conversations; TRL trained on it
    data = datasets.load_from_disk(str(recipe.parent / "out" / "critic-data" / "dataset"))
    assert len(data) == manifests["critic-data"].counts["examples"]
    assert [m["role"] for m in data[0]["messages"]] == ["system", "user", "assistant"]
    assert manifests["train-critic"].counts["steps"] == 3 and manifests["train-policy"].counts["steps"] == 3
    # the trained critic judged every tool call of the second collect, as a model critic
    pipeline = Pipeline(load_recipe(recipe), log=lambda line: None)
    loop = pipeline.records("collect-critic")
    calls = [p for r in loop for s in r.steps for p in s.proposals if isinstance(p.action, ToolCallAction)]
    assert calls and all(p.verdict is not None for p in calls)
    assert all(r.usage["critic"].calls > 0 for r in loop if r.steps)
    assert manifests["collect-critic"].info["critic"].startswith("openai/cast-train-critic-")
    # the trained policy acts in castbench eval, served like any model
    with CheckpointServer(recipe.parent / "out" / "train-policy" / "model") as server:
        policy = server.model_string(style="prompted", temperature=0, max_tokens=24)
        run = evaluate(
            db=db_url, domains="retail", tasks=["retail-test-0001"], policy=policy, trials=1,
            models_config=server.models_config("policy"),
        )  # fmt: skip
    record = ResultsStore(db_url).trials(run.outcome.run_id)[0]
    assert record.steps and record.usage["policy"].calls >= 1
    # everything is up to date the second time; a changed setting reruns only what follows it
    again = invoke("cast", "run", str(recipe))
    assert again.output.count("up to date") == len(STAGES), again.output
    text = recipe.read_text().replace(
        "[train_policy]\nlr = 5e-3\nmax_steps = 3", "[train_policy]\nlr = 5e-3\nmax_steps = 2"
    )
    recipe.write_text(text)
    changed = invoke("cast", "run", str(recipe))
    assert changed.output.count("up to date") == len(STAGES) - 1 and "train-policy: " in changed.output
    assert _manifest(recipe, "train-policy").counts["steps"] == 2
    # the RFT control: the policy's own successes (the collect run, no critic), in folders of its own
    rft = invoke("cast", "policy-data", str(recipe), "--rft")
    assert rft.exit_code == 0, rft.output
    assert _manifest(recipe, "policy-data-rft").params["rft"] is True
    assert list(_manifest(recipe, "policy-data-rft").inputs) == ["collect"]


def test_a_stage_reruns_when_an_output_changed(pipeline: Pipeline) -> None:
    first = pipeline.collect()
    folder = pipeline.folder("collect")
    assert completed(folder, "collect", first.params, first.inputs) == first
    assert completed(folder, "collect", {**first.params, "samples": 3}, first.inputs) is None
    (folder / "run.json").write_text(json.dumps({"run_id": "tampered"}))
    assert completed(folder, "collect", first.params, first.inputs) is None
    again = pipeline.collect()  # reruns: castbench resumes the stored run, nothing is lost
    assert again.info["run_id"] == first.info["run_id"] and again.outputs == first.outputs


def test_a_stage_before_its_inputs_says_what_to_run(recipe_file: Callable[[str], Path]) -> None:
    result = invoke("cast", "critic-data", str(recipe_file("")))
    assert result.exit_code == 2
    assert "stage collect has not run yet" in result.output and "castbench cast collect" in result.output


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("hosted_vllm/Qwen/Qwen3-8B", "hosted_vllm/Qwen/Qwen3-8B?temperature=0.7"),
        ("openai/x?api_base=http://h/v1", "openai/x?api_base=http://h/v1&temperature=0.7"),
        ("openai/x?temperature=0.2", "openai/x?temperature=0.2"),  # the string's own wins
        ("scripted:noisy?p=0.3", "scripted:noisy?p=0.3"),  # built-ins have their own noise
    ],
)
def test_a_model_teacher_samples_at_the_recipes_temperature(policy: str, expected: str) -> None:
    assert with_temperature(policy, 0.7) == expected
