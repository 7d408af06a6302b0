"""Declaration specifiers and declarators -> types (C11 6.7), struct layout.

Front-end qualifiers travel beside the IR type in `QType` (the IR has no
const); only the top level and one pointee level are tracked, which is what
the checks need ("cannot assign to a const variable", const pointee).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from . import ir
from .ir import BOOL, I8, U8, I16, U16, I32, U32, I64, U64, F32, F64

# (sorted multiset of type words) -> scalar type; LP64 as the CUDA host.
_WORDS: dict = {}


def _add(t, *spellings):
    for s in spellings:
        _WORDS[tuple(sorted(s.split()))] = t


_add(ir.VOID, "void")
_add(BOOL, "bool", "_Bool")
_add(I8, "char")
_add(ir.SCHAR, "signed char")
_add(U8, "unsigned char")
_add(I16, "short", "short int", "signed short", "signed short int")
_add(U16, "unsigned short", "unsigned short int")
_add(I32, "int", "signed", "signed int")
_add(U32, "unsigned", "unsigned int")
_add(ir.LONG, "long", "long int", "signed long", "signed long int")
_add(I64, "long long", "long long int", "signed long long", "signed long long int", "__int64")
_add(ir.ULONG, "unsigned long", "unsigned long int")
_add(U64, "unsigned long long", "unsigned long long int")
_add(F32, "float")
_add(F64, "double")


def scalar_from_words(words: list) -> Optional[ir.Type]:
    return _WORDS.get(tuple(sorted(words)))


@dataclass
class QType:
    """An IR type with its C qualifiers (top level and first pointee)."""
    type: ir.Type
    const: bool = False
    volatile: bool = False
    pconst: bool = False       # pointee is const (for pointers / arrays' elements)
    pvolatile: bool = False
    group: Optional[tuple] = None   # a cooperative group: ('block',) ('tile', N) ('coalesced',) ('any',)
    deep: tuple = ()           # (const, volatile) of the levels below the pointee: const float **p: ((True, False),)

    def pointer_to(self, quals: set) -> "QType":
        return QType(ir.PointerType(self.type), "const" in quals, "volatile" in quals,
                     self.const, self.volatile, deep=((self.pconst, self.pvolatile),) + self.deep)


def struct_layout(name: str, members: list, min_align: int = 1) -> ir.StructType:
    """C layout: each member at the next multiple of its alignment; size a
    multiple of the largest alignment (C11 6.7.2.1; the same on nvcc).
    A member may come as (name, type, align) with `__align__`/`alignas` raising
    its alignment; `min_align` is the struct's own `__align__(N)` (a smaller
    one than the natural is ignored, as nvcc does)."""
    offset = 0
    align = max(min_align, 1)
    fields = []
    for mname, mtype, *extra in members:
        a = max(mtype.align, 1, *extra)
        offset = (offset + a - 1) // a * a
        fields.append(ir.StructField(mname, mtype, offset))
        offset += mtype.size
        align = max(align, a)
    # C++: a struct without data members still has size 1 ([class]p4; nvcc: sizeof 1)
    size = max((offset + align - 1) // align * align, 1)
    return ir.StructType(name, tuple(fields), size, align)


def union_layout(name: str, members: list, min_align: int = 1) -> ir.StructType:
    """A union: every member at offset 0; size the largest member's rounded
    up to the largest alignment (C11 6.7.2.1p16; the same on nvcc)."""
    align = max([min_align, 1] + [max(t.align, 1, *extra) for _, t, *extra in members])
    size = max([1] + [t.size for _, t, *_ in members])
    fields = tuple(ir.StructField(n, t, 0) for n, t, *_ in members)
    return ir.StructType(name, fields, (size + align - 1) // align * align, align, union=True)


def elem_scalar(t: ir.Type) -> ir.Type:
    """Innermost element type of (nested) arrays."""
    while isinstance(t, ir.ArrayType):
        t = t.elem
    return t
