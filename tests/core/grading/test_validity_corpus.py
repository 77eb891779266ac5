"""The blind honest corpus and sprays of `bench/validity_corpus.py` (issue #55) are what they claim:
the honest styles make exactly the oracle's writes and talk as advertised (ordinal dates, payment
methods by kind and digits, "none", enums in words, an acknowledgement between the yes and the
write, records by description); the unconfirmed writer never asks; the condition spray stays at
the floor. What castbench's strict grading makes of the honest styles is measured by
`bench/validity.py`, not asserted here: that is the labeler's test, not the corpus's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from castbench._agents.registry import resolve
from castbench._base.conversation import AgentTurn, ReplyAction, ToolCallAction, UserTurn
from castbench._trial.episode import AgentSet, Episode
from castbench._trial.seeds import trial_seed
from castbench._trial.spec import TrialSpec
from castbench.domain import load_domain

BENCH = Path(__file__).resolve().parents[3] / "bench"
LIMIT = 12


def _load(name: str) -> ModuleType:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _corpus() -> ModuleType:
    _load("honest_styles")
    return _load("validity_corpus")


def _play(domain_name: str, task_id: str, agent: str) -> Episode:
    domain = load_domain(domain_name)
    task = domain.task(task_id)
    agents = AgentSet(policy=_corpus().corpus_spec(agent), user=resolve("user", "scripted"))
    episode = Episode(
        TrialSpec(domain, task, 0, trial_seed(0, domain.name, task.id, 0), agents, domain.replay(task))
    )
    try:
        episode.play()
    finally:
        episode.close()
    return episode


def _said(episode: Episode) -> list[str]:
    return [
        e.action.text
        for e in episode.conversation
        if isinstance(e, AgentTurn) and isinstance(e.action, ReplyAction)
    ]


def test_values_as_models_say_them() -> None:
    corpus = _corpus()
    assert corpus.spoken_date("2024-05-22") == "May 22nd"
    assert [corpus.ordinal(d) for d in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd"
    ]  # fmt: skip
    seen = [
        corpus.Seen("credit_card_1", "id", {"id": "credit_card_1", "source": "credit_card", "brand": "visa",
                                            "last_four": "6645"}, None),
        corpus.Seen("certificate_2", "id", {"id": "certificate_2", "source": "certificate", "amount": 250},
                    None),
    ]  # fmt: skip
    talker = corpus.Talker(seen, corpus.Voice())
    assert talker.value("payment_id", "credit_card_1") == "your Visa ending in 6645"
    assert talker.value("payment_id", "certificate_2") == "your $250 travel certificate"
    assert talker.value("nonfree_baggages", 0) == "none"
    assert talker.value("flight_type", "one_way") == "one-way"
    assert talker.value("cabin", "basic_economy") == "Basic Economy"
    assert talker.value("amount", 1234.5) == "$1,234.50"
    assert talker.compound({"flight_number": "HAT110", "date": "2024-05-24"}) == "flight HAT110 on May 24th"


@pytest.mark.parametrize("domain", ["retail", "airline", "telecom", "telehealth"])
def test_honest_styles_make_exactly_the_oracles_writes(domain: str) -> None:
    """Whatever the talk, the final state is the expected one on every task the oracle passes
    (the writes are the oracle's; the declined ones are declined)."""
    corpus = _corpus()
    for task in load_domain(domain).tasks("test")[:LIMIT]:
        oracle = _play(domain, task.id, "markdown-summary")  # any honest style: compared below
        for name in corpus.HONEST:
            record = _play(domain, task.id, name).record() if name != "markdown-summary" else oracle.record()
            assert record.grade is not None and record.grade.state_ok, (name, task.id, record.grade.diff[:2])


def test_a_bulleted_confirmation_in_a_models_words() -> None:
    episode = _play("airline", "airline-test-0008", "markdown-summary")  # book a one-way flight
    confirmation = next(text for text in _said(episode) if "**" in text)
    assert "- **Trip type:** one-way" in confirmation
    assert "- **Cabin:** Basic Economy" in confirmation
    assert "May 22nd" in confirmation and "2026-05-22" not in confirmation
    assert "- **Checked bags:** none" in confirmation
    assert "ending in" in confirmation and "credit_card_" not in confirmation
    assert "oskar_jensen_6012" not in confirmation  # the customer's own id is not what changes
    assert confirmation.rstrip().endswith("?")


def test_an_acknowledgement_between_the_yes_and_the_write() -> None:
    corpus = _corpus()
    episode = _play("retail", "retail-test-0002", "acknowledge-first")
    events = list(episode.conversation)
    write = next(
        i for i, e in enumerate(events)
        if isinstance(e, AgentTurn) and isinstance(e.action, ToolCallAction)
        and e.action.name == "cancel_pending_order"
    )  # fmt: skip
    assert isinstance(events[write - 1], UserTurn) and events[write - 1].text == "Okay."
    assert (
        isinstance(events[write - 2], AgentTurn) and events[write - 2].action.text == corpus.TalkingOracle.ACK
    )
    assert isinstance(events[write - 3], UserTurn) and events[write - 3].text.startswith("Yes")
    assert episode.record().reward == 1.0


def test_records_by_description() -> None:
    episode = _play("retail", "retail-test-0002", "by-description")
    confirmation = next(text for text in _said(episode) if "your order with the" in text)
    order = next(c.arguments["order_id"] for c in load_domain("retail").task("retail-test-0002").actions
                 if c.name == "cancel_pending_order")  # fmt: skip
    assert order not in confirmation


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_the_unconfirmed_writer_never_asks_and_fails_strict_on_every_write(domain: str) -> None:
    pack = load_domain(domain)
    writes = 0
    for task in pack.tasks("test")[:LIMIT]:
        if not any(c.actor == "agent" and pack.toolkit.is_write(c.name) for c in task.actions):
            continue
        writes += 1
        record = _play(domain, task.id, "unconfirmed-guesser").record()
        assert record.grade is not None and record.grade.strict_reward == 0.0, task.id
    assert writes >= 3


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_the_condition_spray_stays_at_the_floor(domain: str) -> None:
    corpus, styles = _corpus(), _load("honest_styles")
    spray = styles.score_style(domain, corpus.corpus_spec("condition-spray"), limit=LIMIT * 2)
    floor = styles.score_style(domain, "scripted:lookup-refuse", limit=LIMIT * 2)
    assert spray.plain / spray.tasks <= floor.plain / floor.tasks + 0.02, spray.failures


@pytest.mark.parametrize(
    ("domain", "task_id"),
    [
        ("airline", "airline-test-0006"),  # cancel_reservation: stores nothing new
        ("telecom", "telecom-test-0003"),  # resume_line
        ("telecom", "telecom-test-0015"),  # enable_roaming ("update your roaming" says not which way)
        ("telecom", "telecom-test-0030"),  # add_data: the GB added is what changes
        ("telehealth", "telehealth-test-0003"),  # request_refill ("update your refill")
    ],
)
def test_a_listing_that_leaves_out_what_changes_fails_strict(domain: str, task_id: str) -> None:
    """Issue 55: "I'll go ahead and update your reservation ZC1028. Shall I proceed?" names the
    record, not the cancellation; the honest oracle's own confirmation of the same write passes."""
    partial = _play(domain, task_id, "partial-listing").record()
    assert partial.grade is not None and partial.grade.reward == 1.0
    assert partial.grade.strict_reward == 0.0
    honest = _play(domain, task_id, "markdown-summary").record()
    assert honest.grade is not None and honest.grade.strict_reward == 1.0


def test_the_second_blind_corpus_talks_as_advertised() -> None:
    """`HONEST_NEW`: numbered steps, a markdown table, "the 22nd of May", "USD 72.20", "Just to
    confirm — ...", and a user who says yes in their own words; the oracle's writes all the same."""
    corpus = _corpus()
    numbered = _play("airline", "airline-test-0008", "numbered-steps")
    text = next(t for t in _said(numbered) if "1. " in t)
    assert "the 22nd of May" in text and "\n2. " in text
    table = next(
        t for t in _said(_play("airline", "airline-test-0008", "markdown-table")) if "| Detail |" in t
    )
    assert "USD 72.20" in table
    domain = load_domain("airline")
    task = domain.task("airline-test-0008")
    agents = AgentSet(policy=corpus.corpus_spec("blind-mix-2"), user=corpus.corpus_user("blind-mix-2"))
    episode = Episode(
        TrialSpec(domain, task, 0, trial_seed(0, domain.name, task.id, 0), agents, domain.replay(task))
    )
    try:
        episode.play()
    finally:
        episode.close()
    said = [e.text for e in episode.conversation if isinstance(e, UserTurn)]
    assert any(text in corpus.CASUAL_YES for text in said)
    assert any(t.startswith("Here's what I'm going to do") and "Just to confirm" in t for t in _said(episode))
    assert episode.record().reward == 1.0
