"""`bench/cast_gpu_check.py` at a shrunken shape on the CPU: prepare the data with castbench,
then the GPU half's pre-flight, the tiny critic's training and evaluation beside the baselines on
the same held-out calls (both splits), and the LoRA step, importing nothing the GPU image lacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "cast_gpu_check.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=900, check=False
    )


def test_the_preflight_fails_in_one_error_line_without_the_prepared_data(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    done = _run("run", "--data", str(tmp_path / "data"), "--device", "cpu", "--shrink")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: preflight: ")
    assert "train.jsonl missing" in done.stderr


@pytest.mark.train
def test_the_gpu_check_runs_on_the_cpu_at_a_shrunken_shape(tmp_path: Path) -> None:
    data = tmp_path / "data"
    prepared = _run("prepare", "--data", str(data), "--train-tasks", "12", "--test-tasks", "6")
    assert prepared.returncode == 0, prepared.stderr[-2000:]
    summary = json.loads(prepared.stdout.strip().splitlines()[-1])
    assert summary["held_out_calls"] > 10 and len(summary["families_held_out"]) == 3
    done = _run("run", "--data", str(data), "--device", "cpu", "--shrink", "--steps", "4")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "preflight: OK" in done.stdout and "beats_bow" in done.stdout
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    assert payload["imported_but_absent_on_the_image"] == []
    assert set(payload["splits"]) == {"in-distribution", "held-out families"}
    for split in payload["splits"].values():
        names = set(split["figures"])
        assert {"bag of words", "rules critic", "majority per tool"} < names
        calls = {figures["calls"] for figures in split["figures"].values()}
        assert len(calls) == 1  # every critic on the very same calls
    lora = payload["lora"]
    assert lora["tokens"] == 128 and lora["adapter_params"] > 0 and lora["plan_gib"] > 20
