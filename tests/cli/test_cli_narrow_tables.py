"""`--details` at 80 and 100 columns (#42): every table of `eval --details` and `runs show
--details` fits the terminal with no figure or interval cut (rich shrank the six columns of four
domains and overall until `0.67–0.…`): a table too wide is split by columns, its labels repeated."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import invoke, sqlite_url

DOMAINS = ("airline", "retail", "telecom", "telehealth")
TASKS = ",".join(f"{domain}-test-{n:04d}" for domain in DOMAINS for n in (1, 2))
SOFT_WRAPPED = ("provenance:", "execution:")
"""Lines printed whole on purpose (one line each, for grep; the terminal folds them): no table."""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """A run of the offline defaults (scripted:noisy, the scripted user) with the rules critic,
    so all three tables print: four domains and overall, two tasks each, two trials."""
    folder = tmp_path_factory.mktemp("narrow")
    db = sqlite_url(folder / "runs.db")
    out = folder / "summary.json"
    ran = _eval(db, 200, "--output", str(out))
    assert ran.exit_code == 0, ran.output
    return db, json.loads(out.read_text())


def _eval(db: str, width: int, *extra: str) -> Any:
    domains = ",".join(DOMAINS)
    args = ["--domain", domains, "--tasks", TASKS, "--trials", "2", "--critic", "rules", "--db", db]
    return invoke("eval", *args, "--details", *extra, width=width)


def _intervals(summary: dict[str, Any]) -> list[str]:
    """Every pass^k interval the reliability table shows, as printed."""
    reports = [*summary["domains"].values(), summary["overall"]]
    return [f"{lo:.2f}–{hi:.2f}" for report in reports for lo, hi in report["ci95"].values()]


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("command", ["eval", "runs show"])
def test_every_details_table_fits_with_nothing_cut(
    run: tuple[str, dict[str, Any]], width: int, command: str
) -> None:
    db, summary = run
    shown = (
        _eval(db, width)
        if command == "eval"
        else invoke("runs", "show", "latest", "--details", "--db", db, width=width)
    )
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    wide = [line for line in lines if len(line) > width and not line.startswith(SOFT_WRAPPED)]
    assert wide == [], "\n".join(wide)
    assert "…" not in shown.output, shown.output
    for title in ("pass^k, 95% CI over tasks", "trials", "critic rules"):
        assert any(line.startswith(title) for line in lines), title
    text = shown.output
    for interval in _intervals(summary):
        assert interval in text, interval
    headers = " ".join(line for line in lines if line.startswith("┃"))
    for name in [*DOMAINS, "overall"]:
        assert f" {name} " in headers, name  # a header, whole
    assert "(columns 1–" in text  # six columns of figures do not fit: the table was split


def test_a_wide_terminal_gets_each_table_whole(run: tuple[str, dict[str, Any]]) -> None:
    db, _ = run
    shown = invoke("runs", "show", "latest", "--details", "--db", db, width=200)
    assert shown.exit_code == 0, shown.output
    assert "(columns" not in shown.output and "(column " not in shown.output
    header = next(line for line in shown.output.splitlines() if "airline (2 tasks)" in line)
    assert all(f"{name} (" in header for name in DOMAINS) and "overall (8 tasks)" in header


def test_provenance_wraps_between_words_on_a_terminal_and_stays_whole_in_a_file() -> None:
    """At an 80-column terminal the provenance and execution lines wrap between words (no word cut
    in two); written to a file or a pipe each stays one line, as scripts grep it."""
    import io

    from rich.console import Console
    from rich.text import Text

    from castbench._records.provenance import provenance as provenance_of
    from castbench._results.report.provenance import print_provenance, provenance_lines
    from castbench._run.api import build_config

    provenance = provenance_of(build_config(policy="scripted:noisy", critic="rules")[0], {})
    whole = [Text.from_markup(line).plain for line in provenance_lines(provenance)]
    assert any(len(line) > 80 for line in whole)
    terminal = io.StringIO()
    print_provenance(provenance, Console(file=terminal, width=80, force_terminal=True, color_system=None))
    shown = terminal.getvalue().splitlines()
    assert all(len(line) <= 80 for line in shown)
    assert " ".join(line.strip() for line in shown).split() == " ".join(whole).split()
    piped = io.StringIO()
    print_provenance(provenance, Console(file=piped, width=80))
    assert piped.getvalue().splitlines() == whole
