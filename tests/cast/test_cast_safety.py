"""No silent failure in the CAST stages (issue #25), each pinned by a test that failed before:
`[collect_critic]` inherits `[collect]`; `--force` retrains from scratch; policy targets hold no
action the labeler marks invalid; a privileged teacher and critique-free CAST data are refused
unless the recipe opts in; unreadable critic verdicts are counted in the collect manifests; one
context rule fits prompts for training and serving, keeping the policy document."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from castbench._agents.models.prompts import critic_messages, critic_system_prompt
from castbench._agents.models.render import describe_action
from castbench._agents.views import public_briefing
from castbench._base.conversation import ToolCallAction, UserTurn
from castbench.domain import load_domain
from castbench_cast import serving
from castbench_cast.context import ContextRule, fit_messages, token_counter
from castbench_cast.examples import policy_examples
from castbench_cast.pipeline import Pipeline, StageError
from castbench_cast.recipe import TinyModel, load_recipe
from castbench_cast.tiny import tiny_model, tiny_tokenizer


def test_collect_critic_inherits_collect(recipe_file: Callable[[str], Path]) -> None:
    recipe = load_recipe(recipe_file("[collect_critic]\nsamples = 1\n"))
    assert recipe.collect_critic.policy == "scripted:noisy?p=0.5" == recipe.collect.policy
    assert recipe.collect_critic.limit == 3 and recipe.collect_critic.samples == 1


def test_policy_targets_hold_no_invalid_action(pipeline: Pipeline) -> None:
    pipeline.collect()
    records = pipeline.records("collect")
    invalid = {
        (r.task_id, r.trial_index, s.index)
        for r in records
        if r.passed
        for s in r.steps
        if s.action is not None and s.proposals[-1].label and s.proposals[-1].label.label == "invalid"
    }
    assert invalid, "the fixture should hold a passed trial with an invalid executed action"
    examples = policy_examples(records, rft=True)
    assert examples.counts["dropped_invalid_targets"] == len(invalid)
    executed = sum(
        1
        for r in records
        if r.passed
        for s in r.steps
        if s.action is not None and not type(s.action).__name__.startswith("Malformed")
    )
    assert len(examples.rows) == executed - len(invalid)


def test_a_privileged_teacher_is_refused_for_policy_data(recipe_file: Callable[[str], Path]) -> None:
    source = '[policy_data]\nsource = "collect"\nrft = true\n'
    pipeline = Pipeline(load_recipe(recipe_file(source)), log=lambda line: None)
    pipeline.collect()
    with pytest.raises(StageError, match="privileged"):
        pipeline.policy_data()
    allowed = Pipeline(
        load_recipe(recipe_file(source + "allow_privileged_teacher = true\n")), log=lambda line: None
    )
    assert allowed.policy_data().counts["examples"] > 0


def test_cast_data_without_critiques_is_refused(recipe_file: Callable[[str], Path]) -> None:
    source = '[policy_data]\nsource = "collect"\nallow_privileged_teacher = true\n'
    pipeline = Pipeline(load_recipe(recipe_file(source)), log=lambda line: None)
    pipeline.collect()  # no critic in the loop: no critique anywhere
    with pytest.raises(StageError, match="holds a critique, so there is no CAST data"):
        pipeline.policy_data()
    logged: list[str] = []
    lenient = Pipeline(load_recipe(recipe_file(source + "require_critiques = false\n")), log=logged.append)
    kept = lenient.policy_data()
    assert any(line.startswith("warning:") and "no CAST data" in line for line in logged)
    assert kept.counts["kept_without_critiques"] == kept.counts["trajectories"] > 0  # said, and counted


class _Garbage:
    """A served critic that never answers with a readable verdict."""

    def complete(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        message = {"role": "assistant", "content": "the the the"}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        usage = {"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": 4}
        return 200, {"id": "x", "object": "chat.completion", "choices": [choice], "usage": usage}


def test_unreadable_verdicts_are_counted_in_the_manifest(pipeline: Pipeline) -> None:
    import threading
    from http.server import ThreadingHTTPServer

    http = ThreadingHTTPServer(("127.0.0.1", 0), serving._handler(_Garbage(), "garbage"))  # type: ignore[arg-type]
    threading.Thread(target=http.serve_forever, daemon=True).start()
    critic = f"openai/garbage?api_base=http://127.0.0.1:{http.server_address[1]}/v1&max_tokens=8"
    logged: list[str] = []
    pipeline.log = logged.append
    try:
        folder = pipeline.folder("collect")
        folder.mkdir(parents=True)
        built = pipeline._run(folder, pipeline.recipe.collect.model_copy(update={"samples": 1}), critic, 1)
    finally:
        http.shutdown()
        http.server_close()
    assert built.counts["critic_verdicts"] > 0
    assert built.counts["critic_parse_errors"] == built.counts["critic_verdicts"]
    assert built.info["unparseable_verdict"] == "pass"
    assert any("unreadable and counted as passes" in line for line in logged)


def test_force_retrains_from_scratch(recipe_file: Callable[[str], Path]) -> None:
    tiny = (
        "[train_critic]\nlr = 5e-3\nmax_steps = 1\nbatch = 2\nmax_length = 512\nmax_completion = 128\n"
        'keep = "conversation"\n[train_critic.tiny]\nvocab = 400\ncontext = 512\n'
    )
    pipeline = Pipeline(load_recipe(recipe_file(tiny)), force=True, log=lambda line: None)
    pipeline.collect()
    pipeline.annotate()
    pipeline.critic_data()
    first = pipeline.train_critic()
    # a left-over checkpoint of the same key: resuming from it fails (it holds no state)
    key_folder = next((pipeline.folder("train-critic") / "checkpoints").iterdir())
    (key_folder / "checkpoint-7").mkdir()
    again = pipeline.train_critic()
    assert again.counts["steps"] == first.counts["steps"] == 1
    assert not (key_folder / "checkpoint-7").exists()


_PROPOSAL = ToolCallAction(name="get_order_details", arguments={"order_id": "#W1"})


def _critic_prompt(turns: int) -> list[dict[str, Any]]:
    domain = load_domain("retail")
    system = critic_system_prompt(public_briefing(domain, 0, 0))
    history = tuple(UserTurn(text=f"message number {i} about order #W{i:04d}") for i in range(turns))
    return critic_messages(system, history, _PROPOSAL)


def _tokenizer() -> Any:
    prompt = _critic_prompt(40)
    return tiny_tokenizer([m["content"] for m in prompt], 400)


def test_the_context_rule_keeps_the_policy_and_the_proposal() -> None:
    tokenizer = _tokenizer()
    count = token_counter(tokenizer)
    prompt = _critic_prompt(40)
    system_only = count([prompt[0], {"role": "user", "content": "x"}])
    fitted = fit_messages(prompt, count, system_only + 120, "policy")
    assert fitted.fits and fitted.tokens <= system_only + 120 and fitted.dropped_lines > 0
    assert fitted.messages[0] == prompt[0]  # the policy document, whole
    question = fitted.messages[1]["content"]
    assert question.endswith("# Proposed action\n" + describe_action(_PROPOSAL))
    assert "message number 39" in question and "message number 0 " not in question
    assert f"({fitted.dropped_lines} earlier line(s) left out" in question
    # the policy document alone is over the budget: it does not fit (never cut silently)
    assert not fit_messages(prompt, count, 100, "policy").fits
    # the stand-in's rule: the system message goes first
    small = fit_messages(prompt, count, 200, "conversation")
    assert small.fits and small.dropped_policy and small.messages[0]["role"] == "user"


def test_serving_fits_prompts_as_training_did(tmp_path: Path) -> None:
    tokenizer = _tokenizer()
    model = tiny_model(tokenizer, TinyModel(hidden=16, layers=1, heads=2, vocab=400, context=2048), 0)
    folder = tmp_path / "train-critic" / "model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    rule = ContextRule(max_length=384, max_completion=64, keep="conversation")
    rule.save(folder)
    generator = serving._Generator(folder)
    status, answer = generator.complete({"messages": _critic_prompt(40), "max_tokens": 4})
    assert status == 200 and answer["usage"]["prompt_tokens"] <= rule.prompt_budget
    assert generator.truncated == 1
    (folder / "context.json").unlink()
    refused = serving._Generator(folder)
    refused.rule = ContextRule(max_length=384, max_completion=64, keep="policy")
    status, answer = refused.complete({"messages": _critic_prompt(40), "max_tokens": 4})
    assert status == 412 and "does not fit" in answer["error"]["message"]  # infrastructure, not the agent's
