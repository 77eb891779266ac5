"""User traits: parsing a profile, the scripted user acting each trait out deterministically from
the seed, the oracle still passing under every trait, a CLI trait sweep, and the profile as part
of a run's identity.

Task used for the user's behaviour: retail-test-0002 (facts: first name, last name, zip, order
id, cancel reason; the user confirms).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from castbench._agents.scripted.user import _DRIFT, ScriptedUser
from castbench._agents.traits import LEVELS, TRAITS, parse_traits, trait_instructions
from castbench._agents.views import user_briefing_for
from castbench._base.dialogue import ask_for, confirmation_request
from castbench._records.store import ResultsStore
from castbench._run.api import build_config, evaluate
from castbench.domain import Domain, Task
from tests.support import invoke, sqlite_url

TASK = "retail-test-0002"
CONFIRM = confirmation_request("cancel pending order #W3002897")
CONFIRM_WITH_REASON = confirmation_request("cancel pending order #W3002897", with_reason=True)


@pytest.fixture(scope="module")
def task(retail: Domain) -> Task:
    return retail.task(TASK)


def user(
    retail: Domain, task: Task, traits: dict[str, str] | str | None = None, seed: int = 0
) -> ScriptedUser:
    profile = parse_traits(traits) if isinstance(traits, str) else traits
    return ScriptedUser(user_briefing_for(retail, task, seed, retail.fresh_database(), profile))


def ask_all(task: Task) -> str:
    return ask_for([fact.keywords[0] for fact in task.scenario.facts])


def ask_one(task: Task, name: str) -> str:
    fact = next(fact for fact in task.scenario.facts if fact.name == name)
    return f"Could you tell me your {fact.keywords[0]}?"


def statements_in(task: Task, text: str) -> list[str]:
    return [fact.name for fact in task.scenario.facts if fact.statement in text]


def has_drift(text: str) -> bool:
    return any(sentence in text for sentence in _DRIFT)


# -- parsing --------------------------------------------------------------------------------------
def test_parse_traits_valid_profiles() -> None:
    assert parse_traits("impatience=high,confusion=low") == {"confusion": "low", "impatience": "high"}
    assert list(parse_traits("skepticism=low, confusion=high")) == ["confusion", "skepticism"]  # sorted
    assert parse_traits(" incoherence = medium ") == {"incoherence": "medium"}
    assert parse_traits("skepticism") == {"skepticism": "medium"}  # level defaults to medium
    assert parse_traits(None) == parse_traits("") == parse_traits("none") == {}
    with pytest.raises(ValueError, match="impatience is given twice"):
        parse_traits("impatience=low,impatience=high")
    everything = ",".join(f"{trait}={level}" for trait, level in zip(TRAITS, LEVELS * 2, strict=False))
    assert set(parse_traits(everything)) == set(TRAITS)


def test_parse_traits_unknown_trait_names_it_and_the_known_ones() -> None:
    with pytest.raises(ValueError) as info:
        parse_traits("impatience=high,grumpiness=high")
    message = str(info.value)
    assert "unknown trait 'grumpiness'" in message
    assert all(trait in message for trait in TRAITS)


def test_parse_traits_unknown_level_names_it_the_trait_and_the_levels() -> None:
    with pytest.raises(ValueError) as info:
        parse_traits("confusion=extreme")
    message = str(info.value)
    assert "unknown level 'extreme'" in message and "confusion" in message
    assert all(level in message for level in LEVELS)


def test_cli_rejects_a_bad_profile_before_any_trial(db_url: str) -> None:
    db = db_url
    result = invoke("eval", "--domain", "retail", "--tasks", TASK, "--traits", "grumpiness=high", "--db", db)
    assert result.exit_code == 2 and "unknown trait 'grumpiness'" in result.output
    assert ResultsStore(db).runs() == []


def test_trait_instructions_for_an_llm_user() -> None:
    text = trait_instructions({"impatience": "high", "confusion": "low"})
    assert "impatient" in text and "after 1 such repeat" in text and "about 30%" in text
    assert trait_instructions({}) == trait_instructions(None) == ""


# -- the scripted user acting traits out ------------------------------------------------------------
def conversation(u: ScriptedUser, task: Task) -> list[tuple[str, bool]]:
    """A fixed agent script; the user's replies and stops."""
    messages = [
        ask_all(task),
        ask_all(task),
        ask_one(task, "zip"),
        ask_one(task, "order_id"),
        "Let me check something.",
        CONFIRM,
        CONFIRM_WITH_REASON,
        ask_one(task, "first_name"),
        "Is there anything else I can help you with?",
    ]
    replies = [(u.open(), False)]
    for message in messages:
        reply = u.reply(message)
        replies.append((reply.text, reply.stop))
        if reply.stop:
            break
    return replies


@pytest.mark.parametrize(
    "profile",
    [
        None,
        *[f"{trait}={level}" for trait in TRAITS for level in LEVELS],
        ",".join(f"{t}=medium" for t in TRAITS),
    ],
)
def test_same_seed_same_replies(retail: Domain, task: Task, profile: str | None) -> None:
    first = conversation(user(retail, task, profile, seed=11), task)
    again = conversation(user(retail, task, profile, seed=11), task)
    assert first == again


def test_different_seeds_act_traits_out_differently(retail: Domain, task: Task) -> None:
    profile = ",".join(f"{trait}=medium" for trait in TRAITS)
    runs = {json.dumps(conversation(user(retail, task, profile, seed=seed), task)) for seed in range(8)}
    assert len(runs) > 1


@pytest.mark.parametrize(("level", "per_reply"), [(None, 5), ("low", 3), ("medium", 2), ("high", 1)])
def test_impatient_user_gives_fewer_facts_per_reply(
    retail: Domain, task: Task, level: str | None, per_reply: int
) -> None:
    u = user(retail, task, {"impatience": level} if level else None)
    u.open()
    said: list[str] = []
    while len(said) < len(task.scenario.facts):
        given = statements_in(task, u.reply(ask_all(task)).text)
        assert len(given) == min(per_reply, len(task.scenario.facts) - len(said))
        said += given
    assert sorted(said) == sorted(fact.name for fact in task.scenario.facts)


@pytest.mark.parametrize(("level", "tolerated"), [("low", 3), ("medium", 2), ("high", 1)])
def test_impatient_user_leaves_after_repeated_questions(
    retail: Domain, task: Task, level: str, tolerated: int
) -> None:
    u = user(retail, task, {"impatience": level})
    u.open()
    first = u.reply(ask_one(task, "zip"))
    assert statements_in(task, first.text) == ["zip"] and not first.stop
    for _ in range(tolerated):
        repeat = u.reply(ask_one(task, "zip"))
        assert not repeat.stop and repeat.text.startswith("I already told you!") and "93740" in repeat.text
    last = u.reply(ask_one(task, "zip"))
    assert last.stop and "Goodbye" in last.text


def test_patient_user_answers_repeated_questions_forever(retail: Domain, task: Task) -> None:
    u = user(retail, task)
    u.open()
    for _ in range(10):
        reply = u.reply(ask_one(task, "zip"))
        assert not reply.stop and reply.text == "My zip code is 93740."


def test_confused_user_first_says_it_wrong_then_corrects_when_asked_again(retail: Domain, task: Task) -> None:
    u = user(retail, task, {"confusion": "high"})  # rate 1: every fact whose value it states
    u.open()
    for name in ("first_name", "zip", "order_id"):
        fact = next(f for f in task.scenario.facts if f.name == name)
        first = u.reply(ask_one(task, name)).text
        assert fact.value not in first and fact.statement not in first, first  # wrong or partial
        corrected = u.reply(ask_one(task, name)).text
        assert corrected == f"Sorry, I mixed that up. {fact.statement}"
        assert u.reply(ask_one(task, name)).text == fact.statement  # said right from now on


def test_confused_user_at_a_low_level_is_confused_only_sometimes(retail: Domain, task: Task) -> None:
    garbled = 0
    for seed in range(30):
        u = user(retail, task, {"confusion": "low"}, seed=seed)
        u.open()
        reply = u.reply(ask_all(task)).text
        garbled += len(task.scenario.facts) - len(statements_in(task, reply))
    # 30 users x 5 facts, each garbled with probability 0.3
    assert 20 < garbled < 75


def test_confusion_never_garbles_a_fact_stated_without_its_value(retail: Domain) -> None:
    task = retail.task("retail-test-0005")  # "I'd like the refund to go to the original payment method."
    refund = next(f for f in task.scenario.facts if f.name == "refund_method")
    assert refund.value not in refund.statement
    u = user(retail, task, {"confusion": "high"})
    u.open()
    assert u.reply(ask_one(task, "refund_method")).text == refund.statement


@pytest.mark.parametrize("level", ["medium", "high"])
def test_skeptical_user_asks_why_unless_a_reason_is_given(retail: Domain, task: Task, level: str) -> None:
    u = user(retail, task, {"skepticism": level})
    u.open()
    u.reply(ask_all(task))  # every fact said, so the confirmation is read as one
    for _ in range(3):
        challenge = u.reply(CONFIRM)
        assert challenge.text.startswith("Hmm, why is that needed?") and not challenge.stop
    assert u.reply(CONFIRM_WITH_REASON).text == "Yes, please go ahead."


def test_mildly_skeptical_user_asks_why_only_once(retail: Domain, task: Task) -> None:
    u = user(retail, task, {"skepticism": "low"})
    u.open()
    u.reply(ask_all(task))
    assert u.reply(CONFIRM).text.startswith("Hmm, why")
    assert u.reply(CONFIRM).text == "Yes, please go ahead."


def test_skeptical_user_who_declines_still_declines_after_the_reason(retail: Domain) -> None:
    task = retail.task("retail-test-0001")  # the user turns the change down
    u = user(retail, task, {"skepticism": "high"})
    u.open()
    u.reply(ask_all(task))
    assert u.reply(CONFIRM).text.startswith("Hmm, why")
    assert u.reply(CONFIRM_WITH_REASON).text.startswith("No, please don't")


def test_user_without_skepticism_agrees_at_once(retail: Domain, task: Task) -> None:
    u = user(retail, task)
    u.open()
    u.reply(ask_all(task))
    assert u.reply(CONFIRM).text == "Yes, please go ahead."


def test_incoherent_user_drifts(retail: Domain, task: Task) -> None:
    u = user(retail, task, {"incoherence": "high"})  # rate 1: every reply drifts
    opening = u.open()
    assert has_drift(opening) and opening.endswith(task.scenario.request)
    replies = [u.reply(ask_one(task, name)).text for name in ("first_name", "last_name", "zip", "order_id")]
    replies.append(u.reply("Let me check something.").text)
    assert all(has_drift(reply) for reply in replies)
    # an off-topic answer instead of the fact is possible; asking again gets it
    coherent = user(retail, task)
    assert not has_drift(coherent.open())
    assert not any(has_drift(coherent.reply(ask_one(task, name)).text) for name in ("first_name", "zip"))


def test_incoherent_user_sometimes_answers_off_topic_first(retail: Domain, task: Task) -> None:
    off_topic = 0
    for seed in range(20):
        u = user(retail, task, {"incoherence": "high"}, seed=seed)
        u.open()
        reply = u.reply(ask_one(task, "zip")).text
        if reply in _DRIFT:
            off_topic += 1
            answers = [u.reply(ask_one(task, "zip")).text for _ in range(10)]
            assert any("93740" in answer for answer in answers)  # asked again, it answers in the end
    assert 0 < off_topic < 20


# -- end to end ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("trait", TRAITS)
def test_oracle_passes_every_retail_test_task_under_each_high_trait(trait: str, tmp_path: Path) -> None:
    result = evaluate(
        domains="retail", policy="oracle", trials=1, traits=f"{trait}=high", db=sqlite_url(tmp_path / "o.db")
    )
    report = result.summary.domains["retail"]
    assert report.n_tasks == 120
    failed = [
        r.task_id
        for r in ResultsStore(sqlite_url(tmp_path / "o.db")).trials(result.outcome.run_id)
        if not r.passed
    ]
    assert failed == [] and report.pass_hat[1] == 1.0


class Sweep:
    def __init__(self, where: Path) -> None:
        self.db = sqlite_url(where / "sweep.db")
        out = where / "sweep.json"
        result = invoke(
            "eval", "--domain", "retail", "--trials", "8", "--seed", "0", "--sweep-traits", "impatience=high",
            "--db", self.db, "--output", str(out),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        self.output = result.output
        self.summary: dict[str, Any] = json.loads(out.read_text())
        self.store = ResultsStore(self.db)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    return Sweep(tmp_path_factory.mktemp("sweep"))


def test_sweep_shows_a_pass_k_drop_under_impatience(sweep: Sweep) -> None:
    table = sweep.summary["trait_sweep"]
    assert sweep.summary["config"]["policy"] == "scripted:noisy" and sweep.summary["config"]["traits"] == {}
    baseline = {int(k): v for k, v in table["baseline"].items()}
    profile = table["profiles"]["impatience=high"]
    pass_hat = {int(k): v for k, v in profile["pass_hat"].items()}
    assert pass_hat[4] < baseline[4] - 0.02
    assert profile["drop"]["4"] == pytest.approx(baseline[4] - pass_hat[4]) and profile["drop"]["4"] > 0
    assert baseline == pytest.approx({int(k): v for k, v in sweep.summary["overall"]["pass_hat"].items()})
    assert "trait sweep" in sweep.output and "impatience=high" in sweep.output


def test_trait_profile_is_in_the_run_config_and_its_hash(sweep: Sweep) -> None:
    table = sweep.summary["trait_sweep"]
    baseline_id, profile_id = table["baseline_run_id"], table["profiles"]["impatience=high"]["run_id"]
    assert baseline_id != profile_id
    assert sweep.store.config(baseline_id).traits == {}
    assert sweep.store.config(profile_id).traits == {"impatience": "high"}
    assert sweep.store.run(baseline_id).config_hash != sweep.store.run(profile_id).config_hash
    # the hash follows the profile, not how it was spelled
    hashes = {
        spec: build_config(domains="retail", traits=spec)[0].config_hash()
        for spec in (
            "impatience=high,confusion=high",
            " confusion=high , impatience=high",
            "impatience=high",
            None,
        )
    }
    assert hashes["impatience=high,confusion=high"] == hashes[" confusion=high , impatience=high"]
    assert len(set(hashes.values())) == 3


def test_sweep_trials_are_reproducible_with_the_same_seed(sweep: Sweep, tmp_path: Path) -> None:
    """The same trials re-run elsewhere with the same seed replay exactly; another seed does not."""
    profile_id = sweep.summary["trait_sweep"]["profiles"]["impatience=high"]["run_id"]
    stored = {(r.task_id, r.trial_index): r for r in sweep.store.trials(profile_id)}
    some = sorted({task_id for task_id, _ in stored})[:12]

    def replay(seed: int) -> dict[tuple[str, int], Any]:
        db = sqlite_url(tmp_path / f"again-{seed}.db")
        result = evaluate(domains="retail", tasks=some, trials=8, seed=seed, traits="impatience=high", db=db)
        return {(r.task_id, r.trial_index): r for r in ResultsStore(db).trials(result.outcome.run_id)}

    TIMES: Any = {"timing": True, "proposals": {"__all__": {"policy_s", "critic_s"}}}

    def fingerprint(record: Any) -> Any:
        return (record.reward, record.end_reason, [s.model_dump(exclude=TIMES) for s in record.steps])

    again = replay(0)
    assert again.keys() == {key for key in stored if key[0] in some}
    assert all(fingerprint(again[key]) == fingerprint(stored[key]) for key in again)
    other = replay(1)
    assert any(fingerprint(other[key]) != fingerprint(stored[key]) for key in other)
