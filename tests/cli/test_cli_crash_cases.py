"""The crashes a new user met (issue 60), each now one `error:` line with exit 2 or a working run:
an in-memory `--db`, paths too long for the file system, outputs that are folders or files where
the other is meant (checked before the work), a board file of random bytes, a damaged run row,
names of 100,000 characters, and Ctrl-C while the command line loads."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from castbench._cli.errors import shown_path
from tests.cli.test_cli_bad_input import one_error_line
from tests.support import ctrl_c_delivered, invoke, sqlite_url

TASK = "retail-test-0001"


def _eval(db: str, *extra: str):  # type: ignore[no-untyped-def]
    return invoke("eval", "--domain", "retail", "--tasks", TASK, "--trials", "1", "--db", db, *extra)


@pytest.mark.parametrize("db", ["sqlite:///:memory:", "sqlite://"])
def test_an_in_memory_store_runs_and_says_it_keeps_nothing(db: str) -> None:
    result = _eval(db)
    assert result.exit_code == 0, result.output
    assert "kept in memory only" in result.output


def test_a_file_name_too_long_is_one_line(tmp_path: Path) -> None:
    line = one_error_line(_eval(sqlite_url(tmp_path / ("a" * 300 + ".db"))), "file name too long")
    assert len(line) < 300  # the name is shortened, not printed whole


def test_a_path_of_many_long_folders_is_one_line(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["b" * 200] * 25) / "x.db"
    one_error_line(_eval(sqlite_url(deep)), "characters")


def test_shown_path_keeps_short_paths_and_cuts_long_ones() -> None:
    assert shown_path("results/x.db") == "results/x.db"
    cut = shown_path("c" * 5000)
    assert "5,000 characters" in cut and len(cut) < 150


@pytest.fixture
def stored(tmp_path: Path) -> str:
    db = sqlite_url(tmp_path / "runs.db")
    for policy in ("oracle", "scripted:noisy"):
        result = invoke(
            "eval", "--domain", "retail", "--tasks", TASK, "--trials", "2", "--policy", policy, "--db", db
        )
        assert result.exit_code == 0, result.output
    return db


def test_view_out_at_a_folder_is_refused_before_the_page_is_built(stored: str, tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    one_error_line(invoke("view", "latest", "--db", stored, "--out", str(folder)), "--out", "folder")


def test_gate_junit_at_a_folder_is_refused_before_the_gate_runs(stored: str, tmp_path: Path) -> None:
    folder = tmp_path / "junit"
    folder.mkdir()
    from castbench._records.store import ResultsStore

    first, second = (row.id for row in ResultsStore(stored, read_only=True).runs())
    result = invoke(
        "gate",
        "--baseline",
        first,
        "--candidate",
        second,
        "--metric",
        "pass^1",
        "--max-drop",
        "0.05",
        "--junit",
        str(folder),
        "--db",
        stored,
    )
    line = one_error_line(result, "--junit")
    assert "PASS" not in result.output and "FAIL" not in result.output, line  # no gate ran


def test_gate_errors_have_the_one_shape(tmp_path: Path) -> None:
    result = invoke(
        "gate", "--baseline", "a.json", "--candidate", "b.json", "--db", sqlite_url(tmp_path / "x.db")
    )
    assert result.exit_code == 2
    assert all(not line.startswith("gate error") for line in result.output.splitlines())


def test_a_board_of_random_bytes_is_one_line(tmp_path: Path) -> None:
    board = tmp_path / "board.toml"
    board.write_bytes(b"\x00\xff\xfe garbage \x01\x80")
    one_error_line(invoke("leaderboard", "build", str(board), "--root", str(tmp_path)), "not a TOML file")


def test_a_board_out_at_a_file_is_refused_before_building(tmp_path: Path) -> None:
    board = tmp_path / "board.toml"
    board.write_text(
        'title = "t"\ndomains = ["retail"]\nmetrics = ["pass^1"]\n[[entries]]\nname = "a"\nrun = "x.json"\n'
    )
    taken = tmp_path / "index.html"
    taken.write_text("mine")
    result = invoke("leaderboard", "build", str(board), "--root", str(tmp_path), "--out", str(taken))
    assert result.exit_code == 2, result.output
    assert taken.read_text() == "mine"


def test_a_damaged_run_row_lists_the_others(stored: str, tmp_path: Path) -> None:
    path = stored.removeprefix("sqlite:///")
    with sqlite3.connect(path) as connection:
        first = connection.execute("select id from run order by created").fetchone()[0]
        connection.execute("update run set config_json = '{broken' where id = ?", (first,))
    result = invoke("runs", "list", "--db", stored)
    assert result.exit_code == 0, result.output
    assert "damaged" in result.output and "complete" in result.output
    one_error_line(invoke("runs", "show", first, "--db", stored), first, "damaged")


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [("--domain", "x" * 100_000, "domain name of 100,000"), ("--tasks", "t" * 120_000, "task id of 120,000")],
)
def test_names_of_a_hundred_thousand_characters_are_refused_at_once(
    tmp_path: Path, option: str, value: str, needle: str
) -> None:
    started = time.monotonic()
    args = ["eval", "--trials", "1", "--db", sqlite_url(tmp_path / "x.db"), option, value]
    if option == "--tasks":
        args += ["--domain", "retail"]
    one_error_line(invoke(*args), needle)
    assert time.monotonic() - started < 10


def test_ctrl_c_while_the_command_line_loads_is_one_line_and_130(tmp_path: Path) -> None:
    """Ctrl-C at several moments of the start: once the interpreter has read its site module
    (before that, no code of castbench's has run), every one ends in one line and status 130."""
    script = Path(sys.executable).with_name("castbench")
    command = [
        str(script),
        "eval",
        "--domain",
        "retail",
        "--trials",
        "1",
        "--db",
        sqlite_url(tmp_path / "x.db"),
    ]
    seen = 0
    for delay in (0.25, 0.4, 0.6, 0.9, 1.3):
        process = subprocess.Popen(
            command,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            preexec_fn=ctrl_c_delivered,
        )
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        if b"init_import_site" in err:  # the interpreter's own start, before castbench's code
            continue
        seen += 1
        assert process.returncode == 130, (delay, err)
        assert b"Traceback" not in err, (delay, err)
    assert seen, "no Ctrl-C landed after the interpreter started"


def test_the_headline_shows_the_critic_within_80_columns(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "c.db")
    args = ["eval", "--domain", "retail", "--tasks", TASK, "--trials", "2", "--db", db]
    plain = invoke(*args, width=80)
    with_critic = invoke(*args, "--critic", "rules", width=80)
    assert plain.exit_code == 0 and with_critic.exit_code == 0, with_critic.output
    assert "critic:" not in plain.output
    lines = with_critic.output.splitlines()
    critic = next(i for i, line in enumerate(lines) if line.startswith("critic:"))
    assert (
        "verified actions" in lines[critic] and "flag rate" in lines[critic] and "correction" in lines[critic]
    )
    assert "false flags" in lines[critic + 1] and "detection" in lines[critic + 1]
    assert all(len(line) <= 80 for line in lines[critic : critic + 2])


def test_the_headline_shows_what_models_spent_and_broke(tmp_path: Path) -> None:
    from castbench._records.store import ResultsStore
    from castbench._results.report.tables import headline_extras

    db = sqlite_url(tmp_path / "m.db")
    assert invoke("eval", "--domain", "retail", "--tasks", TASK, "--trials", "1", "--db", db).exit_code == 0
    from castbench._results.report.summary import summarize_run

    store = ResultsStore(db, read_only=True)
    row = next(iter(store.runs()))
    summary = summarize_run(row.id, store.config(row.id), list(store.iter_trials(row.id)), row.status)
    assert headline_extras(summary) == []  # scripted agents: no model, no critic
    counts = summary.overall.outputs.model_copy(
        update={
            "model_calls": 40,
            "tokens_in": 12_345,
            "tokens_out": 678,
            "actions": 40,
            "malformed_actions": 40,
        }
    )
    summary.overall = summary.overall.model_copy(update={"outputs": counts})
    lines = headline_extras(summary)
    assert lines[0].startswith("models: 40 calls, 12,345 tokens in, 678 out")
    assert "40 of 40 actions malformed" in lines[1]


def test_eval_counterfactuals_are_in_the_output_json(tmp_path: Path) -> None:
    import json

    out = tmp_path / "summary.json"
    result = invoke(
        "eval", "--domain", "retail", "--tasks", TASK, "--trials", "2", "--critic", "rules",
        "--db", sqlite_url(tmp_path / "cf.db"), "--counterfactuals", "--output", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    assert {"flags", "passes", "cells"} <= set(document["counterfactuals"])
    assert document["run_id"] and document["overall"]


def test_runs_list_at_80_columns_keeps_what_tells_two_builds_apart() -> None:
    from rich.console import Console

    from castbench._cli.runs_cmd import middle_cut, runs_table

    assert middle_cut("cancelbot:CancelBotVersionOne", 14).endswith("One")
    assert middle_cut("cancelbot:CancelBotVersionTwo", 14).endswith("Two")
    assert middle_cut("short", 14) == "short"
    base = {
        "created": "2026-12-06T23:00:00", "status": "complete", "domains": ["retail"], "critic": "none",
        "trials_stored": 8, "provenance": {}, "problem": "here",
    }  # fmt: skip
    runs = [
        {**base, "id": f"r-{i:012d}", "policy": f"agents.cancelbot:CancelBotBuild{suffix}"}
        for i, suffix in enumerate(("Alpha", "Omega"))
    ]
    console = Console(width=80, record=True)
    console.print(runs_table(runs, "runs", 80))
    text = console.export_text()
    assert "Alpha" in text and "Omega" in text, text


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--traits", "impatience="], ["--traits", "no level"]),
        (["-O", "tau2.data="], ["tau2.data", "no value given"]),
        (["--fault-kinds", "timeout"], ["--tool-faults"]),
        (["--policy", "openai/x?temperature=0.1&temperature=0.9"], ["temperature", "more than once"]),
        (["--trials", "abc"], ["--trials", "castbench eval"]),
        (["--no-such-flag"], ["--no-such-flag", "--help"]),
    ],
)
def test_values_once_accepted_silently_are_refused(
    tmp_path: Path, extra: list[str], needles: list[str]
) -> None:
    one_error_line(_eval(sqlite_url(tmp_path / "x.db"), *extra), *needles)


def test_runs_show_refuses_an_empty_run_and_negative_failures(stored: str) -> None:
    one_error_line(invoke("runs", "show", "", "--db", stored), "no run given")
    one_error_line(invoke("runs", "show", "latest", "--failures", "-1", "--db", stored), "--failures")
