"""The oracle is an upper bound on the packs: plain and strict pass^1 are 1.0 on every task that
is not broken, also where τ's gold writes without authenticating the customer (the oracle looks
them up first, from what the scripted user says); the scripted user's identity facts find the
task's own customer, also where the gold's first look-up fails on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._domain.identity import IDENTITY_PREFIX
from castbench._run.api import evaluate
from castbench_tau.domain import TauDomain
from tests.support import sqlite_url

UNAUTHENTICATED_GOLD = {
    "tau-retail": ["tau-retail-test-70", "tau-retail-test-71", "tau-retail-test-100", "tau-retail-test-114"],
    "tau-telehealth": ["tau-telehealth-test-0", "tau-telehealth-test-2"],
}
FAILING_FIRST_LOOKUP = [f"tau-retail-test-{index}" for index in (35, 36, 37, 38, 39, 54, 55, 67, 68)]
FALLBACK_WRITES = {
    "tau-retail": ["tau-retail-test-13"],
    "tau-telehealth": ["tau-telehealth-test-6", "tau-telehealth-test-7"],
}


def _assert_upper_bound(pack: TauDomain, split: str, tasks: list[str] | None, db: str) -> None:
    result = evaluate(domains=pack.name, split=split, tasks=tasks, policy="oracle", trials=1, db=db)
    report = result.summary.domains[pack.name]
    assert report.n_tasks == len(tasks if tasks is not None else pack.tasks(split))
    assert report.errored_trials == 0
    assert report.strict is not None
    failed = [task for task, counts in report.per_task.items() if counts.successes < counts.n]
    broke = [task for task, counts in report.strict.per_task.items() if counts.successes < counts.n]
    assert (failed, broke) == ([], []), (pack.name, split)
    assert report.pass_hat[1] == report.strict.pass_hat[1] == 1.0


def test_the_oracle_authenticates_where_the_gold_does_not(pack: TauDomain, tmp_path: Path) -> None:
    """A sample per pack (the slow test below runs every task): the first tasks of a split, the
    golds that write without looking the customer up, those with a fallback write."""
    split = "test" if pack.tasks("test") else "dev"
    tasks = [task.id for task in pack.tasks(split)][:4]
    tasks += UNAUTHENTICATED_GOLD.get(pack.name, []) + FALLBACK_WRITES.get(pack.name, [])
    _assert_upper_bound(pack, split, list(dict.fromkeys(tasks)), sqlite_url(tmp_path / "oracle.db"))


@pytest.mark.slow
def test_the_oracle_scores_one_plain_and_strict_on_every_task(pack: TauDomain, tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "oracle.db")
    for split in pack.splits:
        if pack.tasks(split):
            _assert_upper_bound(pack, split, None, db)


def _finds_the_customer(pack: TauDomain, task_id: str) -> bool:
    task = pack.task(task_id)
    facts = {fact.name: fact.value for fact in task.scenario.facts}
    split, index = pack.locate(task_id)
    customer = pack._source.raw_tasks[split][index].user_id
    for tool in pack.toolkit:
        required = tool.schema["function"]["parameters"].get("required", [])
        if tool.name.startswith(IDENTITY_PREFIX) and required and set(required) == set(facts):
            answer = pack.toolkit.call(pack.fresh_database(), tool.name, facts)
            return not answer.error and customer in answer.content
    return False


def test_identity_facts_find_the_tasks_own_customer(packs: dict[str, TauDomain]) -> None:
    """Retail test 35-39, 54, 55, 67, 68 start with a look-up that fails (a second email, an old
    or mistyped zip code): the user's facts are the ones that find them, not that look-up's."""
    retail = packs["tau-retail"]
    for task_id in FAILING_FIRST_LOOKUP:
        gold_first = next(
            call for call in retail.task(task_id).actions if call.name.startswith(IDENTITY_PREFIX)
        )
        assert retail.toolkit.call(retail.fresh_database(), gold_first.name, gold_first.arguments).error
        assert _finds_the_customer(retail, task_id), task_id
    assert [fact.value for fact in retail.task("tau-retail-test-35").scenario.facts] == [
        "aarav.santos8320@example.com"
    ]
    assert [fact.value for fact in retail.task("tau-retail-test-67").scenario.facts] == [
        "Noah",
        "Ito",
        "98187",
    ]


def test_every_customer_of_a_pack_with_identity_look_ups_can_say_who_they_are(
    packs: dict[str, TauDomain],
) -> None:
    for name in ("tau-retail", "tau-telecom", "tau-telehealth"):
        pack = packs[name]
        for split in pack.splits:
            for task in pack.tasks(split):
                assert _finds_the_customer(pack, task.id), task.id
