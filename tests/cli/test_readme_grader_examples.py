"""The README's "How the grader decides" shows one honest verbose reply that passes and one spray
that fails, each with its reason (issue 43); both are what the grader does on retail-test-0008
(return an undelivered order), not illustrations: the honest reply, sent after the look-ups that
show the records it names, scores 1.0 plain and strict, and `scripted:lookup-spray` on the same
task writes what the README quotes (its `...` elisions aside) and fails for the reasons it names.
docs/grading.md keeps the same two examples, so both pages are read."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

import castbench
from castbench._base.conversation import ReplyAction, ToolCallAction
from castbench._records.store import ResultsStore
from castbench._run.environment import Environment

ROOT = Path(__file__).resolve().parents[2]
TASK = "retail-test-0008"
LOOKUPS = [
    ("find_user_id_by_email", {"email": "yara.nakamura79@example.com"}),
    ("get_user_details", {"user_id": "yara_nakamura_3797"}),
    ("get_order_details", {"order_id": "#W9946364"}),
    ("get_order_details", {"order_id": "#W2089998"}),
]


def _examples(page: str) -> tuple[str, str, str]:
    """The honest reply, the spray's excerpt and the spray's stated reasons, as `page` shows them."""
    text = (ROOT / page).read_text()
    honest_at = text.index("that **passes**:")
    spray_at = text.index("which **fails**", honest_at)
    blocks = re.findall(r"((?:^ {4}.*\n|^\n)+)", text[honest_at:], re.MULTILINE)
    quoted = [textwrap.dedent(block).strip() for block in blocks if block.strip()]
    assert len(quoted) >= 2, f"{page} lost the indented honest reply or the spray after 'that **passes**:'"
    honest, spray = quoted[:2]
    reasons = text[spray_at : text.index("):\n", spray_at)]
    return honest, spray, reasons


@pytest.mark.parametrize("page", ["README.md", "docs/grading.md"])
def test_the_honest_reply_passes_plain_and_strict(page: str) -> None:
    honest, _, _ = _examples(page)
    assert honest.startswith("I'm sorry, but I can't process that return"), honest
    env = Environment()
    env.reset("retail", TASK)
    for name, arguments in LOOKUPS:
        assert not env.step(ToolCallAction(name=name, arguments=arguments)).done
    result = env.step(ReplyAction(text=honest))
    while not result.done:  # the scripted user acknowledges; the agent closes
        result = env.step(ReplyAction(text="You're welcome. Goodbye."))
    grade = result.record.grade
    assert grade is not None and grade.unearned == [] and grade.reward == 1.0 and grade.strict_reward == 1.0


@pytest.fixture(scope="module")
def spray(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    db = str(tmp_path_factory.mktemp("spray") / "runs.db")
    castbench.evaluate(domains="retail", tasks=TASK, policy="scripted:lookup-spray", trials=1, db=db)
    store = ResultsStore(db)
    (record,) = store.trials(store.run("latest").id)
    assert record.grade is not None and record.reward == 0.0
    replies = " ".join(step.action.text for step in record.steps if step.action.kind == "reply")
    return " ".join(replies.split()), record.grade.unearned


@pytest.mark.parametrize("page", ["README.md", "docs/grading.md"])
def test_the_spray_fails_as_quoted_for_the_reasons_named(page: str, spray: tuple[str, list[str]]) -> None:
    _, excerpt, reasons = _examples(page)
    replies, unearned = spray
    at = 0
    for piece in (piece.strip(" ,;\n") for piece in " ".join(excerpt.split()).split("...")):
        if piece:
            found = replies.find(piece, at)
            assert found >= 0, f"{page} quotes the spray as writing {piece!r}, in this order; it does not"
            at = found + len(piece)
    named = re.findall(r"'([^']+)'", reasons)
    assert named, f"{page} names no reason for the spray's failure"
    for value in named:
        assert f"false claim stated: '{value}'" in unearned, (value, unearned)
