"""What each stage leaves beside its outputs: a manifest of what it was built from and what it
holds, which is also what makes the pipeline resumable.

A stage's `key` hashes its parameters and its inputs (the digests of the upstream manifests, a
run's stored trials): a stage whose manifest has the same key, and whose output files still have
the hashes it recorded, is done and is skipped. Its `digest` (key + output hashes) is what the
next stage records as its input, so a changed upstream output reruns everything after it.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["MANIFEST", "Manifest", "completed", "file_hash", "key_of", "stable_hash", "write_manifest"]

MANIFEST = "manifest.json"
FORMAT = 1


def stable_hash(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    paths = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for item in paths:
        digest.update(str(item.relative_to(path) if path.is_dir() else item.name).encode())
        with item.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


class Manifest(BaseModel):
    format: int = FORMAT
    stage: str
    recipe: str
    params: dict[str, Any]
    inputs: dict[str, str]
    """Input name -> hash (an upstream manifest's digest, a run's trials)."""
    counts: dict[str, int | float] = Field(default_factory=dict)
    balance: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Class balance of the examples or labels (verdict, failure type, ...)."""
    outputs: dict[str, str] = Field(default_factory=dict)
    """Output path (relative to the stage folder) -> sha256 of its content."""
    info: dict[str, Any] = Field(default_factory=dict)
    """Figures that do not decide anything downstream (run ids, times, losses)."""
    castbench: str = Field(default_factory=lambda: version("castbench"))
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def key(self) -> str:
        return stable_hash({"format": self.format, "stage": self.stage, "params": self.params, **self.inputs})

    @property
    def digest(self) -> str:
        return stable_hash({"key": self.key, "outputs": self.outputs})


def key_of(stage: str, params: dict[str, Any], inputs: dict[str, str]) -> str:
    return Manifest(stage=stage, recipe="", params=params, inputs=inputs).key


def completed(folder: Path, stage: str, params: dict[str, Any], inputs: dict[str, str]) -> Manifest | None:
    """The stage's manifest when it is done for these parameters and inputs, else None."""
    path = folder / MANIFEST
    if not path.exists():
        return None
    try:
        manifest = Manifest.model_validate_json(path.read_text())
    except ValueError:
        return None
    if manifest.key != key_of(stage, params, inputs):
        return None
    for name, digest in manifest.outputs.items():
        target = folder / name
        if not target.exists() or file_hash(target) != digest:
            return None
    return manifest


def write_manifest(folder: Path, manifest: Manifest, outputs: list[str]) -> Manifest:
    """Hash the outputs into the manifest and write it last (atomically): a stage interrupted
    before this point has no manifest and runs again."""
    manifest = manifest.model_copy(update={"outputs": {name: file_hash(folder / name) for name in outputs}})
    temporary = folder / (MANIFEST + ".tmp")
    temporary.write_text(manifest.model_dump_json(indent=2))
    os.replace(temporary, folder / MANIFEST)
    return manifest
