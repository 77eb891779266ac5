"""What reading a versioned trial record costs: the store's read of every trial (`TRIAL_RECORD.loads`)
against the unversioned read it replaced (`lossless.loads`), on the trial records of a committed
export, for a record written with its version, one written before versions (no version key), and
one whose text mentions "version" (the slow path: parsed to a dict, then migrated).

    .venv/bin/python bench/record_versions.py [EXPORT] [--repeat N]

Prints microseconds per record for each way and its ratio to the unversioned read, all measured
in this one run."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from castbench._base import lossless
from castbench._records.store.export import read_export
from castbench._records.trial import TRIAL_RECORD, TrialRecord

_DEFAULT = Path(__file__).resolve().parents[1] / "results/scripted-baselines/noisy-p-0-3.castbench.json.gz"


def _versioned(text: str) -> object:
    return TRIAL_RECORD.loads(TrialRecord, text, "bench")


def _unversioned(text: str) -> object:
    return lossless.loads(TrialRecord, text)


def _seconds(read: Callable[[str], object], texts: list[str]) -> float:
    start = time.perf_counter()
    for text in texts:
        read(text)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("export", nargs="?", type=Path, default=_DEFAULT)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    records = read_export(args.export).trials
    plain = [lossless.dumps(record) for record in records]
    stamped = [TRIAL_RECORD.dumps(record) for record in records]
    assert [_versioned(text) for text in stamped] == records
    mentioned = [TRIAL_RECORD.dumps(record.model_copy(update={"error": '"version"'})) for record in records]
    ways: dict[str, tuple[Callable[[str], object], list[str]]] = {
        "unversioned read (lossless.loads, before)": (_unversioned, plain),
        "versioned record (TRIAL_RECORD.loads)": (_versioned, stamped),
        "record stored before versions": (_versioned, plain),
        'record mentioning "version" (dict path)': (_versioned, mentioned),
    }
    best = dict.fromkeys(ways, float("inf"))
    for _ in range(args.repeat):  # round robin: a burst of load on the machine hits every way alike
        for label, (read, texts) in ways.items():
            best[label] = min(best[label], _seconds(read, texts))
    base = next(iter(best.values()))
    print(f"{len(records)} trial records of {args.export.name}, best of {args.repeat} rounds")
    for label, spent in best.items():
        print(f"{label + ':':<48}{spent / len(records) * 1e6:8.1f} us/record  {spent / base:.2f}x")


if __name__ == "__main__":
    main()
