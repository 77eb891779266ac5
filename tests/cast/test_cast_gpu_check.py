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
    trained = {"trained critic, verdict only", "trained critic, rationale + verdict"}
    assert set(payload["critic"]) == trained  # both orders, the same data, steps and seed
    assert all(0 <= payload["critic"][name]["unreadable"] <= summary["held_out_calls"] for name in trained)
    assert "what the rationale adds" in done.stdout
    for split in payload["splits"].values():
        names = set(split["figures"])
        assert {"bag of words", "rules critic", "majority per tool"} | trained < names
        assert set(split["beats_bow"]) == trained and split["rationale_adds"] is not None
        calls = {figures["calls"] for figures in split["figures"].values()}
        assert len(calls) == 1  # every critic on the very same calls
    lora = payload["lora"]
    assert lora["tokens"] == 128 and lora["adapter_params"] > 0 and lora["plan_gib"] > 20


def test_the_targets_put_the_rationale_where_the_order_says_and_the_verdict_span_follows_the_key() -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import cast_gpu_check as check
    finally:
        sys.path.remove(str(SCRIPT.parent))
    annotation = (
        '{"verdict": "invalid", "failure_type": "wrong_args", "check": "arguments", '
        '"explanation": "the user asked for the valid address"}'
    )
    assert list(json.loads(check.reorder(annotation, "verdict"))) == ["verdict", "failure_type"]
    first = json.loads(check.reorder(annotation, "rationale-first"))
    assert list(first) == ["check", "explanation", "verdict", "failure_type"]
    # tokens as words: the rationale's "valid" comes first, the verdict after the key is "invalid"
    vocab = {word: [i] for i, word in enumerate(["valid", "invalid", "verdict", "x"])}
    tokens = [3, 0, 3, 2, 3, 1, 3]
    words = {"valid": vocab["valid"], "invalid": vocab["invalid"]}
    assert check.verdict_span(tokens, 0, words, [2]) == (5, 6)
    with pytest.raises(SystemExit):
        check.reorder(annotation, "rationale-last")
