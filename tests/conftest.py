"""Shared test setup: where the repository, programs/ and the conformance set are.

Hypothesis runs without its per-example deadline: the first example of a
property test may include a JIT compile, which says nothing about speed
(speed is measured in benchmarks/, never asserted in tests)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = REPO / "programs"
# The conformance set lives beside the checkout: <repo root>/../shared/conformance.
CONFORMANCE = REPO.parent / "shared" / "conformance"

try:
    from hypothesis import settings

    settings.register_profile("gpuemu", deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "gpuemu"))
except ImportError:  # hypothesis is in the test extra; tests that need it import it
    pass


def run_cli(*args: str, cwd: Path = REPO, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run `python -m gpuemu ARGS` in a fresh process, capturing text output."""
    return subprocess.run([sys.executable, "-m", "gpuemu", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def cli():
    """The `run_cli` helper, as a fixture."""
    return run_cli


def nvcc_compile(nvcc: str, source: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """nvcc for sm_90 (device code only) on one .cu file, into tmp_path: its result."""
    return subprocess.run([nvcc, "-arch=sm_90", "-cubin", "-o", str(tmp_path / (source.stem + ".cubin")),
                           str(source)], capture_output=True, text=True, timeout=300)


def nvcc_cubin(nvcc: str, source: Path, tmp_path: Path) -> None:
    """Compile one .cu file with nvcc for sm_90 (device code only); assert it
    compiles to a non-empty cubin, showing nvcc's messages if not."""
    out = tmp_path / (source.stem + ".cubin")
    r = nvcc_compile(nvcc, source, tmp_path)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 0


@pytest.fixture
def ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt in the test, also in a test run started
    with SIGINT ignored (a shell's background job inherits it so, and Python
    then installs no handler of its own)."""
    import signal
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
