"""The HTML page of one run: every task with its trials as pass/fail marks, and each trial's
conversation step by step with the critic's verdicts, the labels and the final state diff.

`render_run_page` writes one self-contained page (`castbench view`), its trials inside it.
`render_run_files` writes a page for a folder that is published (a board's `runs/`): the page
holds the task table and loads a trial's chunk of trajectories (`castbench_boards.viewer.payload`) from
a file beside it when the trial is opened, so no file is larger than `PAGE_LIMIT` however long
the run's conversations are (a floor agent's run was one 7.7 MB page).

Run-level text (ids, config) is rendered by Jinja2 with autoescaping; trajectories are rendered
in the browser from the embedded records with `textContent` only. Either way nothing a model,
a user simulator or a tool wrote is ever parsed as HTML.
"""

from __future__ import annotations

import io
import json
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from typing import Any, Final, TextIO

import jinja2

from castbench._records.config import RunConfig
from castbench._records.metrics.passk import reported_ks
from castbench._records.trial import TrialRecord
from castbench._results.report.summary import RunSummary, summarize_run
from castbench_analyses.branches import TrialBranches
from castbench_boards.viewer.payload import (
    CHUNK_BUDGET,
    StreamedChunk,
    encode_trials,
    trial_chunks,
    trial_payload,
)

__all__ = ["PAGE_LIMIT", "render_run_files", "render_run_page", "template_environment", "write_run_page"]

PAGE_LIMIT = 1_000_000
"""Bytes a published HTML page may have (a board's `index.html` and `runs/*.html`): what a
browser opens at once and git keeps in every commit that re-renders it. A run page is then its
task table, ~150 bytes a trial: some 6,500 trials."""


@cache
def template_environment(package: str) -> jinja2.Environment:
    """Templates of a castbench subpackage, always autoescaped, whitespace as written."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def _mark(
    index: int, error: bool, passed: bool, key: str, trial_index: int, category: str | None
) -> dict[str, Any]:
    """A trial's mark in the task table: its state, symbol, key and title."""
    if error:
        state, symbol, outcome = "error", "!", "error"
    elif passed:
        state, symbol, outcome = "pass", "✓", "pass"
    else:
        state, symbol, outcome = "fail", "✗", "fail"
    return {
        "index": index,
        "state": state,
        "symbol": symbol,
        "key": key,
        "title": f"trial {trial_index}: {outcome}" + (f" ({category})" if category else ""),
    }


def _figure(value: float | None, interval: tuple[float, float] | None = None) -> str:
    """`0.412 (0.30–0.55)`, `0.412` without an interval, `–` when undefined."""
    if value is None:
        return "–"
    return f"{value:.3f}" + ("" if interval is None else f" ({interval[0]:.2f}–{interval[1]:.2f})")


def _summary_table(summary: RunSummary, ks: list[int]) -> dict[str, Any]:
    """One column per domain (and overall), one row per k: narrow enough beside the tasks; the
    strict pass^k (no executed action broke the domain policy) under each plain one where the
    trials were graded strictly, and the critic's figures when a critic ran."""
    reports = list(summary.domains.items())
    if len(reports) > 1:
        reports.append(("overall", summary.overall))
    rows: list[dict[str, Any]] = [
        {"name": "tasks", "cells": [str(report.n_tasks) for _, report in reports], "kind": "count"}
    ]
    strict = any(report.strict is not None for _, report in reports)
    for k in ks:
        cells = [
            _figure(report.pass_hat[k], report.ci95[k]) if k in report.pass_hat else "–"
            for _, report in reports
        ]
        rows.append({"name": f"pass^{k}", "cells": cells, "kind": "plain"})
        if strict:
            cells = [
                _figure(report.strict.pass_hat[k], report.strict.ci95[k])
                if report.strict is not None and k in report.strict.pass_hat
                else "–"
                for _, report in reports
            ]
            rows.append({"name": f"strict pass^{k}", "cells": cells, "kind": "strict"})
    critic = [report.critic for _, report in reports]
    critic_rows: list[dict[str, Any]] = []
    if any(found is not None for found in critic):
        figures = (
            ("flag rate", "flag_rate", None),
            ("false-flag rate", "false_flag_rate", "false_flag_rate_ci"),
            ("detection", "detection_rate", "detection_rate_ci"),
            ("correction", "correction_rate", None),
            ("MCC", "mcc", "mcc_ci"),
        )
        for label, field, interval in figures:
            cells = [
                "–"
                if found is None
                else _figure(getattr(found, field), getattr(found, interval) if interval else None)
                for found in critic
            ]
            critic_rows.append({"name": label, "cells": cells, "kind": "critic"})
    return {"columns": [name for name, _ in reports], "rows": rows, "critic": critic_rows}


def render_run_page(
    run_id: str,
    config: RunConfig,
    records: Sequence[TrialRecord],
    title: str | None = None,
    branches: Sequence[TrialBranches] | None = None,
) -> str:
    """The self-contained page of a run, its trials inside it; with `branches` (`castbench
    counterfactuals`), each trial shows, at every critic verdict, the branch with the other
    verdict and what the verdict did."""
    out = io.StringIO()
    write_run_page(out, run_id, config, _ordered(records), title, branches)
    return out.getvalue()


def write_run_page(
    out: TextIO,
    run_id: str,
    config: RunConfig,
    records: Iterable[TrialRecord],
    title: str | None = None,
    branches: Sequence[TrialBranches] | None = None,
) -> int:
    """`render_run_page` written to `out` as the records come, `records` in the page's order (by
    domain, task and trial index, as `ResultsStore.iter_trials` gives them) and read once: what is
    held is a mark and a digest per trial, not the run's records or its page (#59). The
    characters written."""
    by_trial = {(b.domain, b.task_id, b.trial_index): b for b in branches or ()}
    marks = _Marks()
    with (
        tempfile.TemporaryFile("w+", encoding="ascii") as data,
        tempfile.TemporaryFile("w+", encoding="ascii") as refs,
    ):
        packer = StreamedChunk(data, refs)

        def walked() -> Iterator[TrialRecord]:
            for record in records:
                marks.add(record)
                packer.add(
                    trial_payload(record, by_trial.get((record.domain, record.task_id, record.trial_index)))
                )
                yield record

        trials = walked()
        summary = _summary(run_id, config, trials)
        for _ in trials:  # what the summary left unread, if it stopped early
            pass
        packer.finish()
        written = 0
        for part in _page(run_id, config, marks, summary, title, [(0, None)], _TRIALS_DATA, bool(by_trial)):
            head, found, tail = part.partition(_TRIALS_DATA)
            out.write(head)
            written += len(head)
            if found:
                data.seek(0)
                while block := data.read(1 << 20):
                    out.write(block)
                    written += len(block)
            out.write(tail)
            written += len(tail)
    return written


_TRIALS_DATA: Final = "castbenchTrialsData0"
"""Where the page's trial data goes, in the rendered page (not base64's alphabet alone: the
data itself is written there as it was compressed)."""


def render_run_files(
    run_id: str,
    config: RunConfig,
    records: Sequence[TrialRecord],
    name: str,
    title: str | None = None,
    chunk_budget: int = CHUNK_BUDGET,
) -> dict[str, str]:
    """The page of a run and its trials' chunk files, by path relative to the page's folder:
    `NAME.html` and `NAME/trials-001.js`, ... Each chunk file is a script that hands its data to
    the page (`castbenchTrials(number, "...")`), so the page works opened from disk and served."""
    ordered = _ordered(records)
    chunks = trial_chunks(ordered, budget=chunk_budget)
    marks = _Marks()
    for record in ordered:
        marks.add(record)
    summary = _summary(run_id, config, ordered)
    if not chunks:  # no trials: nothing to load
        return {
            f"{name}.html": _render(
                run_id, config, marks, summary, title, [(0, None)], encode_trials([]), False
            )
        }
    paths = [f"{name}/trials-{number + 1:03d}.js" for number in range(len(chunks))]
    index: list[tuple[int, str | None]] = [
        (chunk.start, path) for chunk, path in zip(chunks, paths, strict=True)
    ]
    out = {f"{name}.html": _render(run_id, config, marks, summary, title, index, None, False)}
    for number, (chunk, path) in enumerate(zip(chunks, paths, strict=True)):
        out[path] = f'castbenchTrials({number}, "{chunk.data}");\n'
    return out


def _ordered(records: Sequence[TrialRecord]) -> list[TrialRecord]:
    """The page's order, by which its marks and its chunks index the trials."""
    return sorted(records, key=lambda r: (r.domain, r.task_id, r.trial_index))


class _Marks:
    """The page's task table, a row of marks per task, kept small: per trial its state, index and
    failure category; the template's rows are made as it reads them."""

    def __init__(self) -> None:
        self.count = 0
        self.tasks: dict[str, dict[str, _TaskMarks]] = defaultdict(dict)

    def add(self, record: TrialRecord) -> None:
        tasks = self.tasks[record.domain]
        task = tasks.get(record.task_id)
        if task is None:
            task = tasks[record.task_id] = _TaskMarks(record.domain, record.task_id)
        category = record.grade.failure_category if record.grade else None
        task.rows.append((self.count, record.status == "error", record.passed, record.trial_index, category))
        task.passed += record.passed
        self.count += 1

    def domains(self) -> list[dict[str, Any]]:
        return [
            {
                "name": domain,
                "tasks": [
                    {"task_id": task_id, "trials": marks, "passed": marks.passed}
                    for task_id, marks in sorted(tasks.items())
                ],
            }
            for domain, tasks in sorted(self.tasks.items())
        ]


class _TaskMarks:
    """One task's trials as the template iterates them (`_trial`'s dicts, made on the way)."""

    def __init__(self, domain: str, task_id: str) -> None:
        self.domain = domain
        self.task_id = task_id
        self.passed = 0
        self.rows: list[tuple[int, bool, bool, int, str | None]] = []

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for index, error, passed, trial_index, category in self.rows:
            yield _mark(
                index, error, passed, f"{self.domain}/{self.task_id}/{trial_index}", trial_index, category
            )


def _summary(run_id: str, config: RunConfig, records: Iterable[TrialRecord]) -> dict[str, Any]:
    try:
        return _summary_table(summarize_run(run_id, config, records), reported_ks(config.trials))
    except ValueError:  # no task has all its trials scored: nothing to summarise yet
        return {"columns": [], "rows": [], "critic": []}


def _render(
    run_id: str,
    config: RunConfig,
    marks: _Marks,
    summary: dict[str, Any],
    title: str | None,
    chunks: list[tuple[int, str | None]],
    trials_data: str | None,
    has_branches: bool,
) -> str:
    return "".join(_page(run_id, config, marks, summary, title, chunks, trials_data, has_branches))


def _page(
    run_id: str,
    config: RunConfig,
    marks: _Marks,
    summary: dict[str, Any],
    title: str | None,
    chunks: list[tuple[int, str | None]],
    trials_data: str | None,
    has_branches: bool,
) -> Iterator[str]:
    """The page's text in the parts Jinja2 makes it in (each variable's value whole in one)."""
    ks = reported_ks(config.trials)
    domains = marks.domains()
    config_items = [
        ("domains", ", ".join(f"{name} {version}" for name, version in sorted(config.domains.items()))),
        ("split", config.split),
        ("policy", config.policy),
        ("critic", config.critic),
        ("user", config.user),
        ("trials", str(config.trials)),
        ("seed", str(config.seed)),
    ]
    if config.privileged:
        config_items.append(("privileged", ", ".join(config.privileged)))
    if config.extra.get("traits"):
        config_items.append(("traits", str(config.extra["traits"])))
    return (
        template_environment("castbench_boards.viewer")
        .get_template("viewer.html.j2")
        .generate(
            title=title or f"run {run_id}",
            config_items=config_items,
            ks=ks,
            summary=summary,
            domains=domains,
            chunks=json.dumps(chunks, separators=(",", ":")),
            trials_data=trials_data,
            has_branches=has_branches,
        )
    )
