"""Private splits: drawn from a domain's families in the test mix, named by their digest (never
their seed), checked (every gold replays, the oracle scores 1.0, no public duplicate), run by
`eval --tasks-file`, ranked by a board that refuses every other split (with the counterfactual
column: net trials a critic's verdicts saved); and they measure what the public split does (the
scripted baselines agree with it on three private splits)."""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from castbench import evaluate
from castbench._authoring.private import (
    domain_generator,
    duplicates,
    family_mix,
    generate_private,
    private_problems,
    write_private,
)
from castbench._domain.private import TASKS_FILES_ENV, PrivateSplit, digest_tasks, read_split, split_name
from castbench._records.store import ResultsStore
from castbench._records.store.export import export_run, write_export
from castbench._results.publish.board import BoardError, load_board
from castbench._run.api import build_config
from castbench.domain import TaskFileError, load_domain
from castbench.domain import private as private_module
from castbench_boards.build import build_board
from castbench_boards.rerun import rerun_entries
from tests.support import invoke, sqlite_url

DOMAIN = "telehealth"
SECRET = 987_654_321


@pytest.fixture(autouse=True)
def _no_registered_splits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test registers its own splits: none leaks into another test's domains."""
    monkeypatch.setattr(private_module, "_registered", {})
    monkeypatch.setattr(private_module, "_read_paths", set())
    monkeypatch.delenv(TASKS_FILES_ENV, raising=False)


def _written(tmp_path: Path, seed: int, count: int, name: str = DOMAIN) -> tuple[PrivateSplit, Path]:
    split = generate_private(load_domain(name), seed, count)
    path = tmp_path / f"{name}-{seed}.json"
    write_private(split, path)
    return split, path


def test_a_split_is_the_test_mix_named_by_its_digest_and_never_holds_its_seed(tmp_path: Path) -> None:
    domain = load_domain(DOMAIN)
    split, path = _written(tmp_path, SECRET, 20)
    assert len(split.tasks) == 20 == sum(split.families.values())
    assert Counter(task.family for task in split.tasks) == +Counter(split.families)
    test_mix = {family: test for family, (_, test, _) in domain_generator(domain).families.items()}
    assert Counter(task.family for task in domain.tasks("test")) == +Counter(test_mix)  # the test split's
    assert split.families == family_mix(test_mix, 20)
    assert split.split == split_name(digest_tasks(split.tasks)) and split.split.startswith("private-")
    assert str(SECRET) not in path.read_text()
    assert all(task.id.startswith(f"{DOMAIN}-{split.split}-") for task in split.tasks)
    assert generate_private(domain, SECRET, 20).digest == split.digest  # the seed fixes the split
    assert generate_private(domain, SECRET + 1, 20).digest != split.digest
    assert private_problems(domain, read_split(path)) == []


def test_a_false_claim_the_grader_reads_in_the_tools_results_is_not_drawn() -> None:
    """retail seed 2 drew a task whose false claims held the amount '7.99': the grader reads it
    rounded ('8.0') in the yoga mat's '8mm' its tools show, so the task failed its own check and
    nothing was written. The generator now drops what the grader's reading finds there."""
    domain = load_domain("retail")
    split = generate_private(domain, 2, len(domain.tasks("test")))
    assert private_problems(domain, split) == []


def test_family_mix_scales_the_test_split_by_largest_remainders() -> None:
    assert family_mix({"a": 10, "b": 5, "c": 5}, 4) == {"a": 2, "b": 1, "c": 1}
    assert family_mix({"a": 1, "b": 1, "c": 1}, 2) == {"a": 1, "b": 1, "c": 0}
    with pytest.raises(ValueError, match="at least one task"):
        family_mix({"a": 1}, 0)


def test_an_edited_or_foreign_file_is_refused_naming_it(tmp_path: Path) -> None:
    _, path = _written(tmp_path, 3, 6)
    document = json.loads(path.read_text())
    document["tasks"][0]["scenario"]["request"] += " (edited)"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document))
    with pytest.raises(TaskFileError, match=r"edited\.json: its tasks do not hash to its digest"):
        read_split(edited)
    plain = tmp_path / "plain.json"
    plain.write_text("[]")
    with pytest.raises(TaskFileError, match=r"plain\.json: not a private split"):
        read_split(plain)
    result = invoke("domains", "validate", "--tasks-file", str(edited))
    assert result.exit_code == 2 and result.output.startswith("error:") and "edited.json" in result.output


def test_a_copy_of_a_public_task_is_a_problem_named() -> None:
    domain = load_domain(DOMAIN)
    public = domain.tasks("test")[0]
    assert duplicates(domain, [public.model_copy(update={"id": "x-1"})]) == [
        f"{DOMAIN} task x-1: duplicates public task {public.id}"
    ]


def test_generate_then_validate_on_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "split.json"
    made = invoke("tasks", "generate", "--domain", DOMAIN, "--seed", "4", "--count", "8", "--out", str(out))
    assert made.exit_code == 0, made.output
    split = read_split(out)
    assert split.split in made.output and split.digest in made.output
    checked = invoke("domains", "validate", "--tasks-file", str(out))
    assert checked.exit_code == 0, checked.output
    assert "the oracle scores 1.0" in checked.output and "8 tasks" in checked.output
    db = sqlite_url(tmp_path / "runs.db")
    ran = invoke(
        "eval", "--details", "--tasks-file", str(out), "--policy", "oracle", "--trials", "1", "--db", db
    )
    assert ran.exit_code == 0, ran.output
    assert f"the private split in {out}" in ran.output and "telehealth (8 tasks)" in ran.output
    assert ResultsStore(db).config(ResultsStore(db).run("latest").id).split == split.split
    refused = invoke(
        "tasks", "generate", "--domain", "tau-retail", "--seed", "1", "--count", "2", "--out", str(out)
    )
    assert refused.exit_code == 2 and "error:" in refused.output


def test_the_digest_not_the_seed_is_the_runs_identity(tmp_path: Path) -> None:
    first, first_path = _written(tmp_path, 5, 6)
    second, second_path = _written(tmp_path, 6, 6)
    config, _ = build_config(policy="oracle", tasks_file=str(first_path))
    assert (config.split, list(config.domains)) == (first.split, [DOMAIN])
    assert config.planned_tasks == {DOMAIN: [task.id for task in first.tasks]}
    other, _ = build_config(policy="oracle", tasks_file=str(second_path))
    assert other.config_hash() != config.config_hash()
    assert "5" not in json.dumps(config.extra) and str(first_path) in os.environ[TASKS_FILES_ENV]
    again = tmp_path / "copy.json"
    again.write_text(first_path.read_text())  # the same split from anywhere: the same run
    assert build_config(policy="oracle", tasks_file=str(again))[0].config_hash() == config.config_hash()


def test_a_board_names_its_private_split_and_refuses_public_runs(tmp_path: Path) -> None:
    split, path = _written(tmp_path, 8, 6)
    (tmp_path / "private").mkdir()
    path.rename(tmp_path / "private" / "split.json")
    boards = tmp_path / "leaderboards"
    boards.mkdir()
    (boards / "private.toml").write_text(
        f'title = "private"\ndomains = {{ {DOMAIN} = {load_domain(DOMAIN).version.split("-")[0]} }}\n'
        f'split = "{split.split}"\ntasks_file = "private/split.json"\ntrials = 1\nmetrics = ["pass^1"]\n'
        'allow_privileged = true\ncounterfactuals = true\nentries = [{ name = "oracle", policy = "oracle" }, '
        '{ name = "noisy + rules", policy = "scripted:noisy", critic = "rules" }, '
        '{ name = "public", run = "results/public.castbench.json.gz" }]\n'
    )
    spec = load_board(boards / "private.toml")
    reruns = rerun_entries(spec.model_copy(update={"entries": spec.entries[:2]}), tmp_path)  # type: ignore[index]
    db = sqlite_url(tmp_path / "public.db")
    evaluate(policy="oracle", domains=DOMAIN, trials=1, db=db)
    store = ResultsStore(db)
    (tmp_path / "results").mkdir(exist_ok=True)
    write_export(export_run(store, store.run("latest").id), tmp_path / "results" / "public.castbench.json.gz")
    with pytest.raises(BoardError, match=rf"ran the test split, the board ranks {split.split}"):
        build_board(spec, tmp_path, tmp_path / "out", reruns=reruns)
    alone = spec.model_copy(update={"entries": spec.entries[:2]})  # type: ignore[index]
    written = build_board(alone, tmp_path, tmp_path / "out", reruns=reruns)
    assert any(file.name == "board.md" for file in written)
    board = (tmp_path / "out" / "board.md").read_text()
    assert split.split in board and "net saved / 100 verdicts" in board  # the counterfactual column
    critic_row = next(line for line in board.splitlines() if "`rules`" in line)
    assert re.search(r"\| [+-]\d+\.\d \([+-]\d+\.\d–[+-]\d+\.\d\) \|", critic_row), critic_row
    with pytest.raises(BoardError, match="split must be private-"):
        load_board_text(boards, 'split = "test"\ntasks_file = "private/split.json"')


def load_board_text(boards: Path, lines: str) -> None:
    path = boards / "bad.toml"
    path.write_text(f'title = "bad"\ndomains = {{ {DOMAIN} = 1 }}\n{lines}\nmetrics = ["pass^1"]\n')
    load_board(path)


def _difference_within(
    public: tuple[float, tuple[float, float]], private: tuple[float, tuple[float, float]]
) -> bool:
    """The two splits' figures differ by no more than two independent draws of tasks would."""
    errors = [(high - low) / 3.92 for _, (low, high) in (public, private)]
    return abs(public[0] - private[0]) <= 1.96 * math.hypot(*errors) + 1e-12


def test_three_private_splits_measure_what_the_public_split_does(tmp_path: Path) -> None:
    """The noisy policy, alone and with the rules critic, within the interval a second split's
    figure falls in (the public interval is where the public figure's truth lies: a second draw
    of tasks and trial seeds leaves it about one time in six while measuring the same thing,
    bench/private_splits.py); the deterministic floors score the same."""
    domain = load_domain(DOMAIN)
    db = sqlite_url(tmp_path / "runs.db")
    paths = [_written(tmp_path, seed, len(domain.tasks("test")))[1] for seed in (1, 2, 3)]
    baselines = (
        ("scripted:noisy", "none", 2),
        ("scripted:noisy", "rules", 2),
        ("scripted:refuse", "none", 1),
        ("scripted:lookup-spray", "none", 1),
    )
    for policy, critic, trials in baselines:
        common = dict(policy=policy, critic=critic, trials=trials, db=db)
        public = evaluate(domains=DOMAIN, **common).summary.domains[DOMAIN]  # type: ignore[arg-type]
        for path in paths:
            private = evaluate(tasks_file=str(path), **common).summary.domains[DOMAIN]  # type: ignore[arg-type]
            for k in public.pass_hat:
                pair = ((public.pass_hat[k], public.ci95[k]), (private.pass_hat[k], private.ci95[k]))
                assert _difference_within(*pair), (policy, critic, path.name, k, pair)
                if policy != "scripted:noisy":  # the floors: the same figure
                    low, high = public.ci95[k]
                    assert low <= private.pass_hat[k] <= high, (policy, path.name, k)
