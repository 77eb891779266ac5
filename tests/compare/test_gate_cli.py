"""`castbench gate` end to end on real runs of the scripted noisy policy."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

from typer.testing import CliRunner

from castbench._cli.app import app
from tests.compare.stored_runs import Runs

cli = CliRunner()


def gate(runs: Runs, *args: str) -> tuple[int, str]:
    result = cli.invoke(app, ["gate", "--db", runs.db, *args], env={"COLUMNS": "160"})
    return result.exit_code, result.output


def test_a_real_regression_fails(runs: Runs, tmp_path: Path) -> None:
    code, out = gate(
        runs,
        "--baseline", runs.low_noise.run_id, "--candidate", runs.high_noise.run_id,
        "--metric", "pass^4", "--max-drop", "0.02",
        "--markdown", str(tmp_path / "gate.md"), "--junit", str(tmp_path / "gate.xml"),
    )  # fmt: skip
    assert code == 1, out
    assert "FAIL" in out and "the candidate is credibly worse than the baseline" in out
    assert "pass^4 · overall" in out and "allowed drop 0.020" in out
    markdown = (tmp_path / "gate.md").read_text()
    assert markdown.startswith("## ❌ castbench gate: FAIL")
    assert "| pass^4 · overall | ❌ FAIL |" in markdown
    suite = ElementTree.parse(tmp_path / "gate.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    [case] = suite.findall("testcase")
    assert case.get("name") == "pass^4 max_drop=0.02"
    assert case.find("failure") is not None


def test_same_policy_other_seed_passes(runs: Runs) -> None:
    code, out = gate(
        runs,
        "--baseline", str(runs.low_noise.path), "--candidate", str(runs.low_noise_other_seed.path),
        "--metric", "pass^1", "--max-drop", "0.05",
    )  # fmt: skip
    assert code == 0, out
    assert "PASS" in out and "no check shows a drop beyond what is allowed" in out


def test_three_tasks_two_trials_cannot_decide(runs: Runs, tmp_path: Path) -> None:
    args = [
        "--baseline", str(runs.tiny_low.path), "--candidate", str(runs.tiny_high.path),
        "--metric", "pass^1", "--metric", "pass^2", "--max-drop", "0.02",
        "--junit", str(tmp_path / "gate.xml"),
    ]  # fmt: skip
    code, out = gate(runs, *args)
    assert code == 3, out
    assert "UNDECIDED" in out and "the run is too small to decide" in out and "3 shared tasks" in out
    suite = ElementTree.parse(tmp_path / "gate.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "2"
    assert gate(runs, *args, "--undecided", "pass")[0] == 0
    assert gate(runs, *args, "--undecided", "fail")[0] == 1


def test_config_file_with_per_domain_checks(runs: Runs, tmp_path: Path) -> None:
    config = tmp_path / "gate.toml"
    config.write_text(
        'confidence = 0.9\nundecided = "pass"\n'
        '[[checks]]\nmetric = "pass^1"\ndomain = "retail"\nmax_drop = 0.05\n'
        '[[checks]]\nmetric = "pass^8"\ndomain = "retail"\nmax_drop = 0.01\nconfidence = 0.99\n'
    )
    code, out = gate(
        runs, "--baseline", runs.low_noise.run_id, "--candidate", runs.low_noise_other_seed.run_id,
        "--config", str(config), "--metric", "pass@8", "--max-drop", "0.0",
        "--markdown", str(tmp_path / "g.md"),
    )  # fmt: skip
    markdown = (tmp_path / "g.md").read_text()
    assert "| pass^1 · retail | ✅ PASS |" in markdown
    assert "| pass^8 · retail |" in markdown and "| 99% |" in markdown
    assert "| pass@8 · overall |" in markdown and "| 90% |" in markdown
    assert code == 0, out  # no check fails; an undecided one passes (undecided = "pass" from the file)


def test_summary_files_and_the_store_give_the_same_verdict(runs: Runs, tmp_path: Path) -> None:
    sources = {
        "store": (runs.low_noise.run_id, runs.high_noise.run_id),
        "files": (str(runs.low_noise.path), str(runs.high_noise.path)),
    }
    reports = {}
    for source, (baseline, candidate) in sources.items():
        report = tmp_path / f"{source}.xml"
        code, out = gate(runs, "--baseline", baseline, "--candidate", candidate,
                         "--metric", "pass^2", "--max-drop", "0.03", "--junit", str(report))  # fmt: skip
        assert code == 1, f"{source}: {out}"
        reports[source] = report.read_text()
    assert reports["store"] == reports["files"]
    suite = ElementTree.fromstring(reports["files"]).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"


def test_unusable_input_exits_2(runs: Runs, tmp_path: Path) -> None:
    base = ["--baseline", str(runs.low_noise.path)]
    code, out = gate(
        runs, *base, "--candidate", str(tmp_path / "missing.json"), "--metric", "pass^1", "--max-drop", "0.1"
    )
    assert code == 2 and "cannot read summary" in out
    code, out = gate(runs, *base, "--candidate", "r-nonexistent", "--metric", "pass^1", "--max-drop", "0.1")
    assert code == 2 and "no run 'r-nonexistent'" in out
    code, out = gate(runs, *base, "--candidate", str(runs.high_noise.path))
    assert code == 2 and "nothing to check" in out
    code, out = gate(
        runs, *base, "--candidate", str(runs.low_noise.path), "--metric", "pass^1", "--max-drop", "0.1"
    )
    assert code == 2 and "the same run" in out  # a run gated against itself would always pass
    code, out = gate(
        runs, *base, "--candidate", str(runs.tiny_low.path), "--metric", "pass^1", "--max-drop", "0.1"
    )
    assert code == 2 and "task selection (--tasks) differs" in out
    bad_metric = [
        "--metric",
        "pass^1",
        "--metric",
        "pass^2",
        "--max-drop",
        "0.1",
        "--max-drop",
        "0.1",
        "--max-drop",
        "0.2",
    ]
    code, out = gate(runs, *base, "--candidate", str(runs.low_noise.path), *bad_metric)
    assert code == 2 and "one per --metric" in out


def test_incomparable_versions_are_refused_unless_forced(runs: Runs, tmp_path: Path) -> None:
    data = json.loads(runs.high_noise.path.read_text())
    data["config"]["domains"]["retail"] = "4-0"
    bumped = tmp_path / "bumped.json"
    bumped.write_text(json.dumps(data))
    args = [
        "--baseline",
        str(runs.low_noise.path),
        "--candidate",
        str(bumped),
        "--metric",
        "pass^4",
        "--max-drop",
        "0.02",
    ]
    code, out = gate(runs, *args)
    assert code == 2 and "version 3-0 vs 4-0" in out and "--force" in out
    assert gate(runs, *args, "--force")[0] == 1
