"""`castbench mcp serve` refuses what it cannot use before the trial: a negative `--trial`; its
`--record` folder is made (or refused) up front, so the graded record is never lost at the end;
`respond_to_user` takes a string, not whatever can be turned into one."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="MCP: pip install -e '.[service]'")
pytestmark = pytest.mark.extra("service")

from castbench._records.trial import TrialRecord  # noqa: E402
from castbench._trial.episode import Episode  # noqa: E402
from castbench_bridges.mcp_trial import McpTrial  # noqa: E402
from tests.support import invoke  # noqa: E402


@pytest.mark.parametrize("message", [5, None, ["hi"]])
def test_respond_to_user_takes_only_a_string(open_episode: Callable[..., Episode], message: object) -> None:
    episode = open_episode("retail-test-0002")
    result = McpTrial(episode, respond_tool=True).call("respond_to_user", {"message": message})
    assert result.is_error and "needs 'message', a string" in result.content[0].text  # type: ignore[union-attr]
    assert episode.steps == [] and not episode.done  # nothing was sent to the customer


def test_a_negative_trial_is_refused() -> None:
    result = invoke("mcp", "serve", "--domain", "retail", "--task", "retail-test-0002", "--trial", "-1")
    assert result.exit_code == 2 and "--trial" in result.output


def test_the_record_folder_is_made_before_the_trial(tmp_path: Path) -> None:
    record = tmp_path / "missing" / "folder" / "record.json"
    args = ["mcp", "serve", "--domain", "retail", "--task", "retail-test-0002", "--record", str(record)]
    done = subprocess.run(
        [sys.executable, "-c", "from castbench._cli.app import main; main()", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert TrialRecord.model_validate_json(record.read_text()).task_id == "retail-test-0002"
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    refused = invoke(
        "mcp",
        "serve",
        "--domain",
        "retail",
        "--task",
        "retail-test-0002",
        "--record",
        str(blocker / "r.json"),
    )
    assert refused.exit_code == 2 and "--record" in refused.output and "cannot be written" in refused.output
