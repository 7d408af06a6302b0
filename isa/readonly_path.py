"""Which global loads take the read-only data path (the texture / LDG path).

CUDA C Programming Guide, "Read-Only Data Cache Load Function" (__ldg) and
CUDA C++ Best Practices / Kepler Tuning Guide ("const __restrict__"): a load
goes through the read-only (texture) data cache when

1. it is written `__ldg(p)` (the front end marks the Load `readonly`), or
2. its address derives from a kernel parameter declared `const T *__restrict__`
   (pointee const, pointer restrict), and the kernel never assigns that
   parameter: the compiler may then prove the data read-only for the whole
   launch and emit LDG.E.CONSTANT (ld.global.nc) for it.

Rule 2 is the conservative case ptxas always takes; it may also use the path
for pointers it proves read-only by other means, which we do not model.
"""
from __future__ import annotations

from dataclasses import fields, is_dataclass

from . import ir


def restrict_pointer(declarator) -> bool:
    """True when a parameter's declarator makes it a `__restrict__` pointer
    (its outermost derivation is a pointer qualified restrict)."""
    ops = getattr(declarator, "ops", None) or []
    return bool(ops) and ops[-1][0] == "ptr" and "restrict" in ops[-1][1]


def readonly_param(pointee_const: bool, declarator, is_kernel: bool) -> bool:
    """A kernel parameter whose loads may take the read-only path (rule 2)."""
    return bool(is_kernel and pointee_const and restrict_pointer(declarator))


def assigned_vars(node, out: set | None = None) -> set:
    """ids of the Vars assigned anywhere under `node` (kernel body, no callees)."""
    if out is None:
        out = set()
    if isinstance(node, ir.Assign):
        out.add(id(node.var))
    if isinstance(node, (list, tuple)):
        for x in node:
            assigned_vars(x, out)
    elif is_dataclass(node) and isinstance(node, (ir.Expr, ir.Stmt)):
        for f in fields(node):
            v = getattr(node, f.name)
            if isinstance(v, (ir.Expr, ir.Stmt, list, tuple)):
                assigned_vars(v, out)
    return out


def root_var(addr) -> ir.Var | None:
    """The variable an address expression is based on (through pointer
    arithmetic and casts), or None."""
    while isinstance(addr, (ir.PtrAdd, ir.Cast)):
        addr = addr.ptr if isinstance(addr, ir.PtrAdd) else addr.a
    return addr.var if isinstance(addr, ir.VarRef) else None


def is_readonly_load(load, written: set) -> bool:
    """Rule 1 or 2 for one IR Load; `written` from assigned_vars(kernel body)."""
    if not isinstance(load, ir.Load):
        return False
    if load.readonly:
        return True
    v = root_var(load.addr)
    return v is not None and v.readonly and id(v) not in written
