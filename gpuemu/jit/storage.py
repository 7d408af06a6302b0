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
    frame_end: int = abi.HEADER_BYTES
    local_size: int = 0
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

    def local_object(self, var: ir.Var, space: str = "local") -> StaticObject:
        """A per-thread object in the local window. Kernel struct parameters
        use space 'param': stored like local data, traced as parameter reads."""
        obj = self.locals_.get(var)
        if obj is None:
            size = max(var.type.size, 1)
            off = align_up(self.local_size, max(var.type.align, 1))
            self.local_size = off + size
            obj = self._add(StaticObject(var.name, space, off, off + size))
            self.locals_[var] = obj
        return obj

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
            off = align_up(self.static_shared, max(var.type.align, 1))
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
        return align_up(self.local_size, 16)

    @property
    def local_offset(self) -> int:
        return align_up(self.frame_end, 64)

    @property
    def frame_bytes(self) -> int:
        return self.local_offset + abi.WARP * self.local_stride
