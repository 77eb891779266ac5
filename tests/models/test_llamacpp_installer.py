"""`scripts/install_llama_cpp.py`: llama-cpp-python compiled portably once per machine, its wheel
kept under a key pip's own cache does not have (the build flags)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _installer() -> ModuleType:
    path = Path(__file__).parents[2] / "scripts" / "install_llama_cpp.py"
    spec = importlib.util.spec_from_file_location("install_llama_cpp", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_installer_keys_its_wheel_cache_by_the_build_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    """pip's cache keys a built wheel by its source alone; the installer's also by the flags, so a
    native build is never handed to a portable install (nor one version's wheel to another)."""
    installer = _installer()
    portable = installer.cache_key()
    monkeypatch.setattr(installer, "PORTABLE", "-DGGML_NATIVE=ON")
    native = installer.cache_key()
    monkeypatch.setattr(installer, "VERSION", "0.3.37")
    assert len({portable, native, installer.cache_key()}) == 3


def test_the_installer_builds_once_and_never_takes_an_interrupted_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installer = _installer()
    monkeypatch.setenv("CASTBENCH_WHEEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "argv", ["install_llama_cpp.py"])
    calls: list[tuple[str, ...]] = []
    fail = [True]

    def pip(*arguments: str, env: dict[str, str] | None = None) -> int:
        """pip, standing in: a build writes its wheel (the first one dies half-way through)."""
        calls.append(arguments)
        if arguments[0] == "wheel":
            assert env is not None and env["CMAKE_ARGS"] == installer.PORTABLE
            (Path(arguments[arguments.index("-w") + 1]) / "llama_cpp_python-0.3.36.whl").write_bytes(b"")
            return 1 if fail[0] else 0
        return 0

    monkeypatch.setattr(installer, "pip", pip)
    with pytest.raises(SystemExit, match="building llama-cpp-python"):
        installer.main()
    assert list((tmp_path / "cache").iterdir()) == []  # neither a half-built entry nor its scratch
    fail[0] = False
    monkeypatch.setattr(installer, "installed_from", lambda: None)  # a native build is installed
    installer.main()
    wheel = calls[-1][-1].partition(" @ ")[2]
    monkeypatch.setattr(installer, "installed_from", lambda: wheel)  # now this wheel is
    installer.main()
    assert [call[0] for call in calls] == ["wheel", "wheel", *["install"] * 4]  # built once
    assert "--force-reinstall" in calls[2] and "--force-reinstall" not in calls[4]  # replaced once
    assert calls[-1][-1].startswith("llama-cpp-python[server] @ file://")
