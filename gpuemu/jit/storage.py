"""Where a kernel's state lives: frame slots, local windows, shared layout.

Filled in while the warp function is generated (slots are handed out as
variables are met) and then frozen into the compiled kernel's metadata, which
the machine uses to size frames and to fill the bounds-table entries of the
kernel's static objects (tags FIRST_STATIC_TAG and up, numbered per kernel:
each run looks them up in its own table, gpuemu/machine/static_tags.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from isa import ir

from . import abi
from .lane_types import slot_bytes


def align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


@dataclass
class StaticObject:
    """A shared array, the dynamic shared region, or a per-thread local object.

    lo/hi are device addresses in the object's space (the offset inside the
    block's shared memory, or inside the thread's local window). `dynamic`
    marks the extern shared region whose end is set per launch."""
    name: str
    space: str        # 'shared' | 'local' | 'param'
    lo: int
    hi: int
    dynamic: bool = False

    @property
    def tag(self) -> int:
        return self._tag

    def set_tag(self, tag: int) -> None:
        self._tag = tag


@dataclass
class Storage:
    """Local objects are laid out in the order they are met, and a scope's
    objects share memory with its siblings' (`open_scope`, `close_scope`), as
    ptxas overlaps them: `if (c) { char a[300000]; } else { char b[300000]; }`
    takes 300000 bytes of stack frame (nvcc -arch=sm_90 -Xptxas -v), two such
    arrays in one scope 600000."""
    frame_end: int = abi.HEADER_BYTES
    local_size: int = 0
    local_high: int = 0                                 # the most local_size has been
    scopes: list = field(default_factory=list)          # open scopes: [local_size at entry, call depth, pinned, high]
    static_shared: int = 0
    objects: list = field(default_factory=list)        # StaticObject, tag order
    reg_slots: dict = field(default_factory=dict)      # Var -> frame offset
    locals_: dict = field(default_factory=dict)        # Var -> StaticObject
    shared: dict = field(default_factory=dict)         # Var -> StaticObject
    dynamic: StaticObject = None

    # ------------------------------------------------------------- frame
    def alloc_frame(self, nbytes: int, align: int = 32) -> int:
        off = align_up(self.frame_end, align)
        self.frame_end = off + nbytes
        return off

    def reg_slot(self, var: ir.Var) -> int:
        off = self.reg_slots.get(var)
        if off is None:
            off = self.alloc_frame(slot_bytes(var.type))
            self.reg_slots[var] = off
        return off

    # ------------------------------------------------------------ objects
    def _add(self, obj: StaticObject) -> StaticObject:
        if len(self.objects) >= abi.N_TAGS - abi.FIRST_STATIC_TAG:
            raise ValueError("too many shared/local objects in one kernel")
        obj.set_tag(abi.FIRST_STATIC_TAG + len(self.objects))
        self.objects.append(obj)
        return obj

    def local_object(self, var: ir.Var, space: str = "local", depth: int = None) -> StaticObject:
        """A per-thread object in the local window. Kernel struct parameters
        use space 'param': stored like local data, traced as parameter reads.

        `depth`: the call depth of the declaration that makes a variable of a
        scope; the scopes of callers (smaller depth) then keep its memory, as a
        later call of the inlined function uses the same object (and the
        function's own outermost scope is pinned: WarpCodegen.gen_call). Any
        other object (no depth) keeps the memory of every open scope."""
        obj = self.locals_.get(var)
        if obj is None:
            size = max(var.type.size, 1)
            off = align_up(self.local_size, max(var.type.align, var.align, 1))
            self.local_size = off + size
            for sc in self.scopes:
                if depth is None or sc[1] < depth:
                    sc[2] = True
            obj = self._add(StaticObject(var.name, space, off, off + size))
            self.locals_[var] = obj
        return obj

    def open_scope(self, depth: int, pinned: bool = False) -> None:
        self.scopes.append([self.local_size, depth, pinned, self.local_size])

    def close_scope(self, keep: bool = False) -> None:
        """End a scope: the objects declared in it are dead, and the next
        scope's objects take their memory, unless `keep` (one of them is used
        after the scope: `escaping_scopes`) or the scope is pinned; then all
        memory its objects and its inner scopes' took stays taken."""
        mark, _, pinned, high = self.scopes.pop()
        high = max(high, self.local_size)
        self.local_high = max(self.local_high, high)
        self.local_size = high if (pinned or keep) else mark
        if self.scopes:
            self.scopes[-1][3] = max(self.scopes[-1][3], high)

    def shared_object(self, var: ir.Var) -> StaticObject:
        """Static shared arrays in declaration order, naturally aligned from
        offset 0 (as nvcc lays them out); all `extern __shared__` arrays
        share the dynamic region, which starts after them aligned to 16."""
        if var.storage == "extern_shared":
            if self.dynamic is None:
                self.dynamic = self._add(StaticObject("extern shared", "shared", 0, 0, True))
            return self.dynamic
        obj = self.shared.get(var)
        if obj is None:
            size = max(var.type.size, 1)
            off = align_up(self.static_shared, max(var.type.align, var.align, 1))
            self.static_shared = off + size
            obj = self._add(StaticObject(var.name, "shared", off, off + size))
            self.shared[var] = obj
        return obj

    def freeze(self) -> None:
        if self.dynamic is not None:
            self.dynamic.lo = self.dynamic.hi = self.dynamic_offset

    @property
    def dynamic_offset(self) -> int:
        return align_up(self.static_shared, 16)

    @property
    def local_stride(self) -> int:
        return align_up(max(self.local_high, self.local_size), 16)

    @property
    def local_offset(self) -> int:
        return align_up(self.frame_end, 64)

    @property
    def frame_bytes(self) -> int:
        return self.local_offset + abi.WARP * self.local_stride


def escaping_scopes(body: ir.Stmt) -> set:
    """ids of the scopes (Blocks, Switches) of a function body with a local
    variable declared in them and used outside them: their memory must not
    be shared with later scopes. C's scoping makes this empty for the user's
    variables; it guards against a lowering step that moves a use out."""
    decl_path: dict = {}        # id(var) -> the scopes around its Decl
    uses: list = []             # (id(var), the scopes around the use)

    def walk(n, path: tuple) -> None:
        if isinstance(n, (ir.Block, ir.Switch)):
            path = path + (id(n),)
        if isinstance(n, ir.Decl) and n.var.storage == "local":
            decl_path.setdefault(id(n.var), path)
        elif isinstance(n, (ir.AddrOf, ir.VarRef, ir.Assign)):
            uses.append((id(n.var), path))
        for k, v in vars(n).items():
            if k in ("type", "loc", "var", "func"):
                continue
            for x in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(x, (ir.Expr, ir.Stmt)):
                    walk(x, path)
    walk(body, ())
    out: set = set()
    for vid, path in uses:
        out.update(set(decl_path.get(vid, ())) - set(path))
    return out
