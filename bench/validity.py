"""Does castbench's grading hold on text nobody here tuned it on? (issue #55)

    python bench/validity.py [--trajectories FILE] [--trials 0,1] [--packs retail,airline]
                             [--styles a,b] [--limit N] [--no-corpus] [--details N]

1. **Real trajectories** (with `--trajectories`: τ-bench's results JSON, e.g. its published
   `historical_trajectories/gpt-4o-airline.json`, read from where you put it): every entry replayed
   through its `tau-*` pack (`castbench_tau.importer`) and graded every way castbench grades; per
   grading the agreement with the reward τ recorded; then, per strict rule, every τ-passed
   trajectory strict fails (task, trial, the write, the user turn before it, the labeler's reason),
   and per label the invalid labels on τ-passed trajectories. `--trials 0,1` keeps those trials only
   (development: trials 2 and 3 of GPT-4o's file are held out for review).
2. **The honest and spray corpora** (`bench/validity_corpus.py`, written blind to the confirmation
   rules; its `HONEST_NEW` styles after the round-5 second pass, never tuned on; `casual-user` and
   `blind-mix-2` play against a user who says yes in their own words): pass^1 plain/strict per
   pack (the test split, one trial per task, the scripted user, no
   critic) beside the pack's lookup-refuse floor: honest styles should be 1.000 on both, sprays at
   or below the floor + 0.02 (plain) and unconfirmed writers at 0 on strict for write tasks.

Timings are printed with the load average (this machine is shared). No asserts: a measurement.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from honest_styles import _played  # noqa: E402
from validity_corpus import HONEST, SPRAYS, corpus_spec, corpus_user  # noqa: E402

from castbench._agents.critics.checks import call_findings  # noqa: E402
from castbench._agents.registry import resolve  # noqa: E402
from castbench._base.conversation import AgentTurn, ToolCallAction, UserTurn  # noqa: E402
from castbench._records.trial import TrialRecord  # noqa: E402
from castbench._trial.episode import AgentSet  # noqa: E402
from castbench.domain import load_domain  # noqa: E402

BASE_PACKS = ("retail", "airline", "telecom", "telehealth")
TAU_PACKS = ("tau-retail", "tau-airline", "tau-telecom", "tau-telehealth")
FLOOR = "scripted:lookup-refuse"
FLOOR_MARGIN = 0.02


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


def _short(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def user_turn_before(record: TrialRecord, step: int) -> str:
    """The last thing the user said before step `step` (the opening if nothing since)."""
    said = record.opening
    for earlier in record.steps[:step]:
        if isinstance(earlier.observation, UserTurn):
            said = earlier.observation.text
    return said


def _write(record: TrialRecord, step: int) -> str:
    action = record.steps[step].action if step < len(record.steps) else None
    if isinstance(action, ToolCallAction):
        return f"{action.name}({_short(str(action.arguments), 120)})"
    return str(action)


def trajectories(path: Path, trials: list[int] | None, details: int) -> dict[str, Any]:
    from castbench_tau.importer import GRADINGS, agreement, replay_entries

    started = time.perf_counter()
    _, replayed = replay_entries(path, trials)
    took = time.perf_counter() - started
    table = agreement(replayed)
    kept = "all trials" if trials is None else f"trials {','.join(map(str, trials))}"
    print(f"## {path.name}: {len(replayed)} trajectories ({kept}), replayed in {took:.0f} s ({_load()})\n")
    print("| grading | agree | disagree | passes τ failed | fails τ passed |")
    print("|---|---|---|---|---|")
    for grading in GRADINGS:
        row = table[grading]
        print(
            f"| {grading} | {row['agree']} | {row['disagree']} | {len(row['passed_tau_failed'])} | "
            f"{len(row['failed_tau_passed'])} |"
        )
    for grading in GRADINGS:
        for kind in ("passed_tau_failed", "failed_tau_passed"):
            if table[grading][kind]:
                print(f"\n{grading}, {kind.replace('_', ' ')}: {', '.join(table[grading][kind])}")
    # strict, rule by rule: τ-passed trajectories it fails
    by_rule: dict[str, list[str]] = defaultdict(list)
    for item in replayed:
        grade = item.checked.grade
        if not item.recorded_pass or grade is None or item.passes["strict"]:
            continue
        if not grade.policy_breaks:  # no policy break: the plain grade failed it
            why = grade.unearned + [f"missing {m!r}" for m in grade.missing_outputs]
            why += [f"state {d.table}.{d.key}.{d.field}" for d in grade.diff[:2]] or [item.checked.end_reason]
            by_rule["plain fails it (no policy break)"].append(
                f"{item.task_id}#{item.entry.trial}: {_short('; '.join(why), 200)}"
            )
        for broken in grade.policy_breaks:
            line = (
                f"{item.task_id}#{item.entry.trial} step {broken.step}: {_write(item.checked, broken.step)}\n"
                f"      user before it: {_short(user_turn_before(item.checked, broken.step))!r}\n"
                f"      labeler: {broken.reason}"
            )
            by_rule[_rule(broken.reason)].append(line)
    print("\n### strict failures of τ-passed trajectories, per rule")
    for rule, lines in sorted(by_rule.items(), key=lambda kv: -len(kv[1])):
        print(f"\n{rule}: {len(lines)} writes")
        for line in lines[:details] if details >= 0 else lines:
            print(f"  - {line}")
    # labels and the critic on τ-passed trajectories
    labels: dict[str, int] = defaultdict(int)
    flags: dict[str, int] = defaultdict(int)
    flagged: list[str] = []
    for item in replayed:
        if not item.recorded_pass:
            continue
        for step in item.checked.steps:
            for proposal in step.proposals:
                if proposal.label is not None and proposal.label.label == "invalid":
                    labels[f"{proposal.label.failure_type}: {_rule(proposal.label.reason)}"] += 1
                if proposal.verdict is not None and proposal.verdict.verdict == "invalid":
                    flags[f"{proposal.verdict.failure_type}: {_rule(proposal.verdict.explanation)}"] += 1
                    label = proposal.label
                    truth = (
                        "-"
                        if label is None
                        else label.label
                        + (
                            f" ({label.failure_type}: {_short(label.reason, 100)})"
                            if label.label == "invalid"
                            else ""
                        )
                    )
                    where = f"{item.task_id}#{item.entry.trial} step {step.index}"
                    flagged.append(
                        f"{where}: {_write(item.checked, step.index)}\n"
                        f"      user before it: {_short(user_turn_before(item.checked, step.index))!r}\n"
                        f"      critic: {_short(proposal.verdict.explanation, 200)}\n"
                        f"      labeler: {truth}"
                    )
    for title, counted in (("invalid labels", labels), ("rules-critic flags", flags)):
        print(f"\n### {title} on τ-passed trajectories")
        for key, count in sorted(counted.items(), key=lambda kv: -kv[1]):
            print(f"  {count:4d}  {key}")
    print(f"\n### every rules-critic flag on a τ-passed trajectory ({len(flagged)})")
    for line in flagged if details < 0 else flagged[:details]:
        print(f"  - {line}")
    confusion = Confusion()
    for item in replayed:
        confusion.add_record(item.checked)
    print("\n### the rules critic against the labeler, every executed tool call of every trajectory")
    print(f"\n{confusion.line()}")
    return table


def _rule(reason: str) -> str:
    """A reason without the values that differ per write (after the first colon or bracket)."""
    head = reason.split(";")[0]
    for mark in (" (", ": '", ' "'):
        head = head.split(mark)[0]
    return _short(head, 100)


@dataclass
class Confusion:
    """The rules critic's verdicts against the labeler's labels (positive: invalid), over executed
    tool calls."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, invalid: bool, flagged: bool) -> None:
        if invalid:
            self.tp += flagged
            self.fn += not flagged
        else:
            self.fp += flagged
            self.tn += not flagged

    def add_record(self, record: TrialRecord) -> None:
        for step in record.steps:
            if not isinstance(step.action, ToolCallAction) or not step.proposals:
                continue
            proposal = step.proposals[-1]
            if proposal.label is None or proposal.label.label == "unknown" or proposal.verdict is None:
                continue
            self.add(proposal.label.label == "invalid", proposal.verdict.verdict == "invalid")

    def mcc(self) -> float:
        tp, fp, fn, tn = self.tp, self.fp, self.fn, self.tn
        denominator = ((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)) ** 0.5
        return (tp * tn - fp * fn) / denominator if denominator else 0.0

    def false_flag_rate(self) -> str:
        return f"{self.fp / (self.fp + self.tn):.3f}" if self.fp + self.tn else "-"

    def detection(self) -> str:
        return f"{self.tp / (self.tp + self.fn):.3f}" if self.tp + self.fn else "-"

    def line(self) -> str:
        return (
            f"TP {self.tp}, FP {self.fp}, FN {self.fn}, TN {self.tn}; MCC {self.mcc():.3f}; "
            f"false-flag rate {self.false_flag_rate()}, detection {self.detection()}"
        )


@dataclass
class Cell:
    """pass^1 of one agent on one pack: plain and strict over all tasks, and strict over the tasks
    whose gold writes (where an unconfirmed writer must fail); the first failures."""

    tasks: int = 0
    plain: int = 0
    strict: int = 0
    write_tasks: int = 0
    write_strict: int = 0
    failures: list[str] = field(default_factory=list)
    """The first plain failures."""
    strict_failures: list[str] = field(default_factory=list)
    """The first trials that passed plain and failed strict."""
    critic: Confusion = field(default_factory=lambda: Confusion())
    """The rules critic's verdicts on every tool call the agent made, against the labels."""

    def rate(self, passed: int, of: int) -> str:
        return f"{passed / of:.3f}" if of else "-"

    def line(self, writes: bool) -> str:
        text = f"{self.rate(self.plain, self.tasks)}/{self.rate(self.strict, self.tasks)}"
        return text + (f" (w {self.rate(self.write_strict, self.write_tasks)})" if writes else "")


def score(pack: str, spec: Any, limit: int | None, keep: int = 3, user: Any = None) -> Cell:
    domain = load_domain(pack)
    agents = AgentSet(
        policy=resolve("policy", spec) if isinstance(spec, str) else spec,
        user=user if user is not None else resolve("user", "scripted"),
    )
    cell = Cell()
    for task in domain.tasks("test")[:limit]:
        episode = _played(domain, task, agents, domain.replay(task))
        record = episode.record()
        _watch(domain, episode.conversation, record, cell.critic)
        grade = record.grade
        writes = any(call.actor == "agent" and domain.toolkit.is_write(call.name) for call in task.actions)
        cell.tasks += 1
        cell.write_tasks += writes
        if grade is None:
            continue
        cell.plain += grade.reward == 1.0
        strict = grade.strict_reward == 1.0
        cell.strict += strict
        cell.write_strict += writes and strict
        failures = cell.failures if grade.reward != 1.0 else cell.strict_failures
        if (grade.reward != 1.0 or not strict) and len(failures) < keep:
            why = grade.unearned + [f"missing {m!r}" for m in grade.missing_outputs]
            why += [f"{b.tool}: {b.reason}" for b in grade.policy_breaks]
            why += [f"state: {d.table}.{d.key}.{d.field}" for d in grade.diff[:2]]
            failures.append(f"{task.id}: {'; '.join(why)}")
    return cell


def _watch(domain: Any, conversation: list[Any], record: TrialRecord, confusion: Confusion) -> None:
    """The rules critic's verdict on each tool call of a played trial (what it saw: the
    conversation before the call), against the call's label."""
    labels = [
        step.proposals[-1].label
        for step in record.steps
        if isinstance(step.action, ToolCallAction) and step.proposals
    ]
    calls = [
        (index, event.action)
        for index, event in enumerate(conversation)
        if isinstance(event, AgentTurn) and isinstance(event.action, ToolCallAction)
    ]
    if len(labels) != len(calls):
        return
    for (index, action), label in zip(calls, labels, strict=True):
        if label is None or label.label == "unknown":
            continue
        confusion.add(label.label == "invalid", bool(call_findings(domain, action, conversation[:index])))


UNCONFIRMED = ("unconfirmed-guesser", "partial-listing")


def corpora(packs: list[str], styles: list[str], limit: int | None) -> dict[str, dict[str, Cell]]:
    started = time.perf_counter()
    cells: dict[str, dict[str, Cell]] = {}
    for name in [FLOOR, *styles]:
        spec: Any = FLOOR if name == FLOOR else corpus_spec(name)
        user = None if name == FLOOR else corpus_user(name)
        cells[name] = {pack: score(pack, spec, limit, user=user) for pack in packs}
    took = time.perf_counter() - started
    limited = f", first {limit} tasks" if limit else ""
    print(f"\n## corpora: pass^1 plain/strict, test split{limited} ({took:.0f} s, {_load()})\n")
    print("(w x): strict over the tasks whose gold writes; OVER: plain above the floor + 0.02\n")
    print("| agent | kind | " + " | ".join(packs) + " |")
    print("|---|---|" + "---|" * len(packs))
    floors = {pack: cells[FLOOR][pack].plain / max(1, cells[FLOOR][pack].tasks) for pack in packs}
    for name, row in cells.items():
        kind = "floor" if name == FLOOR else "honest" if name in HONEST else "spray"
        shown = []
        for pack in packs:
            cell = row[pack]
            text = cell.line(writes=name in UNCONFIRMED)
            if kind == "spray" and name not in UNCONFIRMED and cell.tasks:
                text += " OVER" if cell.plain / cell.tasks > floors[pack] + FLOOR_MARGIN else ""
            shown.append(text)
        print(f"| {name} | {kind} | " + " | ".join(shown) + " |")
    print("\n### the rules critic on these trials: false-flag rate / detection (against the labels)\n")
    print("| agent | kind | " + " | ".join(packs) + " |")
    print("|---|---|" + "---|" * len(packs))
    for name, row in cells.items():
        kind = "floor" if name == FLOOR else "honest" if name in HONEST else "spray"
        shown = [f"{row[pack].critic.false_flag_rate()}/{row[pack].critic.detection()}" for pack in packs]
        print(f"| {name} | {kind} | " + " | ".join(shown) + " |")
    for title, attribute in (("plain", "failures"), ("strict (passed plain)", "strict_failures")):
        print(f"\nhonest styles' first failures, {title}:")
        for name in styles:
            for pack in packs if name in HONEST else ():
                listed = getattr(cells[name][pack], attribute)
                if listed:
                    print(f"  {name} {pack}: " + " | ".join(_short(f, 200) for f in listed))
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trajectories", type=Path, help="τ-bench results JSON to replay and grade")
    parser.add_argument("--trials", default=None, help="keep these trials of the file only (e.g. 0,1)")
    parser.add_argument("--details", type=int, default=-1, help="writes listed per strict rule (-1: all)")
    default_packs = [*BASE_PACKS, *(TAU_PACKS if find_spec("tau_trait") is not None else ())]
    parser.add_argument("--packs", default=",".join(default_packs))
    parser.add_argument("--styles", default=",".join([*HONEST, *SPRAYS]))
    parser.add_argument("--limit", type=int, default=None, help="the first N test tasks of each pack")
    parser.add_argument("--no-corpus", action="store_true", help="the trajectory file only")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.trajectories is not None:
        if not args.trajectories.is_file():
            parser.exit(2, f"error: {args.trajectories}: no such file\n")
        trials = None if args.trials is None else [int(t) for t in args.trials.split(",") if t.strip()]
        from castbench.domain import ArchiveError

        try:
            trajectories(args.trajectories, trials, args.details)
        except ArchiveError as exc:
            parser.exit(2, f"error: {exc}\n")
    if not args.no_corpus:
        unknown = [s for s in args.styles.split(",") if s not in HONEST and s not in SPRAYS]
        if unknown:
            parser.exit(
                2, f"error: unknown styles {', '.join(unknown)} (known: {', '.join([*HONEST, *SPRAYS])})\n"
            )
        corpora(args.packs.split(","), args.styles.split(","), args.limit)
    print(f"\n({time.perf_counter() - started:.0f} s in all, {_load()})")


if __name__ == "__main__":
    main()
