"""What a run needs is checked before its first trial, each problem one `error:` line (issue 60):
a `--cache` that is a file, an agent service without the `service` extra, a policy that is an
object or a function rather than a class; and a judge whose answers cannot be read agrees with
nothing."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from castbench._agents.registry import AgentSpecError, resolve
from castbench._results.attribution.model import Attribution, Evidence
from castbench_analyses.why_cmd import judge_line
from castbench_analyses.why_judge import UNREADABLE, agreement
from tests.cli.test_cli_bad_input import one_error_line
from tests.support import invoke, sqlite_url

TASK = "retail-test-0001"


def _eval(tmp_path: Path, *extra: str):  # type: ignore[no-untyped-def]
    db = sqlite_url(tmp_path / "runs.db")
    return invoke("eval", "--domain", "retail", "--tasks", TASK, "--trials", "1", "--db", db, *extra)


def test_cache_at_a_file_is_refused_before_any_trial(tmp_path: Path) -> None:
    taken = tmp_path / "answers"
    taken.write_text("not a folder")
    result = _eval(tmp_path, "--cache", str(taken))
    one_error_line(result, "--cache", "is a file, not a folder")
    assert "trials ━" not in result.output
    assert taken.read_text() == "not a folder"  # nothing of the user's is touched


def test_cache_folder_is_created_when_missing(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "cache"
    assert _eval(tmp_path, "--cache", str(folder)).exit_code == 0
    assert folder.is_dir()


def test_agent_service_without_the_extra_names_it_before_any_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as when the `service` extra is not installed
    with pytest.raises(AgentSpecError, match=r"castbench\[service\]"):
        resolve("policy", "http://127.0.0.1:9/agent")
    result = _eval(tmp_path, "--policy", "http://127.0.0.1:9/agent")
    one_error_line(result, "'service' extra", "mcp")
    assert "trials ━" not in result.output


def test_a_chat_completions_url_needs_no_service_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    spec = resolve("policy", "http://127.0.0.1:9/v1/chat/completions", model_factory=dict)
    assert spec.kind == "model"


@pytest.mark.parametrize(
    ("target", "needles"),
    [
        ("agent_object", ("an agent object (Polite)", "module:Polite")),
        ("greeting", ("is a str value",)),
        ("two_arguments", ("f(briefing, **params)", "'propose'")),
    ],
)
@pytest.mark.parametrize("where", [[], ["--in-process"]])
def test_a_policy_that_cannot_build_agents_is_refused_at_start(
    tmp_path: Path, target: str, needles: tuple[str, ...], where: list[str]
) -> None:
    result = _eval(tmp_path, "--policy", f"tests.cli.policy_shapes:{target}", *where)
    one_error_line(result, f"policy 'tests.cli.policy_shapes:{target}'", *needles)


@pytest.mark.parametrize("where", [[], ["--in-process"]])
def test_a_factory_function_builds_a_working_policy(tmp_path: Path, where: list[str]) -> None:
    result = _eval(tmp_path, "--policy", "tests.cli.policy_shapes:polite", *where)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("where", [[], ["--in-process"]])
def test_a_factory_that_returns_no_agent_says_what_it_returned(tmp_path: Path, where: list[str]) -> None:
    result = _eval(tmp_path, "--policy", "tests.cli.policy_shapes:returns_text", *where)
    assert result.exit_code == 4, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert "returned a str, which does not implement the policy protocol" in line
    assert "Traceback" not in result.output


def test_runs_why_on_a_factory_that_returns_no_agent_names_the_policy(tmp_path: Path) -> None:
    """`runs why` explains such a run by what the policy returned, not as a call that never went
    through."""
    result = _eval(tmp_path, "--policy", "tests.cli.policy_shapes:returns_text", "--in-process")
    (run_id,) = re.findall(r"run (r-[0-9a-f]+) stored", result.output)
    why = invoke("runs", "why", run_id, "--db", sqlite_url(tmp_path / "runs.db"))
    assert why.exit_code == 0, why.output
    text = " ".join(why.output.replace("│", " ").split())
    assert "agent_error" in text
    assert "returned a str, which does not implement the policy protocol" in text
    assert "never went through" not in text and "in place of" not in text


def _attribution(cause: str, detail: str, source: str = "rules") -> Attribution:
    return Attribution(
        domain="retail", task=TASK, trial=0, step=3, party="agent", cause=cause,  # type: ignore[arg-type]
        evidence=Evidence(rule="r", detail=detail), source=source,  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_judge_answering_garbage_agrees_with_nothing() -> None:
    rules = [_attribution("hallucination", "x") for _ in range(3)]
    garbage = [_attribution("incomplete_reply", f"{UNREADABLE}: '@@@'", "judge") for _ in range(3)]
    result = agreement(rules, garbage)
    assert result.judged == 0 and result.unreadable == 3 and result.party is None
    line = judge_line("openai/judge", result)
    assert "no answer could be read on 3 trial(s)" in line and "100%" not in line
    mixed = agreement(rules, [_attribution("hallucination", "ok", "judge"), *garbage[:2]])
    assert (mixed.judged, mixed.unreadable, mixed.cause) == (1, 2, 1.0)
    assert "2 answer(s) could not be read" in judge_line("openai/judge", mixed)
