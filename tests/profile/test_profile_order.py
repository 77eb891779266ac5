"""A profile's counted lists are the same file in every process: `broken` (failure fields) and
`violations_by_tool` once followed the hash order of a set of strings, so a board rebuilt in
another process reordered the ties of its committed `profile.json`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXPORT = REPO / "results" / "scripted-baselines" / "noisy-p-0-3.castbench.json.gz"

SAFETY = f"""
import json
from pathlib import Path
from castbench_analyses.profile_metrics import safety
from castbench._records.store.export import read_export
found = safety(read_export(Path({str(EXPORT)!r})).trials)
print(json.dumps([list(found.broken.items()), list(found.violations_by_tool.items())]))
"""


def _safety_in_a_process(hash_seed: str) -> list[list[list[object]]]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-c", SAFETY], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_counted_fields_and_tools_list_the_same_in_every_process() -> None:
    first, second = _safety_in_a_process("1"), _safety_in_a_process("2")
    assert first == second
    for counted in first:
        assert counted == sorted(counted, key=lambda item: (-item[1], item[0]))  # ties by name
    fields = first[0]
    assert any(a[1] == b[1] for a, b in zip(fields, fields[1:], strict=False))  # ties to order
