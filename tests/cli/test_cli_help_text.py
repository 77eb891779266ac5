"""Help text shows what its authors wrote: square brackets (an install extra, a default) are
Rich markup unless escaped, and an unescaped `castbench[ray]` printed as `castbench`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from castbench._cli.app import app

CLI = Path(__file__).resolve().parents[2] / "harness" / "castbench" / "_cli"
# the satellites' commands (plugins/castbench_*/*_cmd.py), which the CLI lists beside its own
SATELLITE_COMMANDS = Path(__file__).resolve().parents[2] / "plugins"


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (["eval"], ["pip install 'castbench[ray]'", "pip install 'castbench[postgres]'"]),
        (["export"], ["File to write [default: results/RUN_ID"]),
        (
            ["gate"],
            ["Interval confidence [default: 0.95]", "or pass (0) [default: undecided]", "with [[checks]]"],
        ),
        (["leaderboard", "build"], ["Output folder [default: leaderboards/NAME/]"]),
        (["view"], ["Write the page here [default: RUN_ID.html]"]),
    ],
)
def test_help_shows_extras_and_defaults(command: list[str], shown: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "1000", "NO_COLOR": "1"})
    text = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 0
    for words in shown:
        assert words in text, (words, text)


def test_no_help_string_has_an_unescaped_bracket() -> None:
    """Every `help=` string in the CLI (and the satellites' commands) escapes its `[` (Rich would
    read it as a style tag)."""
    unescaped = [
        f"{path.name}: {match.group(0)[:60]}"
        for path in sorted([*CLI.glob("*.py"), *SATELLITE_COMMANDS.glob("castbench_*/*_cmd.py")])
        for match in re.finditer(r"help=f?\"[^\"]*\"", path.read_text())
        if re.search(r"(?<!\\\\)\[", re.sub(r"\{[^}]*\}", "", match.group(0)))  # f-string fields aside
    ]
    assert unescaped == []


def test_no_eval_flag_help_has_an_unescaped_bracket() -> None:
    """The same of eval's flags, whose help is declared beside their fields (`castbench._run.options`)."""
    from castbench._run.options import command_line_flags

    unescaped = [flag.name for flag in command_line_flags() if re.search(r"(?<!\\)\[", flag.flag.help)]
    assert unescaped == []
