"""The public API says what each piece does: every name gpuemu exports, every
public method and property of its classes, and of Report, has a docstring."""
from __future__ import annotations

import inspect

import pytest

import gpuemu
from gpuemu.report import Report
from gpuemu.report.source_view import LineRow


def public_members(obj):
    for name, member in inspect.getmembers(obj):
        if name.startswith("_"):
            continue
        if inspect.isfunction(member) or isinstance(member, property):
            yield f"{obj.__name__}.{name}", member


def documented():
    names = [n for n in gpuemu.__all__ if n != "__version__"]
    out = [(n, getattr(gpuemu, n)) for n in names]
    for cls in [getattr(gpuemu, n) for n in names if inspect.isclass(getattr(gpuemu, n))] + [Report, LineRow]:
        out += list(public_members(cls))
    return out


@pytest.mark.parametrize("name,obj", documented(), ids=lambda x: x if isinstance(x, str) else "")
def test_public_api_has_a_docstring(name, obj):
    doc = inspect.getdoc(obj.fget if isinstance(obj, property) else obj)
    assert doc and doc.strip(), f"{name} has no docstring"
