"""The error types users catch, one per kind of failure, and `Finding`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from isa.diagnostics import CompileError  # noqa: F401  (re-exported)


# every Finding.kind (a manifest's expect_finding / check_finding names one)
FINDING_KINDS = ("out_of_bounds", "misaligned_access", "constant_write", "timeout", "deadlock",
                 "barrier_divergence", "race", "uninitialized_read", "invalid_shuffle", "assert")


@dataclass
class Finding:
    """One problem found while running a kernel.

    kind: one of FINDING_KINDS.
    block and thread are (x, y, z) tuples; line is the 1-based line of the
    kernel source as the user wrote it, of the #include'd file extra["file"]
    where it has one."""
    kind: str
    message: str
    kernel: str
    line: Optional[int] = None
    block: Optional[tuple] = None
    thread: Optional[tuple] = None
    space: Optional[str] = None
    address: Optional[int] = None
    other_line: Optional[int] = None
    other_thread: Optional[tuple] = None
    extra: dict = field(default_factory=dict)

    def __str__(self) -> str:
        where = f"{self.kernel}"
        if self.block is not None:
            where += f" block {tuple(self.block)}"
        if self.thread is not None:
            where += f" thread {tuple(self.thread)}"
        if self.line is not None:
            where += f" line {self.line}"
            if self.extra.get("file"):       # a line of an #include'd file
                where += f" of {self.extra['file']}"
        return f"[{self.kind}] {where}: {self.message}"


class LaunchError(ValueError):
    """A launch the hardware would refuse: names the limit and the value."""


class KernelError(RuntimeError):
    """A kernel that faulted, hung or deadlocked. `.findings` says where."""

    def __init__(self, findings: list):
        self.findings = list(findings)
        msg = "\n".join(str(f) for f in self.findings) or "kernel failed"
        super().__init__(msg)
