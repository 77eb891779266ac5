"""The Python function of the commands that decide something (`castbench compare`, `gate`, `verify`): what
`castbench CMD` calls, taking what its options give and returning what it shows, for a script or
a CI job to call instead of parsing the command's output. Public through `castbench`.

Each raises one exception class, whose message is the command's `error:` line: `SourceError` (a
run or summary that cannot be read), `GateError` (runs that cannot be gated, or compared, as
asked), `ArchiveError` (an exported run file that cannot be read).
"""

from __future__ import annotations

from pathlib import Path

from castbench._base.defaults import DEFAULT_DB
from castbench._records.store import ResultsStore
from castbench._records.store.export import ExportedRun, is_export, read_export, stream_run
from castbench._results.compare.comparability import comparability_problems, incomplete_runs
from castbench._results.compare.gate import Check, GateError, GateResult, run_gate
from castbench._results.compare.runs import Comparison, compare_runs
from castbench._results.compare.sources import load_summary
from castbench._results.publish.verify import VerifyReport, verify_run

__all__ = ["comparison", "gate", "verify"]


def comparison(
    baseline: str, candidate: str, *, db: str = DEFAULT_DB, force: bool = False, confidence: float = 0.95
) -> tuple[Comparison, list[str]]:
    """`castbench compare BASELINE CANDIDATE`: the difference in pass^k per domain on the tasks
    both runs scored (candidate − baseline), and what makes the runs not comparable (the
    comparison refused unless `force`: then returned beside it, as the command's warnings).
    A run is a run id, unique prefix or `latest` in `db`, a summary JSON or an exported run."""
    base, cand = load_summary(baseline, db), load_summary(candidate, db)
    problems = comparability_problems(base, cand)
    if problems and not force:
        raise GateError("refusing to compare: " + "; ".join(problems) + " (--force to compare anyway)")
    try:
        return compare_runs(base, cand, confidence=confidence), problems
    except ValueError as exc:
        raise GateError(str(exc)) from exc


def gate(
    baseline: str,
    candidate: str,
    checks: list[Check],
    *,
    confidence: float = 0.95,
    db: str = DEFAULT_DB,
    force: bool = False,
) -> GateResult:
    """`castbench gate`: PASS, FAIL or UNDECIDED for each check, from the paired bootstrap interval
    of candidate − baseline. Runs as `compare` takes them; refused (`GateError`) when they are
    the same run, unfinished or not comparable, unless `force` (then said in `warnings`).
    `GateResult.exit_code(policy)` is the command's exit status."""
    base, cand = load_summary(baseline, db), load_summary(candidate, db)
    if base.run_id == cand.run_id:  # its every difference is 0: it would always PASS
        raise GateError(
            f"--baseline and --candidate are the same run ({base.run_id}): a run gated against "
            "itself always passes; give the release's own run as --candidate"
        )
    unfinished = incomplete_runs(base, cand)
    if unfinished and not force:
        raise GateError("; ".join(unfinished) + " (re-run it to finish, or --force to gate anyway)")
    problems = comparability_problems(base, cand)
    if problems and not force:
        raise GateError("runs are not comparable: " + "; ".join(problems) + " (--force to gate anyway)")
    result = run_gate(base, cand, checks, confidence)
    result.warnings[:0] = [f"forced: {problem}" for problem in unfinished + problems]
    return result


def verify(run: str, *, db: str = DEFAULT_DB) -> VerifyReport:
    """`castbench verify RUN`: replay every trial's tool calls in a fresh sandbox, grade it again
    and compare with what was stored (reward, trajectory, labels, config hash, privilege markers,
    and the stored digests when the run is read from `db`). `run` is a run id, unique prefix or
    `latest` in `db`, or an exported run file. `VerifyReport.verified` says whether it held."""
    path = Path(run)
    store = None if is_export(path) else ResultsStore(db, read_only=True)
    # a stored run's trials are read as they are verified, one at a time (#59)
    exported: ExportedRun = read_export(path) if store is None else stream_run(store, run)
    digests = None if store is None else store.check_digests(exported.run_id)
    return verify_run(exported.run_id, exported.config, exported.trials, exported.config_hash, digests)
