"""`castbench cast` comes from the `castbench.commands` entry point: listed only with the extra."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.import_probe import RUN_COMMAND, loaded, probe
from tests.support import invoke

EXTRA = ("torch", "transformers", "trl", "datasets", "peft", "accelerate", "tokenizers")
STAGES = (
    "collect",
    "annotate",
    "critic-data",
    "train-critic",
    "policy-data",
    "train-policy",
    "run",
    "paper",
    "serve",
)

WITHOUT_TRL = """
import importlib.abc, sys
class _Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "trl" or name.startswith("trl."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, _Hide())
import importlib.util
_real = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name == "trl" else _real(name, *a)
"""


def _castbench(
    args: list[str], env: dict[str, str], cwd: Path, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    code = f"{prelude}\nfrom castbench._cli.app import main\nsys.argv = ['castbench', *{args!r}]\nmain()\n"
    return subprocess.run(
        [sys.executable, "-c", "import sys\n" + code],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "200"},
        cwd=cwd,
        timeout=300,
    )


def test_cast_lists_its_stages() -> None:
    result = invoke("cast", "--help")
    assert result.exit_code == 0, result.output
    for stage in STAGES:
        assert stage in result.output
    assert "cast" in invoke("--help").output


def test_without_the_extra_cast_is_not_listed_and_naming_it_says_what_to_install(
    repo_env: dict[str, str], tmp_path: Path
) -> None:
    listed = _castbench(["--help"], repo_env, tmp_path, WITHOUT_TRL)
    assert listed.returncode == 0 and " eval " in listed.stdout and " cast " not in listed.stdout
    named = _castbench(["cast", "--help"], repo_env, tmp_path, WITHOUT_TRL)
    assert named.returncode == 2
    assert "castbench[train]" in named.stderr and "trl" in named.stderr
    with_extra = _castbench(["--help"], repo_env, tmp_path)
    assert " cast " in with_extra.stdout


@pytest.mark.parametrize("args", [["--help"], ["cast", "--help"]])
def test_listing_imports_nothing_of_the_extra(
    args: list[str], repo_env: dict[str, str], tmp_path: Path
) -> None:
    wanted = set(EXTRA)
    report = f"\nprint('EXTRA=' + ','.join(sorted({{m.split('.')[0] for m in sys.modules}} & {wanted!r})))"
    result = probe(RUN_COMMAND + report, args, repo_env, str(tmp_path))
    assert "EXTRA=\n" in result.stdout + "\n", result.stdout[-500:]
    if args == ["--help"]:
        assert loaded(result) == []  # castbench's own start-up stays as light as it was


def test_a_bad_recipe_is_one_line_naming_the_file_and_field(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.toml"
    recipe.write_text("[collect]\nsamples = 0\n")
    result = invoke("cast", "collect", str(recipe))
    assert result.exit_code == 2
    assert str(recipe) in result.output and "collect.samples" in result.output
    assert "Traceback" not in result.output
    missing = invoke("cast", "annotate", str(tmp_path / "recipe.toml").replace("recipe", "nope"))
    assert missing.exit_code == 2 and "cannot read" in missing.output


def test_serve_and_run_refuse_bad_input_in_one_line(tmp_path: Path) -> None:
    served = invoke("cast", "serve", str(tmp_path))
    assert served.exit_code == 2 and "no config.json" in served.output
    recipe = tmp_path / "recipe.toml"
    recipe.write_text("")
    run = invoke("cast", "run", str(recipe), "--until", "nonsense")
    assert run.exit_code == 2 and "not a stage" in run.output


def test_collect_with_its_model_server_down_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as free:  # a loopback port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(
        f'name = "down"\n[collect]\ndomains = "retail"\nsplit = "train"\nsamples = 1\n'
        f'policy = "openai/teacher?api_base=http://127.0.0.1:{port}/v1"\n'
    )
    result = invoke("cast", "collect", str(recipe))
    assert result.exit_code == 2, result.output
    assert f"127.0.0.1:{port}" in result.output and "not reachable" in result.output
    assert result.output.count("error:") == 1 and "Traceback" not in result.output
