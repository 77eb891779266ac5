"""The llamacpp extra assumes no CPU feature of the machine it was compiled on.

llama-cpp-python has no wheel on PyPI: pip compiles it, by default for the build machine's own
CPU (`GGML_NATIVE`). Where that CPU has AMX, ggml's AMX code is built in and the server dies with
SIGILL (`tilezero` in libggml-cpu.so) on the first completion on VMs of the same kind that trap
AMX; a build with AVX-512 dies the same way on any machine without it. The README's install
command builds it portably (`GGML_NATIVE=OFF`: the x86-64-v3 baseline, AVX2/FMA/F16C). ggml
reports the instruction sets it was compiled with (`llama_print_system_info`; compile-time flags,
not what this CPU offers), so a build that assumes more fails here, on any machine.
"""

from __future__ import annotations

import re

import pytest

llama_cpp = pytest.importorskip("llama_cpp", reason="the llamacpp extra is not installed")
pytestmark = pytest.mark.extra("llamacpp")

INSTALL = "reinstall it with `python scripts/install_llama_cpp.py --rebuild` (README.md, 'Run the tests')"
ASSUMED = ("AMX", "AVX512", "AVX_VNNI", "AVX10")
"""Instruction sets past the portable baseline: a build with any of them needs a CPU (and a
hypervisor) that has it."""


def compiled_features(info: str) -> set[str]:
    """The CPU features ggml reports as compiled in ('CPU : SSE3 = 1 | AVX = 1 | ...')."""
    return {name for name, on in re.findall(r"([A-Z0-9_]+) = (\d)", info) if on == "1"}


def test_compiled_features_are_read_from_the_system_info() -> None:
    native = "CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | AVX512_BF16 = 0 | OPENMP = 1 | "
    assert compiled_features(native) == {"SSE3", "AVX2", "AVX512", "AMX_INT8", "OPENMP"}


def test_the_llama_cpp_build_assumes_no_cpu_feature_past_the_portable_baseline() -> None:
    info = llama_cpp.llama_print_system_info().decode()
    features = compiled_features(info)
    assumed = ", ".join(sorted(f for f in features if f.startswith(ASSUMED)))
    assert not assumed, f"llama-cpp-python was built for its build machine's CPU ({assumed}); {INSTALL}"
