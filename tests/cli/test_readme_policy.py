"""The custom-policy example of docs/agents.md (the README's "Evaluate an agent" points at it) runs
as written: saved as `mypolicy.py` in a folder, the page's `castbench eval --policy mypolicy:MyPolicy`
evaluates it there (in its worker process, sandboxed as any import-path agent)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from castbench._records.store import ResultsStore

ROOT = Path(__file__).resolve().parents[2]


def _snippet() -> str:
    readme = (ROOT / "docs" / "agents.md").read_text()
    block = readme.split("<!-- readme-policy -->", 1)[1].split("<!-- /readme-policy -->", 1)[0]
    found = re.search(r"```python\n(.*?)```", block, re.DOTALL)
    assert found, "docs/agents.md's policy example is not a python block between its markers"
    return found.group(1)


def test_the_readme_policy_runs_as_written(tmp_path: Path, repo_env: dict[str, str]) -> None:
    (tmp_path / "mypolicy.py").write_text(_snippet())
    castbench = str(Path(sys.executable).parent / "castbench")
    command = [castbench, "eval", "--domain", "retail", "--policy", "mypolicy:MyPolicy", "--trials", "2"]
    command += ["--tasks", "retail-test-0001,retail-test-0002", "--db", str(tmp_path / "runs.db")]
    done = subprocess.run(command, cwd=tmp_path, env=repo_env, capture_output=True, text=True, timeout=300)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, output
    assert "4 trials run" in output and "ended: agent_error" not in output
    store = ResultsStore(str(tmp_path / "runs.db"))
    records = store.trials(store.run("latest").id)
    assert len(records) == 4 and all(record.end_reason != "agent_error" for record in records)
    calls = [
        step.action.name for record in records for step in record.steps if step.action.kind == "tool_call"
    ]
    assert {"find_user_id_by_email", "list_all_product_types"} & set(calls)  # its one look-up


def test_the_critic_example_runs_as_written(tmp_path: Path, repo_env: dict[str, str]) -> None:
    """docs/agents.md's critic, saved as `mycritic.py`, verifies every action of the oracle in its
    sandboxed worker: it lets the reads through, and no trial ends in an agent error."""
    block = (ROOT / "docs" / "agents.md").read_text().split("<!-- readme-critic -->", 1)[1]
    found = re.search(r"```python\n(.*?)```", block.split("<!-- /readme-critic -->", 1)[0], re.DOTALL)
    assert found, "docs/agents.md's critic example is not a python block between its markers"
    assert len(found.group(1).splitlines()) <= 25
    (tmp_path / "mycritic.py").write_text(found.group(1))
    castbench = str(Path(sys.executable).parent / "castbench")
    command = [castbench, "eval", "--domain", "retail", "--policy", "oracle", "--critic", "mycritic:MyCritic"]
    command += ["--trials", "1", "--tasks", "retail-test-0001,retail-test-0002,retail-test-0003"]
    command += ["--db", str(tmp_path / "runs.db")]
    done = subprocess.run(command, cwd=tmp_path, env=repo_env, capture_output=True, text=True, timeout=300)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, output
    store = ResultsStore(str(tmp_path / "runs.db"))
    records = store.trials(store.run("latest").id)
    assert records and all(record.end_reason != "agent_error" for record in records)
    verdicts = [
        proposal.verdict.verdict
        for record in records
        for step in record.steps
        for proposal in step.proposals
        if proposal.verdict is not None
    ]
    assert "valid" in verdicts, output


def _critic_snippet() -> str:
    block = (ROOT / "docs" / "agents.md").read_text().split("<!-- readme-critic -->", 1)[1]
    found = re.search(r"```python\n(.*?)```", block.split("<!-- /readme-critic -->", 1)[0], re.DOTALL)
    assert found, "docs/agents.md's critic example is not a python block between its markers"
    return found.group(1)


def test_the_critic_example_rejects_an_unconfirmed_write_and_passes_a_confirmed_one() -> None:
    """Both of its answers, on the views castbench hands it (built from the retail domain)."""
    from castbench.agents import CriticView, ReplyAction, ToolCallAction, UserTurn, public_briefing
    from castbench.domain import load_domain

    code: dict[str, Any] = {}
    exec(compile(_critic_snippet(), "mycritic.py", "exec"), code)
    briefing = public_briefing(load_domain("retail"), seed=0, trial_index=0)
    critic = code["MyCritic"](briefing)
    write = next(iter(sorted(briefing.write_tools)))
    cancel = ToolCallAction(name=write, arguments={})
    asked = (UserTurn(text="Please cancel my order."),)
    rejected = critic.verify(CriticView(briefing, asked, cancel))
    assert (rejected.verdict, rejected.failure_type, rejected.flags) == ("invalid", "domain_violation", True)
    assert write in rejected.explanation
    confirmed = (*asked, UserTurn(text="Yes, go ahead."))
    assert critic.verify(CriticView(briefing, confirmed, cancel)).verdict == "valid"
    assert critic.verify(CriticView(briefing, asked, ReplyAction(text="Which order?"))).verdict == "valid"


def test_the_critic_fields_table_names_every_field() -> None:
    """docs/agents.md documents each field of what a critic is given and returns: a field added
    to `Briefing`, `CriticView` or `Verdict` fails here until the page says what it holds."""
    from castbench.agents import Briefing, CriticView, Verdict

    page = (ROOT / "docs" / "agents.md").read_text()
    section = page.split("<!-- critic-fields -->", 1)[1].split("<!-- /critic-fields -->", 1)[0]
    for kind, names in (
        (Briefing, [item.name for item in dataclasses.fields(Briefing)]),
        (CriticView, [item.name for item in dataclasses.fields(CriticView)]),
        (Verdict, [*Verdict.model_fields, "flags"]),
    ):
        table = section.split(f"| `{kind.__name__}` field |", 1)[1].split("\n\n", 1)[0]
        documented = re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE)
        assert documented == names, (kind.__name__, documented, names)
