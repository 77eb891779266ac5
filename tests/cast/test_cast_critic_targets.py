"""What a critic is trained to write and how it is scored in training: structured rationales from
the labeler's findings, the verdict first, both verdicts equally many, and a loss with a verdict
term (issue #45)."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from castbench._base.conversation import ToolCallAction
from castbench._records.trial import ActionLabel
from castbench_cast.annotations import annotated_moments, finding, labeler_annotation
from castbench_cast.examples import balanced, critic_examples
from castbench_cast.pipeline import Pipeline


def _annotated(pipeline: Pipeline) -> tuple[list, dict]:  # type: ignore[type-arg]
    pipeline.collect()
    records = pipeline.records("collect")
    annotations = {a.key: a for a in (labeler_annotation(r, m) for r, m in annotated_moments(records))}
    return records, annotations


def test_rationales_are_the_labelers_findings_with_their_particulars() -> None:
    call = ToolCallAction(name="get_order_details", arguments={"order_id": "#W1"})
    cases = {
        "the user has not been authenticated yet": ("authentication", "get_order_details before the user"),
        "Error: invalid arguments for get_order_details: missing argument 'order_id'; missing argument 'x'": (
            "missing arguments",
            "get_order_details lacks order_id, x",
        ),
        "uses '#W9', which nothing in the trial revealed yet": ("unrevealed value", "uses '#W9'"),
        "modify_pending_order_items needs a pending order, but it is delivered": (
            "record status",
            "needs a pending record; it is delivered",
        ),
        "no explicit confirmation from the user for this change": ("confirmation", "explicit yes"),
        "in the ground truth": ("needed now", "get_order_details(order_id) is what the request needs now"),
        "something new": ("other", "get_order_details: something new"),
    }
    for reason, (check, detail) in cases.items():
        found = finding(ActionLabel(label="invalid", failure_type="hallucination", reason=reason), call)
        assert found[0] == check and detail in found[1], (reason, found)


def test_the_critic_target_puts_the_verdict_first_then_the_structured_rationale(pipeline: Pipeline) -> None:
    records, annotations = _annotated(pipeline)
    examples = critic_examples(records, annotations)
    targets = [json.loads(row[-1]["content"]) for row in examples.rows]
    assert targets and all(list(t) == ["verdict", "failure_type", "check", "explanation"] for t in targets)
    assert {t["check"] for t in targets if t["verdict"] == "invalid"} <= {
        "authentication",
        "missing arguments",
        "unrevealed value",
        "confirmation",
        "record status",
        "argument format",
        "unknown tool",
        "wrong arguments",
        "no change warranted",
        "different tool",
        "other",
    }
    short = critic_examples(records, annotations, target="verdict")
    assert all(list(json.loads(r[-1]["content"])) == ["verdict", "failure_type"] for r in short.rows)


def test_balanced_data_has_as_many_of_each_verdict_and_is_seeded(pipeline: Pipeline) -> None:
    records, annotations = _annotated(pipeline)
    examples = critic_examples(records, annotations)
    before = examples.balance["verdict"]
    assert before["valid"] != before["invalid"]  # the noisy teacher's calls are not balanced
    even = balanced(examples, seed=0)
    verdicts = Counter(json.loads(row[-1]["content"])["verdict"] for row in even.rows)
    assert verdicts["valid"] == verdicts["invalid"] == max(before.values())
    assert even.balance["verdict"] == verdicts
    assert even.counts["repeated_for_balance"] == abs(before["valid"] - before["invalid"])
    assert even.rows == balanced(examples, seed=0).rows and even.rows != balanced(examples, seed=1).rows
    assert all(row in examples.rows for row in even.rows)  # repeated, never invented


def test_the_loss_has_a_verdict_term_on_the_verdict_word_alone() -> None:
    torch = pytest.importorskip("torch")
    from castbench_cast.tiny import tiny_tokenizer
    from castbench_cast.train import _verdict_spans, verdict_loss

    texts = [
        '{"verdict": "invalid", "failure_type": "wrong_tool"}',
        '{"verdict": "valid", "failure_type": "none"}',
    ]
    tokenizer = tiny_tokenizer(texts * 20 + ["prompt words here"] * 5, 300)
    rows = [tokenizer.encode("prompt words here") + tokenizer.encode(text) for text in texts]
    width = max(map(len, rows))
    prompt = len(tokenizer.encode("prompt words here"))
    labels = torch.full((2, width), -100)
    for index, row in enumerate(rows):
        labels[index, prompt : len(row)] = torch.tensor(row[prompt:])
    words = [tokenizer.encode(word, add_special_tokens=False) for word in ("invalid", "valid")]
    spans = _verdict_spans(labels, words)
    decoded = [tokenizer.decode(rows[row][start:end]) for row, start, end in spans]
    assert decoded == ["invalid", "valid"]  # the verdict word, not "valid" inside "invalid"

    class Outputs:
        logits = torch.randn(2, width, len(tokenizer), generator=torch.Generator().manual_seed(0))

    plain = verdict_loss(tokenizer, 0.0, 1)(Outputs(), labels)
    weighted = verdict_loss(tokenizer, 2.0, 1)(Outputs(), labels)
    shifted = labels[:, 1:]
    logits = Outputs.logits[:, :-1]
    per_token = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), shifted.reshape(-1), ignore_index=-100, reduction="none"
    ).view(shifted.shape)
    verdict = sum(per_token[row, start:end].mean() for row, start, end in _verdict_spans(shifted, words)) / 2
    assert torch.isclose(weighted - plain, 2.0 * verdict)


@pytest.mark.train
def test_a_critic_trains_with_the_verdict_term(recipe_file) -> None:  # type: ignore[no-untyped-def]
    from castbench_cast.recipe import load_recipe

    extra = """
[train_critic]
model = "tiny"
max_steps = 2
batch = 2
max_length = 384
max_completion = 128
keep = "conversation"
verdict_weight = 2.0
device = "cpu"
[train_critic.tiny]
hidden = 16
layers = 1
heads = 2
vocab = 400
context = 512
"""
    pipeline = Pipeline(load_recipe(recipe_file(extra)), log=lambda line: None)
    pipeline.run(until="train-critic")
    info = pipeline.manifest("train-critic").info
    assert info["steps"] == 2 and info["train_loss"] > 0
    assert (pipeline.folder("train-critic") / "model" / "config.json").exists()


def test_the_papers_order_puts_the_rationale_before_the_verdict(pipeline: Pipeline) -> None:
    records, annotations = _annotated(pipeline)
    first = critic_examples(records, annotations, target="rationale-first")
    verdict_first = critic_examples(records, annotations, target="annotation")
    targets = [json.loads(row[-1]["content"]) for row in first.rows]
    assert targets and all(list(t) == ["check", "explanation", "verdict", "failure_type"] for t in targets)
    # the same answers, only their order differs; the inputs are the same messages
    assert targets == [json.loads(row[-1]["content"]) for row in verdict_first.rows]
    assert [row[:-1] for row in first.rows] == [row[:-1] for row in verdict_first.rows]
    with pytest.raises(ValueError, match="critic target 'reasons'"):
        critic_examples(records, annotations, target="reasons")


def test_a_rationale_states_what_is_wrong_without_the_labels_word() -> None:
    call = ToolCallAction(name="modify_user_address", arguments={"user_id": 3})
    for reason in ("Error: invalid arguments for modify_user_address: user_id: not a string", "a VALID id"):
        label = ActionLabel(label="invalid", failure_type="hallucination", reason=reason)
        _, detail = finding(label, call)
        assert not re.search(r"\b(in)?valid\b", detail, re.IGNORECASE), detail
    assert (
        "malformed arguments"
        in finding(
            ActionLabel(label="invalid", failure_type="hallucination", reason="invalid arguments for x"), call
        )[1]
    )


def test_the_verdict_term_finds_the_verdict_after_a_rationale_that_says_invalid() -> None:
    torch = pytest.importorskip("torch")
    from castbench_cast.tiny import tiny_tokenizer
    from castbench_cast.train import _verdict_spans

    text = '{"check": "argument format", "explanation": "invalid arguments", "verdict": "valid"}'
    tokenizer = tiny_tokenizer([text] * 20 + ['"invalid"'] * 5, 300)
    ids = tokenizer.encode(text)
    labels = torch.tensor([ids])
    words = [tokenizer.encode(word, add_special_tokens=False) for word in ("invalid", "valid")]
    key = tokenizer.encode("verdict", add_special_tokens=False)
    [(_, start, end)] = _verdict_spans(labels, words, key)
    assert tokenizer.decode(ids[start:end]) == "valid" and start > len(ids) // 2
    [(_, start, end)] = _verdict_spans(labels, words)  # without the key: the rationale's word
    assert tokenizer.decode(ids[start:end]) == "invalid"
