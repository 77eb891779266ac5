"""Errors a person can read: every `--db` problem, unknown domains and tasks give one line that
names the problem and the fix (exit 2, no traceback); user and file text is never read as Rich
markup; `eval | head` keeps its `--output`; `runs list` fits 80 columns with full ids and has
`--json`; `tasks show` prints one task."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import Result

from castbench.domain import Domain
from tests.core.toy import Counter, Ticket, build_toy_domain, register_toy, toy_task
from tests.support import invoke

TASK = "retail-test-0001"


def _one_line_error(result: Result, *needles: str) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and sum(line.startswith("error:") for line in lines) == 1
    error = next(line for line in lines if line.startswith("error:"))
    for needle in needles:
        assert needle in error, error
    return error


def _eval(db: str, *extra: str) -> Result:
    return invoke("eval", "--domain", "retail", "--tasks", TASK, "--trials", "1", "--db", db, *extra)


def test_a_plain_path_is_accepted_as_db(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "runs.db"
    path.parent.mkdir()  # a folder that is not there is refused (tests/cli/test_cli_first_hour.py)
    assert _eval(str(path)).exit_code == 0
    listed = invoke("runs", "list", "--db", str(path), "--json")
    assert listed.exit_code == 0 and json.loads(listed.output)[0]["trials_stored"] == 1


@pytest.mark.parametrize(
    ("make", "needles"),
    [
        (lambda d: (d / "junk.db").write_text("not a database") and str(d / "junk.db"), ["not a SQLite"]),
        (
            lambda d: (d / "ro.db").touch() or f"sqlite:///file:{d / 'ro.db'}?mode=ro&uri=true",
            ["read-only", "writable"],
        ),
        (
            lambda d: (d / "afile").touch() or str(d / "afile" / "runs.db"),
            ["cannot open or create", "folder"],
        ),
        (lambda d: "nosuchdb://somewhere/x", ["driver is not installed"]),
    ],
    ids=["not-a-database", "read-only", "folder-is-a-file", "unknown-backend"],
)
def test_each_db_problem_is_one_line_with_the_fix(tmp_path: Path, make, needles: list[str]) -> None:  # type: ignore[no-untyped-def]
    db = make(tmp_path)
    for result in (
        _eval(db),
        invoke("runs", "list", "--db", db),
        invoke("runs", "show", "latest", "--db", db),
    ):
        _one_line_error(result, "--db", *needles)


def test_a_server_db_that_cannot_be_used_is_one_line() -> None:
    """A closed port: without the PostgreSQL driver that is what the line says; with it, that
    the server cannot be reached."""
    result = invoke("runs", "list", "--db", "postgresql://castbench:secret@127.0.0.1:9/results")
    has_driver = importlib.util.find_spec("psycopg") is not None
    needle = "cannot reach the database server" if has_driver else "pip install 'castbench[postgres]'"
    error = _one_line_error(result, needle)
    assert "secret" not in error


@pytest.mark.parametrize(
    "command",
    [["eval", "--trials", "1"], ["domains", "validate"], ["tasks", "list"], ["tasks", "show", "x-1"]],
)
def test_an_unknown_domain_is_the_same_clean_error_everywhere(command: list[str], tmp_path: Path) -> None:
    result = invoke(
        *command, "--domain", "nope", *(["--db", str(tmp_path / "r.db")] if command[0] == "eval" else [])
    )
    assert _one_line_error(result).startswith("error: unknown domain 'nope' (installed: ")


@pytest.fixture
def bracketed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Domain:
    calls = json.dumps([["get_counter", {"name": "ret[red]ail [[checks]]"}]])
    tasks = [toy_task("ret[red]ail-1", [], outcome="no_change", request=f"CALL {calls}")]
    toy = build_toy_domain(tmp_path / "toy", tasks, name="brackets")
    domain = Domain(
        name="brackets",
        version="1-0",
        root=toy.root,
        records=[Counter, Ticket],
        toolkit=toy.toolkit,
        now=toy.now,
        description="counters [vllm] [[checks]] [bold]",
    )
    return register_toy(monkeypatch, domain)


def test_user_and_file_text_is_never_read_as_markup(bracketed: Domain, tmp_path: Path) -> None:
    listed = invoke("domains", "list")
    assert "counters [vllm] [[checks]] [bold]" in listed.output
    tasks = invoke("tasks", "list", "--domain", "brackets")
    assert "ret[red]ail-1" in tasks.output and "[[checks]]" in tasks.output
    db = str(tmp_path / "r.db")
    ran = invoke(
        "eval",
        "--domain",
        "brackets",
        "--policy",
        "tests.core.fixtures_agents:ScriptPolicy",
        "--trials",
        "1",
        "--db",
        db,
    )
    assert ran.exit_code == 0, ran.output
    shown = invoke("runs", "show", "latest", "--task", "ret[red]ail-1", "--db", db)
    assert shown.exit_code == 0, shown.output
    assert "get_counter({'name': 'ret[red]ail [[checks]]'})" in shown.output
    unknown = invoke("runs", "show", "ret[red]ail", "--db", db)
    _one_line_error(unknown, "no run 'ret[red]ail'")
    serve = invoke("serve", "Qwen/Qwen3-8B")
    if serve.exit_code == 2:  # no vllm here (the usual case): the hint keeps its extra
        assert "pip install 'castbench[vllm]'" in serve.output


def test_runs_list_at_80_columns_shows_full_ids_and_has_json(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    for seed in ("1", "2"):
        assert _eval(db, "--seed", seed, "--policy", "scripted:noisy?p=0.3&recover=0.5").exit_code == 0
    runs = json.loads(invoke("runs", "list", "--db", db, "--json").output)
    assert [run["status"] for run in runs] == ["complete", "complete"]
    assert {run["policy"] for run in runs} == {"scripted:noisy?p=0.3&recover=0.5"}
    table = invoke("runs", "list", "--db", db, width=80)
    assert table.exit_code == 0 and all(run["id"] in table.output for run in runs), table.output
    assert max(len(line) for line in table.output.splitlines()) <= 80
    prefix = runs[0]["id"][:8] if not runs[1]["id"].startswith(runs[0]["id"][:8]) else runs[0]["id"]
    assert invoke("runs", "show", prefix, "--db", db).exit_code == 0


def test_tasks_show_prints_one_task() -> None:
    shown = invoke("tasks", "show", TASK)
    assert shown.exit_code == 0, shown.output
    body = json.loads(shown.output.split("\n", 1)[1])
    assert body["id"] == TASK and "actions" in body and "scenario" in body
    assert "retail-test-0002" not in shown.output


def test_eval_piped_into_head_keeps_its_output_file(tmp_path: Path, repo_env: dict[str, str]) -> None:
    output, db = tmp_path / "summary.json", tmp_path / "r.db"
    castbench = str(Path(sys.executable).parent / "castbench")
    command = [
        castbench,
        "eval",
        "--domain",
        "retail",
        "--trials",
        "2",
        "--tasks",
        f"{TASK},retail-test-0002",
    ]
    process = subprocess.Popen(
        [*command, "--db", str(db), "--output", str(output)],
        cwd=tmp_path,
        env=repo_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().startswith("castbench eval")
    process.stdout.close()  # what `| head -1` does
    _, errors = process.communicate(timeout=120)
    assert process.returncode == 0, errors
    assert "Traceback" not in errors and "BrokenPipe" not in errors
    assert json.loads(output.read_text())["overall"]["n_trials"] == 4
