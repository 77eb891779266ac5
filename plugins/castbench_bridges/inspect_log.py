"""A castbench run as an Inspect AI eval log (`castbench export RUN --format inspect`).

Evaluation teams read results in Inspect's log viewer (`inspect view`); this writes a run in the
log format Inspect's own reader (`inspect_ai.log.read_eval_log`) loads, built from Inspect's own
models so the file is what Inspect would write:

- one sample per trial: id `domain/task`, epoch `trial + 1` (Inspect's epochs are a task's
  repeated trials, so its per-sample views group a task's trials as pass^k does);
- its messages: the customer's opening, then every step — the executed tool calls with their
  results, the replies with the customer's answers, and each proposal the critic rejected with
  the critique (a rejected tool call shows as a tool result that is an error: it never ran);
- its scores: `reward`, `pass` (1 when the trial succeeded), `strict_pass` (1 when it also broke
  no policy; absent where the trial was not graded strictly) and, when a critic verified actions,
  `critic` (its verdicts counted against the labeler's truth, each verdict in the metadata);
  a trial left unscored (an infrastructure or harness error) is a sample with an error and no
  scores, as Inspect shows a sample that failed;
- its metadata: domain, task, trial, seed, domain version, end reason, failure category.

The log's results hold each score's mean over scored trials and castbench's own pass^k (plain
and strict) as metrics, so the headline matches `castbench runs show`; the run's config and
provenance are the eval's metadata. Needs the `bridges` extra (inspect-ai).
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from castbench._base.conversation import (
    MalformedAction,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    Usage,
    UserTurn,
    Verdict,
)
from castbench._base.version import __version__
from castbench._records.store.export import ArchiveError, ExportedRun, RunFormat, StoredTrials
from castbench._records.trial import StepRecord, TrialRecord
from castbench._results.report.summary import RunSummary, summarize_run
from castbench_bridges._spooled_zip import SpooledZipFile

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.model import ChatMessage, ModelUsage

__all__ = ["INSPECT", "INSPECT_SUFFIXES", "inspect_log", "trial_scores", "write_inspect_log"]

INSPECT_SUFFIXES = (".eval", ".json")
"""Inspect's two log formats, chosen by the file's suffix as Inspect does."""


def _inspect() -> Any:
    try:
        import inspect_ai.log as log
    except ImportError as exc:
        raise ArchiveError(
            "exporting as an Inspect log needs inspect-ai: pip install -e '.[bridges]'"
        ) from exc
    return log


def trial_scores(record: TrialRecord) -> dict[str, float | dict[str, int]]:
    """A scored trial's Inspect scores by name (the values `inspect_log` writes); empty for an
    unscored one."""
    if record.status != "scored":
        return {}
    scores: dict[str, float | dict[str, int]] = {
        "reward": float(record.reward or 0.0),
        "pass": 1.0 if record.passed else 0.0,
    }
    strict = record.strict_passed
    if strict is not None:
        scores["strict_pass"] = 1.0 if strict else 0.0
    verdicts = _verdicts(record)
    if verdicts:
        scores["critic"] = _critic_counts(verdicts)
    return scores


def _verdicts(record: TrialRecord) -> list[tuple[int, int, Verdict, str | None]]:
    """(step, round, verdict, the labeler's label) of every proposal a critic judged."""
    return [
        (step.index, proposal.round, proposal.verdict, proposal.label.label if proposal.label else None)
        for step in record.steps
        for proposal in step.proposals
        if proposal.verdict is not None
    ]


def _critic_counts(verdicts: list[tuple[int, int, Verdict, str | None]]) -> dict[str, int]:
    """The critic's verdicts on one trial, against the labeler's truth where it has one."""
    flagged = [label for _, _, verdict, label in verdicts if verdict.flags]
    passed = [label for _, _, verdict, label in verdicts if not verdict.flags]
    return {
        "verified": len(verdicts),
        "flagged": len(flagged),
        "true_flags": sum(label == "invalid" for label in flagged),
        "false_flags": sum(label == "valid" for label in flagged),
        "missed": sum(label == "invalid" for label in passed),
    }


def _messages(record: TrialRecord, model: str) -> list[ChatMessage]:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall, ToolCallError

    messages: list[ChatMessage] = [ChatMessageUser(content=record.opening, source="input")]

    def tool_call(action: ToolCallAction, call_id: str) -> ToolCall:
        if isinstance(action.arguments, dict):
            return ToolCall(id=call_id, function=action.name, arguments=action.arguments)
        return ToolCall(id=call_id, function=action.name, arguments={}, parse_error=action.arguments)

    def say(action: Any, call_id: str, **metadata: Any) -> None:
        extra = {"metadata": metadata} if metadata else {}
        if isinstance(action, ToolCallAction):
            messages.append(
                ChatMessageAssistant(
                    content=action.text, tool_calls=[tool_call(action, call_id)], model=model, **extra
                )
            )
        elif isinstance(action, ReplyAction):
            messages.append(ChatMessageAssistant(content=action.text, model=model, **extra))
        elif isinstance(action, MalformedAction):
            messages.append(
                ChatMessageAssistant(
                    content=action.raw, model=model, metadata={**metadata, "malformed": action.reason}
                )
            )

    for step in record.steps:
        _step(step, say, messages, ChatMessageTool, ChatMessageUser, ToolCallError)
    return messages


def _step(step: StepRecord, say: Any, messages: list[Any], tool: Any, user: Any, error: Any) -> None:
    """One step's messages: rejected proposals with their critiques, then what executed."""
    executed = step.action
    rejected = step.proposals if executed is None else step.proposals[:-1]
    for proposal in rejected:
        verdict = proposal.verdict or Verdict(verdict="invalid")
        call_id = f"step{step.index}-r{proposal.round}"
        critique = f"[critic rejected, not executed] {verdict.failure_type}: {verdict.explanation}"
        say(proposal.action, call_id, critic=verdict.model_dump(mode="json", exclude={"usage"}))
        if isinstance(proposal.action, ToolCallAction):
            messages.append(
                tool(
                    content=critique,
                    tool_call_id=call_id,
                    function=proposal.action.name,
                    error=error(type="approval", message=critique),
                )
            )
        else:
            messages.append(user(content=critique, metadata={"castbench_role": "critic"}))
    if executed is None:
        return
    observation = step.observation
    call_id = observation.call_id if isinstance(observation, ToolResultTurn) else f"step{step.index}"
    say(executed, call_id)
    if isinstance(observation, ToolResultTurn):
        messages.append(
            tool(
                content=observation.content,
                tool_call_id=observation.call_id,
                function=observation.name,
                error=error(type="unknown", message=observation.content) if observation.error else None,
            )
        )
    elif isinstance(observation, UserTurn):
        messages.append(user(content=observation.text))


def _usage(usage: Usage) -> ModelUsage:
    from inspect_ai.model import ModelUsage

    return ModelUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.input_tokens + usage.output_tokens,
        total_cost=usage.cost,
    )


def _sample(record: TrialRecord, model: str) -> EvalSample:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    log = _inspect()
    messages = _messages(record, model)
    replies = [m.text for m in messages if m.role == "assistant" and not m.tool_calls]
    grade = record.grade
    scores: dict[str, Score] = {}
    for name, value in trial_scores(record).items():
        explanation: str | None = None
        metadata: dict[str, Any] | None = None
        if name == "reward" and grade is not None:
            explanation = grade.failure_category or ("passed" if record.passed else record.end_reason)
        if name == "strict_pass" and grade is not None and grade.policy_breaks:
            explanation = "; ".join(f"step {b.step} {b.tool}: {b.reason}" for b in grade.policy_breaks)
        if name == "critic":
            metadata = {
                "verdicts": [
                    {"step": s, "round": r, "label": label, **v.model_dump(mode="json", exclude={"usage"})}
                    for s, r, v, label in _verdicts(record)
                ]
            }
        scores[name] = Score(value=value, explanation=explanation, metadata=metadata)
    return EvalSample(
        id=f"{record.domain}/{record.task_id}",
        epoch=record.trial_index + 1,
        input=record.opening,
        target="",
        messages=messages,
        output=ModelOutput.from_content(model=model, content=replies[-1] if replies else ""),
        scores=scores or None,
        metadata={
            "domain": record.domain,
            "task": record.task_id,
            "trial": record.trial_index,
            "seed": record.seed,
            "domain_version": record.domain_version,
            "end_reason": record.end_reason,
            "status": record.status,
            "failure_category": grade.failure_category if grade is not None else None,
            "steps": len(record.steps),
            "attempts": record.attempts,
        },
        role_usage={role: _usage(usage) for role, usage in record.usage.items()},
        total_time=record.duration_s,
        error=(
            None
            if record.status == "scored"
            else log.EvalError(message=record.error or record.end_reason, traceback="", traceback_ansi="")
        ),
    )


class _Tally:
    """What the log's header takes from every trial, gathered as the trials are read once: the
    scores' counts and sums, the domains' versions, the tasks and the roles' usage."""

    def __init__(self) -> None:
        self.total = 0
        self.scored = 0
        self.values: dict[str, int] = {}
        self.sums: dict[str, float] = {}
        self.numbers: dict[str, int] = {}
        self.counts: dict[str, dict[str, int]] = {}
        self.versions: dict[str, str] = {}
        self.task_ids: set[str] = set()
        self.role_usage: dict[str, Usage] = {}

    def add(self, record: TrialRecord) -> None:
        self.total += 1
        self.versions[record.domain] = record.domain_version
        self.task_ids.add(f"{record.domain}/{record.task_id}")
        for role, usage in record.usage.items():
            self.role_usage[role] = self.role_usage.get(role, Usage()) + usage
        if record.status != "scored":
            return
        self.scored += 1
        for name, value in trial_scores(record).items():
            self.values[name] = self.values.get(name, 0) + 1
            if isinstance(value, float):
                self.sums[name] = self.sums.get(name, 0.0) + value
                self.numbers[name] = self.numbers.get(name, 0) + 1
            else:  # the critic's counts: summed over trials, keyed as the first trial's
                summed = self.counts.setdefault(name, dict.fromkeys(value, 0))
                for key in summed:
                    summed[key] += value[key]


def _results(summary: RunSummary, tally: _Tally) -> Any:
    """Each score's mean over scored trials, with castbench's pass^k beside the pass scores."""
    log = _inspect()
    overall = summary.overall
    extra: dict[str, dict[int, float]] = {"pass": overall.pass_hat}
    if overall.strict is not None:
        extra["strict_pass"] = overall.strict.pass_hat
    scores = []
    for name in ("reward", "pass", "strict_pass", "critic"):
        values = tally.values.get(name, 0)
        if not values:
            continue
        metrics: dict[str, Any] = {}
        if tally.numbers.get(name):
            metrics["mean"] = log.EvalMetric(name="mean", value=tally.sums[name] / tally.numbers[name])
        for key, total in tally.counts.get(name, {}).items():
            metrics[key] = log.EvalMetric(name=key, value=total)
        for k, value in extra.get(name, {}).items():
            label = f"pass^{k}" if name == "pass" else f"strict pass^{k}"
            metrics[label] = log.EvalMetric(name=label, value=value)
        scores.append(
            log.EvalScore(
                name=name,
                scorer=f"castbench/{name}",
                scored_samples=values,
                unscored_samples=tally.total - values,
                metrics=metrics,
            )
        )
    return log.EvalResults(
        total_samples=tally.total,
        completed_samples=tally.scored,
        scores=scores,
        metadata={"castbench_status": summary.status, "headline": summary.headline.model_dump(mode="json")}
        if summary.headline
        else {"castbench_status": summary.status},
    )


_STATUS = {"complete": "success", "failed": "error", "interrupted": "cancelled", "stopped": "cancelled"}


def _ordered(exported: ExportedRun) -> Iterable[TrialRecord]:
    """The trials by domain, task and trial: a stored run's as the store gives them (one at a
    time, in that order), a list's sorted."""
    if isinstance(exported.trials, StoredTrials):
        return exported.trials
    return sorted(exported.trials, key=lambda r: (r.domain, r.task_id, r.trial_index))


def _header(exported: ExportedRun, records: Iterable[TrialRecord]) -> EvalLog:
    """The log without its samples, from one pass over `records` (in the log's order)."""
    log = _inspect()
    config = exported.config
    tally = _Tally()

    def tallied() -> Iterator[TrialRecord]:
        for record in records:
            tally.add(record)
            yield record

    walked = tallied()
    summary = summarize_run(exported.run_id, config, walked, exported.status)
    for _ in walked:  # what the summary left unread, if anything
        pass
    created = (
        exported.created.isoformat() if isinstance(exported.created, datetime) else str(exported.created)
    )
    task_ids = sorted(tally.task_ids)
    spec = log.EvalSpec(
        run_id=exported.run_id,
        created=created,
        task="castbench/" + "+".join(sorted(config.domains)),
        task_id=exported.config_hash[:22],
        task_version=",".join(f"{d}@{v}" for d, v in sorted(tally.versions.items())),
        task_args={"split": config.split, "critic": config.critic, "user": config.user},
        solver=config.policy,
        dataset=log.EvalDataset(name=config.split, samples=len(task_ids), sample_ids=task_ids),
        model=_model(exported),
        config=log.EvalConfig(epochs=config.trials),
        packages={"castbench": __version__},
        metadata={
            "castbench_run": exported.run_id,
            "config_hash": exported.config_hash,
            "config": config.model_dump(mode="json"),
            "provenance": exported.meta.get("provenance"),
            "origin": exported.meta.get("origin"),
        },
    )
    return log.EvalLog(  # type: ignore[no-any-return]
        status=_STATUS.get(summary.status, "started"),
        eval=spec,
        results=_results(summary, tally),
        stats=log.EvalStats(
            started_at=created,
            completed_at=created,
            role_usage={role: _usage(usage) for role, usage in tally.role_usage.items()},
        ),
    )


def _model(exported: ExportedRun) -> str:
    return f"castbench/{exported.config.policy}"


def inspect_log(exported: ExportedRun) -> EvalLog:
    """The run as an Inspect `EvalLog` (samples ordered by domain, task and trial), held whole:
    `write_inspect_log` writes a `.eval` log without holding it."""
    records = list(_ordered(exported))
    header = _header(exported, records)
    model = _model(exported)
    return header.model_copy(update={"samples": [_sample(record, model) for record in records]})


def _write_eval_zip(exported: ExportedRun, target: Path) -> None:
    """The run's `.eval` log written as Inspect's recorder lays it out (`_journal/start.json`, a
    member per sample, `summaries.json`, `header.json`, zstd-compressed), one sample at a time:
    the trials are read twice (the header's figures, then the samples) and neither the records
    nor the samples are held; the samples' summaries wait in a temporary file, the zip's
    directory in another (`SpooledZipFile`), and each member is zstd-compressed in one thread
    (#59). Inspect's
    own writer holds the log and filters its buffered samples at every sample it is handed
    (quadratic: 11.3 -> 13.0 ms a trial from 1k to 10k trials)."""
    from inspect_ai._util.constants import LOG_SCHEMA_VERSION
    from inspect_ai._util.json import to_json_safe
    from inspect_ai._util.zipfile import zipfile_compress_kwargs
    from inspect_ai.log._condense import condense_sample
    from inspect_ai.log._recorders.eval import (
        HEADER_JSON,
        START_JSON,
        SUMMARIES_JSON,
        LogStart,
        _journal_path,
        _sample_filename,
    )

    header = _header(exported, _ordered(exported))
    model = _model(exported)
    # one-threaded zstd where Inspect compresses with zstd (its only method at 0.3.285)
    zstd = zipfile_compress_kwargs.get("compression") == getattr(zipfile, "ZIP_ZSTANDARD", None)
    compressor = _zstd_compressor if zstd else None
    partial = target.with_name(f".{target.name}.part")  # renamed once whole
    try:
        with (
            SpooledZipFile(partial, compressor=compressor, **zipfile_compress_kwargs) as archive,
            tempfile.TemporaryFile("w+b") as summaries,
        ):
            start = LogStart(version=LOG_SCHEMA_VERSION, eval=header.eval, plan=header.plan)
            archive.writestr(_journal_path(START_JSON), to_json_safe(start, indent=None))
            first = True
            for record in _ordered(exported):
                sample = condense_sample(_sample(record, model))
                archive.writestr(_sample_filename(sample.id, sample.epoch), to_json_safe(sample, indent=None))
                summaries.write((b"[" if first else b",") + to_json_safe(sample.summary(), indent=None))
                first = False
            summaries.write(b"[]" if first else b"]")
            summaries.seek(0)
            with archive.open(SUMMARIES_JSON, "w", force_zip64=True) as member:
                shutil.copyfileobj(summaries, member, 1 << 16)
            archive.writestr(HEADER_JSON, to_json_safe(header, indent=None))
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def _zstd_compressor() -> Any:
    """A member's zstd compressor: Inspect's level (3) and its cap on a frame's input (its viewer's
    decoder overflows on large frames), in one thread: Inspect's 12 threads buffer jobs of several
    MiB each, memory that grows with the largest member (the summaries, #59)."""
    import zstandard
    from inspect_ai._util import zipfile as inspect_zipfile

    def frame() -> Any:
        return zstandard.ZstdCompressor(level=3).compressobj()

    frames = getattr(inspect_zipfile, "_MultiFrameZstdCompressObj", None)
    return frames(frame) if frames is not None else frame()


def _sample_key(sample: EvalSample) -> tuple[int, str]:
    """Where Inspect's JSON recorder puts a sample (`sort_samples`): by epoch, then id."""
    return sample.epoch, sample.id if isinstance(sample.id, str) else str(sample.id).zfill(20)


def _write_json(exported: ExportedRun, target: Path) -> None:
    """The run's `.json` log, the bytes Inspect's JSON recorder writes of the log held whole
    (`to_json_safe` at indent 2, samples by epoch and id), written without holding it: the header
    once, then each sample, serialised as its trial is read, waits in a temporary file with its
    place in Inspect's order; the samples are then copied out in that order (#59). What stays in
    memory is a (key, offset, length) per sample."""
    from inspect_ai._util.json import to_json_safe

    header = _header(exported, _ordered(exported))
    model = _model(exported)
    # the header with no samples, split where Inspect's dump writes the top-level "samples" key
    # (a line of its own at indent 2: no string of a JSON dump holds a raw line break)
    marker = b'\n  "samples": []'
    head = to_json_safe(header.model_copy(update={"samples": []}))
    assert head.count(marker) == 1, "Inspect's log layout changed: no top-level samples key"
    before, after = head.split(marker)
    partial = target.with_name(f".{target.name}.part")  # renamed once whole
    try:
        with tempfile.TemporaryFile("w+b") as spooled, partial.open("wb") as out:
            places: list[tuple[tuple[int, str], int, int]] = []
            for record in _ordered(exported):
                sample = _sample(record, model)
                dumped = to_json_safe(sample).replace(b"\n", b"\n    ")
                places.append((_sample_key(sample), spooled.tell(), len(dumped)))
                spooled.write(dumped)
            places.sort(key=lambda place: place[0])
            out.write(before + b'\n  "samples": [' if places else before + marker)
            for index, (_, offset, length) in enumerate(places):
                spooled.seek(offset)
                out.write((b"\n    " if index == 0 else b",\n    ") + spooled.read(length))
            if places:
                out.write(b"\n  ]")
            out.write(after)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def write_inspect_log(exported: ExportedRun, target: Path) -> int:
    """Write the run's Inspect log to `target` (`.eval` or `.json`, as Inspect picks by suffix);
    its size in bytes."""
    if target.suffix not in INSPECT_SUFFIXES:
        raise ArchiveError(
            f"an Inspect log is a .eval or .json file, not '{target.name}' (--out log.eval or log.json)"
        )
    _inspect()  # one error line, naming the extra, where inspect_ai is missing
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.suffix == ".eval":
        _write_eval_zip(exported, target)
    else:
        _write_json(exported, target)
    return target.stat().st_size


INSPECT = RunFormat(".eval", write_inspect_log)
"""`castbench export --format inspect` (entry point `castbench.formats`; extra [bridges])."""
