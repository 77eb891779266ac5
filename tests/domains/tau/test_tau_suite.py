"""The CAST protocol as one command: `castbench eval --suite cast-paper` takes the board's packs,
split and trials; the system prompt a model policy gets is τ's wiki alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from castbench._agents.models.render import policy_messages
from castbench._agents.views import briefing_for
from castbench._results.publish.board import board_path, load_board
from castbench_tau.domain import TauDomain
from tests.support import invoke, sqlite_url

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_cast_paper_board_names_the_packs_at_their_versions(packs: dict[str, TauDomain]) -> None:
    spec = load_board(board_path("cast-paper", REPO_ROOT))
    assert set(spec.domains) == set(packs) and spec.split == "test" and spec.trials >= 4
    assert {name: packs[name].comparability for name in spec.domains} == spec.domains
    assert [m.metric for m in spec.metrics] == ["pass^1", "pass^2", "pass^3", "pass^4"]


def test_eval_suite_runs_the_boards_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)
    out = tmp_path / "summary.json"
    args = ["eval", "--suite", "cast-paper", "--policy", "oracle", "--tasks", "tau-telecom-test-0"]
    args += ["--db", sqlite_url(tmp_path / "suite.db"), "--output", str(out)]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    config = json.loads(out.read_text())["config"]
    assert sorted(config["domains"]) == ["tau-airline", "tau-retail", "tau-telecom", "tau-telehealth"]
    assert config["trials"] == 4 and config["split"] == "test"
    bad = invoke("eval", "--suite", "no-such-board", "--db", sqlite_url(tmp_path / "x.db"))
    assert bad.exit_code != 0 and "no-such-board" in bad.output


def test_function_calling_prompt_is_the_wiki_verbatim(pack: TauDomain) -> None:
    task = pack.tasks()[0]
    messages = policy_messages(briefing_for(pack, task, 0, 0, False), (), "function_calling")
    assert messages == [{"role": "system", "content": pack.policy}]
    prompted = policy_messages(briefing_for(pack, task, 0, 0, False), (), "prompted")[0]["content"]
    assert prompted.startswith(pack.policy.strip()) and "# Tools" in prompted
