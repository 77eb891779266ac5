"""`castbench eval`'s options are declared once, beside `EvalOptions`' fields: every field a
flag sets has one (and the fields no flag sets are named, with why), every flag of `eval` and
`profile` is a field's or the command's own, and a pack's options come in through
`--pack-option PACK.OPTION=VALUE`, an unknown one refused with one line naming the pack and
option."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from castbench._cli.eval_cmd import eval_command
from castbench._cli.eval_flags import eval_flags, flag_named, parameter_name
from castbench._domain.pack_options import PackOption, PackOptionError, PackOptions, set_pack_option
from castbench._run.options import OFF_THE_COMMAND_LINE, EvalOptions, command_line_flags
from castbench.domain import pack_options
from castbench_analyses.profile_cmd import profile_command
from tests.support import invoke

EVAL_OWN = {
    "ctx",
    "allow_incomplete",
    "counterfactuals",
    "suite",
    "pack_option",
    "tau2_data",
    "output",
    "details",
}
"""What `eval` shows and where, not what it runs: the only options it declares itself."""
PROFILE_OWN = (EVAL_OWN - {"ctx"}) | {"figure"}


def _leaves(model: type[BaseModel], path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every field of `model` that holds a value, by its path (a model's fields, not the model)."""
    found: set[tuple[str, ...]] = set()
    for name, info in model.model_fields.items():
        kinds = [info.annotation, *getattr(info.annotation, "__args__", ())]
        nested = next(
            (kind for kind in kinds if isinstance(kind, type) and issubclass(kind, BaseModel)), None
        )
        found |= _leaves(nested, (*path, name)) if nested is not None else {(*path, name)}
    return found


def _params(command: Any) -> set[str]:
    return {
        param.name
        for param in command.params
        if param.name not in ("install_completion", "show_completion", "help")
    }


def test_every_field_is_a_flag_and_every_flag_a_field() -> None:
    flagged = [flag.path for flag in command_line_flags()]
    assert len(flagged) == len(set(flagged))  # no field set by two flags
    assert set(flagged) | set(OFF_THE_COMMAND_LINE) == _leaves(EvalOptions)
    assert not set(flagged) & set(OFF_THE_COMMAND_LINE)
    names = [flag.name for flag in command_line_flags()]
    assert len(names) == len(set(names))


def test_eval_and_profile_declare_only_their_own_options() -> None:
    """Each eval flag is a parameter of both commands (but those a profile sets itself); nothing
    else is, besides the commands' own few."""
    flags = {parameter_name(flag) for flag in command_line_flags()}
    assert _params(eval_command) == flags | (EVAL_OWN - {"ctx"})
    left_out = {"paired", "sweep_traits", "add_trials", "max_trials"}
    assert _params(profile_command) == (flags - left_out) | PROFILE_OWN
    assert {parameter_name(flag) for flag in eval_flags(left_out)} == flags - left_out


def test_a_flag_shows_its_fields_help_and_default() -> None:
    shown = invoke("eval", "--help", width=250).output
    for flag in command_line_flags():
        line = next(line for line in shown.splitlines() if f"--{flag.name} " in line)
        assert flag.flag.help.split(" ")[0] in line, line
    assert flag_named(("selection", "trials")) == "--trials"
    assert flag_named(("time_limits", "step_s")) == "--step-timeout"
    assert "--tau2-data" not in shown  # the deprecated alias is hidden; --pack-option shows
    assert "--pack-option" in shown


def test_a_bad_value_names_the_flag_it_came_from(tmp_path: Path) -> None:
    done = invoke(
        "eval", "-d", "retail", "--rounds", "11", "--verify", "some", "--db", str(tmp_path / "r.db")
    )
    assert done.exit_code == 2
    assert (
        "error: --rounds 11: Input should be less than or equal to 10; --verify 'some': must be one of"
        in (done.output)
    )


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (
            "tau2.nope=x",
            "error: --pack-option 'tau2.nope': pack tau2 has no option 'nope' (its options: data)",
        ),
        ("nopack.data=x", "error: --pack-option 'nopack.data': no installed pack 'nopack' declares options"),
        ("tau2.data", "error: --pack-option 'tau2.data': expected PACK.OPTION=VALUE (e.g. tau2.data=DIR)"),
        ("data=x", "error: --pack-option 'data': a pack option is named PACK.OPTION (e.g. tau2.data)"),
    ],
)
def test_an_unknown_pack_option_is_one_line_naming_it(given: str, said: str) -> None:
    for command in (["tasks", "list", "-d", "retail"], ["eval", "-d", "retail"], ["domains", "list"]):
        done = invoke(*command, "--pack-option", given)
        assert done.exit_code == 2, done.output
        lines = [line for line in done.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith(said), done.output


def test_a_value_a_pack_refuses_is_one_line(tmp_path: Path) -> None:
    done = invoke("tasks", "list", "-d", "retail", "-O", f"tau2.data={tmp_path / 'missing'}")
    assert done.exit_code == 2
    assert f"error: --pack-option tau2.data: {tmp_path / 'missing'} is not a directory" in done.output


def test_set_pack_option_sets_the_packs_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The Python twin of `--pack-option`: a declared option's variable set (a directory resolved),
    anything else refused by name, the variable untouched."""
    toy = PackOptions(
        "toy",
        (
            PackOption("data", "a folder", env="TOY_PACK_DATA", kind="directory", expected="a toy folder"),
            PackOption("mode", "a word", env="TOY_PACK_MODE"),
        ),
    )
    monkeypatch.setattr(pack_options, "declared_pack_options", lambda: {"toy": toy})
    for name in ("TOY_PACK_DATA", "TOY_PACK_MODE"):
        monkeypatch.setenv(name, "before")
        monkeypatch.delenv(name)  # restored (unset) after the test, whatever it sets
    (tmp_path / "data").mkdir()
    assert set_pack_option("toy.data", str(tmp_path / "data" / ".." / "data")) == str(
        (tmp_path / "data").resolve()
    )
    assert os.environ["TOY_PACK_DATA"] == str((tmp_path / "data").resolve())
    assert set_pack_option("toy.mode", "fast") == "fast" and os.environ["TOY_PACK_MODE"] == "fast"
    with pytest.raises(
        PackOptionError, match=r"toy.data: .*missing is not a directory \(expected a toy folder\)"
    ):
        set_pack_option("toy.data", str(tmp_path / "missing"))
    with pytest.raises(PackOptionError, match=r"pack toy has no option 'speed' \(its options: data, mode\)"):
        set_pack_option("toy.speed", "1")
    assert os.environ["TOY_PACK_DATA"] == str((tmp_path / "data").resolve())
