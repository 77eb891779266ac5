"""Published tasks whose gold is broken: found by replaying it, left out of scores, listed."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from castbench._cli.app import app
from castbench_authoring.validate import validate_domain
from castbench_tau.domain import BROKEN_SUFFIX, TauDomain

README = Path(__file__).resolve().parents[3] / "domains" / "castbench_tau" / "README.md"


def test_known_broken_gold_is_found(packs: dict[str, TauDomain]) -> None:
    airline, telecom, retail = packs["tau-airline"], packs["tau-telecom"], packs["tau-retail"]
    assert any(
        r.startswith("unknown tool: action 1 update_reservation_baggage")
        for r in airline.broken["tau-airline-test-51"]
    )
    assert any(
        r.startswith("unknown tool: action 2 check_network_status")
        for r in telecom.broken["tau-telecom-train-0"]
    )
    assert any(
        r.startswith("fails in τ:") and "unexpected keyword argument 'item_ids_to_remove'" in r
        for r in retail.broken["tau-retail-test-116"]
    )
    assert any(r.startswith("changes nothing:") for r in retail.broken["tau-retail-test-12"])


def test_broken_tasks_form_their_own_split(pack: TauDomain) -> None:
    for split in pack.splits:
        kept = {task.id for task in pack.tasks(split)}
        broken = {task.id for task in pack.tasks(split + BROKEN_SUFFIX)}
        assert not kept & broken
        assert broken == {task_id for task_id in pack.broken if pack.locate(task_id)[0] == split}
        assert set(pack.excluded_tasks(split)) == broken


def test_validate_reports_them_apart_and_passes_the_rest(pack: TauDomain) -> None:
    report = validate_domain(pack)
    assert report.ok, report.problems[:5]
    assert len(report.excluded) == len(pack.broken)


def test_the_cli_lists_them() -> None:
    result = CliRunner().invoke(app, ["domains", "validate", "--domain", "tau-airline"])
    assert result.exit_code == 0, result.output
    assert "broken task(s) excluded from scores" in result.output and "tau-airline-test-51" in result.output


def test_the_pack_documentation_lists_every_broken_task(packs: dict[str, TauDomain]) -> None:
    listed = set(
        re.findall(r"^\| (tau-[a-z]+) \| (tau-[a-z]+-[a-z]+-\d+) \|", README.read_text(), re.MULTILINE)
    )
    found = {(name, task_id) for name, domain in packs.items() for task_id in domain.broken}
    assert listed == found
