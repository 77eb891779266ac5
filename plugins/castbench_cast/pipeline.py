"""The stages, run from a recipe: each reads its upstream stages' manifests, writes its outputs
into its own folder (`<out>/<stage>/`) and a manifest last. A stage whose manifest matches its
parameters and inputs is skipped (`force` runs it again); the collect stages also resume trial by
trial inside castbench's engine (the same options resume the same stored run).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from castbench import ResultsStore
from castbench.domain import TrialRecord, load_domain, resolve_domains
from castbench_cast.annotations import (
    agreement,
    annotated_moments,
    balance,
    labeler_annotation,
    read_annotations,
    write_annotations,
)
from castbench_cast.manifest import MANIFEST, Manifest, completed, key_of, stable_hash, write_manifest
from castbench_cast.recipe import CollectStage, Recipe, TrainStage

__all__ = ["STAGES", "Pipeline", "StageError", "with_temperature"]

STAGES = (
    "collect",
    "annotate",
    "critic-data",
    "train-critic",
    "collect-critic",
    "policy-data",
    "train-policy",
)


class StageError(RuntimeError):
    """A stage that cannot run (an upstream stage not done, no examples): says what to run."""


@dataclass
class _Built:
    outputs: list[str]
    counts: dict[str, int | float] = field(default_factory=dict)
    balance: dict[str, dict[str, int]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


def with_temperature(policy: str, temperature: float) -> str:
    """A model policy samples at the recipe's temperature; built-ins have their own noise."""
    name = policy.partition("?")[0]
    if "/" not in name or "temperature=" in policy:
        return policy
    return f"{policy}{'&' if '?' in policy else '?'}temperature={temperature:g}"


def _task_ids(settings: CollectStage) -> list[str] | None:
    if settings.tasks or settings.limit is None:
        return settings.tasks
    return [
        task.id
        for domain in resolve_domains(settings.domains)
        for task in domain.tasks(settings.split)[: settings.limit]
    ]


def _privileged(policy: str) -> bool:
    """Whether a policy spec names an agent that reads the task (oracle, scripted:noisy...)."""
    from castbench.agents import resolve

    return resolve("policy", policy, model_factory=lambda **_: None).privileged


def trials_hash(records: list[TrialRecord]) -> str:
    return stable_hash(sorted(record.model_dump_json() for record in records))


@dataclass
class Pipeline:
    recipe: Recipe
    force: bool = False
    log: Callable[[str], None] = print

    # --- plumbing -------------------------------------------------------------------------
    def folder(self, stage: str) -> Path:
        return self.recipe.stage_dir(stage)

    def manifest(self, stage: str) -> Manifest:
        path = self.folder(stage) / MANIFEST
        if not path.exists():
            raise StageError(
                f"stage {stage} has not run yet ({path} is missing): run `castbench cast {stage}`"
            )
        return Manifest.model_validate_json(path.read_text())

    def _stage(
        self, stage: str, params: dict[str, Any], inputs: dict[str, str], build: Callable[[Path], _Built]
    ) -> Manifest:
        folder = self.folder(stage)
        done = None if self.force else completed(folder, stage, params, inputs)
        if done is not None:
            self.log(f"{stage}: up to date ({folder / MANIFEST})")
            return done
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MANIFEST).unlink(missing_ok=True)
        built = build(folder)
        manifest = Manifest(
            stage=stage,
            recipe=self.recipe.name,
            params=params,
            inputs=inputs,
            counts=built.counts,
            balance=built.balance,
            info=built.info,
        )
        manifest = write_manifest(folder, manifest, built.outputs)
        self.log(f"{stage}: {json.dumps(manifest.counts)} -> {folder}")
        return manifest

    def records(self, stage: str) -> list[TrialRecord]:
        run = json.loads((self.folder(stage) / "run.json").read_text())
        return ResultsStore(self.recipe.store_url).trials(run["run_id"])

    # --- stages ---------------------------------------------------------------------------
    def collect(self) -> Manifest:
        """Stage 1: the teacher on the train split, `samples` trajectories per task."""
        settings = self.recipe.collect
        return self._stage("collect", settings.model_dump(mode="json"), {}, lambda f: self._run(f, settings))

    def collect_critic(self, critic: Path | None = None) -> Manifest:
        """Stage 5: the policy with the trained critic (`critic`, a checkpoint; default: the
        train-critic stage's model) served and in the loop."""
        from castbench_cast.serving import CheckpointServer, checkpoint_name

        loop = self.recipe.collect_critic
        if critic is None:
            checkpoint = self.folder("train-critic") / "model"
            inputs = {"train-critic": self.manifest("train-critic").digest}
        else:
            checkpoint = Path(critic).resolve()
            inputs = {"critic": checkpoint_name(checkpoint)}

        def build(folder: Path) -> _Built:
            with CheckpointServer(checkpoint, loop.serve, loop.port, loop.gpu_memory) as server:
                spec = server.model_string(temperature=0, max_tokens=loop.max_tokens or server.answer_tokens)
                return self._run(folder, loop, spec, loop.rounds, server.models_config("critic"))

        return self._stage("collect-critic", loop.model_dump(mode="json"), inputs, build)

    def _run(
        self,
        folder: Path,
        settings: CollectStage,
        critic: str = "none",
        rounds: int = 3,
        models_config: dict[str, dict[str, Any]] | None = None,
    ) -> _Built:
        from castbench import evaluate
        from castbench.domain import Verification

        result = evaluate(
            db=self.recipe.store_url,
            domains=settings.domains,
            split=settings.split,
            tasks=_task_ids(settings),
            policy=with_temperature(settings.policy, settings.temperature),
            critic=critic,
            user=settings.user,
            trials=settings.samples,
            seed=settings.seed,
            concurrency=settings.concurrency,
            verification=Verification(rounds=rounds),
            models_config=models_config,
        )
        run_id = result.outcome.run_id
        records = ResultsStore(self.recipe.store_url).trials(run_id)
        (folder / "run.json").write_text(
            json.dumps({"run_id": run_id, "db": self.recipe.store_url, "trials_sha256": trials_hash(records)})
        )
        proposals = [p for record in records for step in record.steps for p in step.proposals]
        labels = Counter(p.label.label if p.label else "none" for p in proposals)
        verdicts = Counter(p.verdict.verdict if p.verdict else "none" for p in proposals)
        unreadable = sum(p.verdict is not None and p.verdict.parse_error is not None for p in proposals)
        if unreadable:
            self.log(
                f"warning: {unreadable} of {verdicts.total() - verdicts['none']} critic verdicts were "
                f"unreadable and counted as passes"
            )
        return _Built(
            outputs=["run.json"],
            counts={
                "trials": len(records),
                "passed": sum(record.passed for record in records),
                "tasks": len({(r.domain, r.task_id) for r in records}),
                "proposals": len(proposals),
                "critic_verdicts": sum(p.verdict is not None for p in proposals),
                "critic_parse_errors": unreadable,
            },
            balance={
                "end_reason": dict(sorted(Counter(r.end_reason for r in records).items())),
                "label": dict(sorted(labels.items())),
                "critic_verdict": dict(sorted(verdicts.items())),
            },
            info={
                "run_id": run_id,
                "critic": critic,
                "unscored": result.outcome.unscored,
                "unparseable_verdict": "pass",  # what an unreadable verdict counted as (models.parse)
            },
        )

    def annotate(self) -> Manifest:
        settings = self.recipe.annotate
        upstream = self.manifest("collect")
        params, inputs = settings.model_dump(mode="json"), {"collect": upstream.digest}

        def build(folder: Path) -> _Built:
            records = self.records("collect")
            moments = list(annotated_moments(records))
            labeler = {a.key: a for a in (labeler_annotation(r, m) for r, m in moments)}
            write_annotations(folder / "annotations-labeler.jsonl", labeler.values())
            outputs = ["annotations-labeler.jsonl"]
            chosen = labeler
            counts: dict[str, int | float] = {"actions": len(labeler)}
            info: dict[str, Any] = {}
            if settings.llm:
                from castbench_cast.llm_annotator import AnnotatorStopped, LLMAnnotator

                annotator = LLMAnnotator(settings.llm)
                tasks = {
                    (r.domain, r.task_id): task
                    for r in records
                    for task in load_domain(r.domain).tasks()
                    if task.id == r.task_id
                }
                journal = folder / f"annotations-llm.journal-{key_of('annotate', params, inputs)[:12]}.jsonl"
                if self.force:
                    journal.unlink(missing_ok=True)
                items = [(load_domain(r.domain), tasks[(r.domain, r.task_id)], r, m) for r, m in moments]
                try:
                    llm, resumed = annotator.annotate_all(items, journal, settings.concurrency, self.log)
                except AnnotatorStopped as exc:
                    raise StageError(str(exc)) from exc
                write_annotations(folder / "annotations-llm.jsonl", llm.values())
                journal.unlink()
                agreed = agreement(labeler, llm)
                (folder / "agreement.json").write_text(agreed.model_dump_json(indent=2))
                outputs += ["annotations-llm.jsonl", "agreement.json"]
                counts |= {
                    "llm_calls": annotator.calls,
                    "llm_resumed": resumed,
                    "llm_unreadable": sum(a.parse_error is not None for a in llm.values()),
                }
                info["agreement"] = agreed.model_dump(mode="json")
                kappa = "n/a" if agreed.cohen_kappa is None else f"{agreed.cohen_kappa:.2f}"
                self.log(
                    f"annotate: labeler vs LLM on {agreed.actions} actions: verdicts agree "
                    f"{agreed.verdict_agreement:.1%}, Cohen's kappa {kappa}"
                )
                if settings.use == "llm":
                    chosen = llm
            elif settings.use == "llm":
                raise StageError("annotate: use = 'llm' needs [annotate] llm = '<model string>'")
            write_annotations(folder / "annotations.jsonl", chosen.values())
            return _Built(outputs + ["annotations.jsonl"], counts, balance(chosen.values()), info)

        return self._stage("annotate", params, inputs, build)

    def critic_data(self) -> Manifest:
        from castbench_cast.examples import balanced, critic_examples, write_examples

        settings = self.recipe.critic_data
        inputs = {"collect": self.manifest("collect").digest, "annotate": self.manifest("annotate").digest}

        def build(folder: Path) -> _Built:
            annotations = read_annotations(self.folder("annotate") / "annotations.jsonl")
            examples = critic_examples(self.records("collect"), annotations, settings.target)
            if settings.balance:
                examples = balanced(examples, settings.seed)
            return self._examples(folder, examples, write_examples)

        return self._stage("critic-data", settings.model_dump(mode="json"), inputs, build)

    def policy_data(self) -> Manifest:
        from castbench_cast.examples import policy_examples, write_examples

        settings = self.recipe.policy_data
        # RFT is the paper's control: the policy's own successes without a critic in the loop
        # (the collect stage), not the critic-assisted trajectories with their critiques removed
        origin = "collect" if settings.rft else settings.source
        source = origin.replace("_", "-")

        teacher = getattr(self.recipe, origin).policy
        if _privileged(teacher) and not settings.allow_privileged_teacher:
            raise StageError(
                f"policy-data: the trajectories come from '{teacher}', a privileged policy (it reads "
                f"the task); a policy trained on them learns answers it cannot know. Collect with a "
                f"model teacher, or set [policy_data] allow_privileged_teacher = true"
            )

        def build(folder: Path) -> _Built:
            examples = policy_examples(self.records(source), settings.rft)
            if not settings.rft and not examples.rows:
                message = (
                    f"policy-data: no successful trajectory of {source} holds a critique, so there is "
                    f"no CAST data (did the critic never flag, or never answer readably? see its "
                    f"manifest's critic_parse_errors)"
                )
                if settings.require_critiques:
                    raise StageError(message + "; set [policy_data] require_critiques = false to go on")
                self.log(
                    "warning: "
                    + message
                    + "; every success is kept, as RFT would (require_critiques = false)"
                )
                examples = policy_examples(self.records(source), settings.rft, critiqued_only=False)
                examples.counts["kept_without_critiques"] = examples.counts["trajectories"]
            return self._examples(folder, examples, write_examples)

        inputs = {source: self.manifest(source).digest}
        return self._stage(self._policy("policy-data"), settings.model_dump(mode="json"), inputs, build)

    def _policy(self, stage: str) -> str:
        """The policy stages' folder: RFT data and its model live apart from CAST's (`-rft`), so
        both can be trained from one recipe and compared."""
        return stage + ("-rft" if self.recipe.policy_data.rft else "")

    @staticmethod
    def _examples(folder: Path, examples: Any, write: Callable[[Path, Any], list[str]]) -> _Built:
        return _Built(
            outputs=write(folder, examples),
            counts={"examples": len(examples.rows), **examples.counts},
            balance={name: dict(sorted(counter.items())) for name, counter in examples.balance.items()},
        )

    def train_critic(self) -> Manifest:
        settings = self.recipe.train_critic
        return self._train("train-critic", "critic-data", settings, settings.verdict_weight)

    def train_policy(self) -> Manifest:
        return self._train(
            self._policy("train-policy"), self._policy("policy-data"), self.recipe.train_policy
        )

    def _train(self, stage: str, data: str, settings: TrainStage, verdict_weight: float = 0.0) -> Manifest:
        from castbench_cast.train import train

        inputs = {data: self.manifest(data).digest}
        params = settings.model_dump(mode="json")

        def build(folder: Path) -> _Built:
            figures = train(
                self.folder(data),
                folder,
                settings,
                key_of(stage, params, inputs),
                not self.force,
                verdict_weight,
            )
            shown = (
                "examples",
                "steps",
                "truncated",
                "dropped_policy",
                "skipped_long_target",
                "skipped_no_fit",
            )
            return _Built(["model"], counts={name: figures[name] for name in shown}, info=figures)

        return self._stage(stage, params, inputs, build)

    def run(self, until: str | None = None) -> list[Manifest]:
        """Every stage in order (up to and including `until`)."""
        steps: dict[str, Callable[[], Manifest]] = {
            "collect": self.collect,
            "annotate": self.annotate,
            "critic-data": self.critic_data,
            "train-critic": self.train_critic,
            "collect-critic": self.collect_critic,
            "policy-data": self.policy_data,
            "train-policy": self.train_policy,
        }
        done = []
        for stage in STAGES:
            done.append(steps[stage]())
            if stage == until:
                break
        return done
