"""castbench runs on the τ² packs as τ²'s own `Results` files (`castbench export RUN --format tau2`).

The file is what τ²'s runner writes (`tau2.data_model.simulation.Results`, saved with its own
`save`): `info` (trials, step limit, the agent and the user simulator with their models, the
environment's policy), `tasks` (τ²'s own task objects of the run's tasks) and one `SimulationRun`
per scored trial, its messages as `castbench_tau2.messages` writes them, its termination reason,
and its `reward_info` as castbench graded it: the reward, the database check and the
communicate checks, on the task's `reward_basis`. τ²'s `evaluate_simulation` re-grades every
simulation of the file to the same reward (`tests/tau2/test_tau2_export.py`). Trials castbench did
not score (a harness or infrastructure error) are left out, as τ²'s runner leaves out samples
it skips.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from castbench.domain import TrialRecord, load_domain
from castbench.formats import ArchiveError, ExportedRun
from castbench_tau2.domain import Tau2Domain
from castbench_tau2.parity import simulation_run
from castbench_tau2.source import import_tau2

__all__ = ["tau2_results", "write_tau2_results"]


def _domain(exported: ExportedRun) -> Tau2Domain:
    names = list(exported.config.domains)
    if len(names) != 1:
        raise ArchiveError(
            f"run {exported.run_id}: --format tau2 needs a run of one τ² pack, it has {', '.join(names)}"
        )
    domain = load_domain(names[0])
    if not isinstance(domain, Tau2Domain):
        raise ArchiveError(
            f"run {exported.run_id}: --format tau2 needs a τ² pack (tau2-retail, tau2-airline), "
            f"not {names[0]}"
        )
    return domain


def _reward_info(domain: Tau2Domain, record: TrialRecord) -> Any:
    simulation = import_tau2("tau2.data_model.simulation")
    raw = domain.raw_task(record.task_id)
    basis = raw.evaluation_criteria.reward_basis if raw.evaluation_criteria is not None else None
    grade = record.grade
    if grade is None or record.end_reason not in ("user_stop", "transfer"):
        return simulation.RewardInfo(
            reward=record.reward or 0.0,
            info={"note": f"Simulation terminated prematurely. Termination reason: {record.end_reason}"},
        )
    checks = [
        simulation.CommunicateCheck(
            info=output, met=output not in grade.missing_outputs, justification="castbench"
        )
        for output in (raw.evaluation_criteria.communicate_info or [])
    ]
    return simulation.RewardInfo(
        reward=record.reward or 0.0,
        db_check=simulation.DBCheck(db_match=grade.state_ok, db_reward=1.0 if grade.state_ok else 0.0),
        communicate_checks=checks,
        reward_basis=basis,
        info={"castbench": {"strict_reward": grade.strict_reward, "domain_version": record.domain_version}},
    )


def _info(domain: Tau2Domain, exported: ExportedRun) -> Any:
    simulation = import_tau2("tau2.data_model.simulation")
    environment = import_tau2("tau2.registry").registry.get_env_constructor(
        domain.name.removeprefix("tau2-")
    )()
    config = exported.config
    return simulation.Info(
        git_commit="",
        num_trials=config.trials,
        # the run's limits in τ²'s terms: castbench's N agent actions are τ²'s 2N+1 messages at
        # most, and an error limit above N is none
        max_steps=config.limits.max_messages or 2 * config.limits.max_steps + 1,
        max_errors=config.limits.max_tool_errors or config.limits.max_steps + 1,
        user_info=simulation.UserInfo(implementation=f"castbench:{config.user}", llm=_model_of(config.user)),
        agent_info=simulation.AgentInfo(
            implementation=f"castbench:{config.policy}", llm=_model_of(config.policy)
        ),
        environment_info=environment.get_info(),
        seed=config.seed,
    )


def _simulations(domain: Tau2Domain, exported: ExportedRun) -> Iterator[Any]:
    """The run's scored trials as τ²'s `SimulationRun`s, one at a time (the run's trials are read
    from the store as they are iterated: nothing holds them all)."""
    for record in exported.trials:
        if record.status != "scored":
            continue
        run = simulation_run(domain, record, f"{exported.run_id}/{record.task_id}/{record.trial_index}")
        yield run.model_copy(update={"reward_info": _reward_info(domain, record)})


def _task_ids(exported: ExportedRun) -> list[str]:
    return list(dict.fromkeys(record.task_id for record in exported.trials if record.status == "scored"))


def tau2_results(exported: ExportedRun) -> Any:
    """The run as τ²'s `Results` object (held whole: `write_tau2_results` streams instead)."""
    domain = _domain(exported)
    simulation = import_tau2("tau2.data_model.simulation")
    return simulation.Results(
        info=_info(domain, exported),
        tasks=[domain.raw_task(task_id) for task_id in _task_ids(exported)],
        simulations=list(_simulations(domain, exported)),
    )


def _model_of(spec: str) -> str | None:
    """The model string of a model-backed agent spec (`tau2?model=openai/gpt-4.1`, a bare litellm
    model string), else None (a scripted or import-path agent)."""
    if "model=" in spec:
        return spec.split("model=", 1)[1].split("&", 1)[0]
    if "/" in spec and ":" not in spec.split("?", 1)[0]:
        return spec.split("?", 1)[0]
    return None


def _nested(text: str, depth: int) -> str:
    """`text` (a value dumped with indent 4) as it stands `depth` levels deep in an indent-4 dump."""
    return text.replace("\n", "\n" + " " * (4 * depth))


def _array(handle: Any, items: Iterable[Any], last: bool) -> None:
    wrote = False
    for item in items:
        handle.write((",\n" if wrote else "[\n") + " " * 8 + _nested(item.model_dump_json(indent=4), 2))
        wrote = True
    handle.write(("\n    ]" if wrote else "[]") + ("\n" if last else ",\n"))


def write_tau2_results(exported: ExportedRun, target: Path) -> int:
    """Write the run as τ²'s `Results` JSON, byte for byte what `Results.save` writes (pydantic's
    indent-4 dump), but one simulation at a time: the run's trials are read from the store as
    they are written, so memory does not grow with the run (`tests/tau2/test_tau2_export.py`
    checks the bytes against `Results.save`). Returns the file's size in bytes."""
    domain = _domain(exported)
    simulation = import_tau2("tau2.data_model.simulation")
    # the fields in the model's order, with Results' own timestamp (a default factory)
    head = simulation.Results(info=_info(domain, exported), tasks=[], simulations=[])
    fields = list(type(head).model_fields)
    assert fields == ["timestamp", "info", "tasks", "simulations"], fields
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    with part.open("w") as handle:
        handle.write("{\n")
        handle.write(f'    "timestamp": {json.dumps(head.timestamp)},\n')
        handle.write('    "info": ' + _nested(head.info.model_dump_json(indent=4), 1) + ",\n")
        handle.write('    "tasks": ')
        _array(handle, (domain.raw_task(task_id) for task_id in _task_ids(exported)), last=False)
        handle.write('    "simulations": ')
        _array(handle, _simulations(domain, exported), last=True)
        handle.write("}")
    part.replace(target)
    return target.stat().st_size
