"""RawModule's compile options: which nvcc/NVRTC options gpuemu honours,
which it accepts because they change nothing gpuemu models, and which it
refuses because they change results or code on a GPU and gpuemu does not
model them (an option silently ignored would give nvcc-default results to a
user who asked for something else).

The rule is data: OPTIONS maps an option's name (without dashes; long
spellings are aliases of the short ones) to its kind. Values of a boolean or
choice option are checked one by one: `-ftz=false` is accepted, `-ftz=true`
refused with what gpuemu does instead.
"""
from __future__ import annotations

import difflib
import re

# nvcc's long spellings -> the short name the table uses.
ALIASES = {
    "include-path": "I", "define-macro": "D", "gpu-architecture": "arch", "gpu-code": "code",
    "optimize": "O", "generate-line-info": "lineinfo", "disable-warnings": "w",
    "device-debug": "G", "debug": "g", "relocatable-device-code": "rdc",
    "ptxas-options": "Xptxas", "machine": "m", "resource-usage": "res-usage",
    "device-as-default-execution-space": "default-device",     # NVRTC's spelling
}

FAST_MATH = ("gpuemu computes IEEE float math as nvcc's defaults do (-ftz=false -prec-div=true "
             "-prec-sqrt=true, no contraction, full-precision math functions); fast math is not "
             "modelled")
FMAD = ("gpuemu never contracts a*b+c into an FMA (nvcc's -fmad=false; isa/README.md: the H100 "
        "reference data was built with --fmad=false); contraction is not modelled")
CODEGEN = "gpuemu models nvcc's default optimised code generation"

# name -> (kind, detail):
#   "honoured": gpuemu applies it (RawModule / isa read the value);
#   "flag":     accepted, changes nothing gpuemu models (no value);
#   "choice":   detail maps each value to None (accepted) or the reason it is refused;
#   "refused":  detail is the reason; "arch": checked against RawModule's arch=;
#   "value":    accepted with any value, changes nothing gpuemu models.
OPTIONS: dict = {
    "I": ("honoured", None), "D": ("honoured", None), "maxrregcount": ("honoured", None),
    "Xptxas": ("honoured", None),
    "arch": ("arch", None), "code": ("arch", None),
    "std": ("choice", {v: None for v in ("c++03", "c++11", "c++14", "c++17", "c++20")}),
    "O": ("choice", {v: None for v in "0123"}),   # nvcc's -O is the host code's level
    "m": ("choice", {"64": None}),
    "ftz": ("choice", {"false": None, "true": "gpuemu keeps subnormal floats (nvcc's default "
                       "-ftz=false); flushing them to zero is not modelled"}),
    "prec-div": ("choice", {"true": None, "false": "gpuemu divides floats with IEEE round-to-"
                            "nearest (nvcc's default -prec-div=true); the approximate division "
                            "is not modelled"}),
    "prec-sqrt": ("choice", {"true": None, "false": "gpuemu takes float square roots with IEEE "
                             "round-to-nearest (nvcc's default -prec-sqrt=true); the "
                             "approximate square root is not modelled"}),
    "fmad": ("choice", {"false": None, "true": FMAD}),
    "rdc": ("choice", {"false": None, "true": "gpuemu compiles a module whole (nvcc's default "
                       "-rdc=false); separate compilation and device linking are not modelled"}),
    "use_fast_math": ("refused", FAST_MATH),
    "G": ("refused", CODEGEN + "; -G's unoptimised debug code (its registers, spills and "
          "timing) is not modelled"),
    "extra-device-vectorization": ("refused", CODEGEN + "; the extra vectorisation of loads "
                                   "and stores is not modelled"),
    "lineinfo": ("flag", None), "g": ("flag", None), "w": ("flag", None),
    "restrict": ("flag", None), "m64": ("flag", None), "res-usage": ("flag", None),
    "expt-relaxed-constexpr": ("flag", None), "extended-lambda": ("flag", None),
    "expt-extended-lambda": ("flag", None), "Wreorder": ("flag", None),
    "Wno-deprecated-declarations": ("flag", None), "Wno-deprecated-gpu-targets": ("flag", None),
    # warning control: gpuemu gives no warnings
    "diag-suppress": ("value", None), "diag-warn": ("value", None),
    "dopt": ("choice", {"on": None, "off": CODEGEN + "; -dopt=off's unoptimised device code is not modelled"}),
    "default-device": ("refused", "gpuemu compiles a function without an execution space as a "
                       "__host__ one (nvcc's default); mark the functions kernels call __device__"),
}

# ptxas options inside -Xptxas (comma-separated): name -> None (accepted) or a reason.
PTXAS: dict = {
    "dlcm=ca": None, "dlcm=cg": None,     # honoured: the module's L1 policy for global loads
    "v": None, "verbose": None, "warn-spills": None, "warn-lmem-usage": None, "O3": None,
}
PTXAS_REFUSED = {"O": "gpuemu models ptxas's default -O3; other levels are not modelled",
                 "dlcm": "gpuemu models -dlcm=ca and -dlcm=cg only"}

_ARCH = re.compile(r"(?:sm|compute|lto)_(\d{2,3})[af]?$")


def _error(message: str, option: str) -> Exception:
    from isa import ir
    from isa.diagnostics import CompileError
    return CompileError(message, ir.Loc("<options>", 1, 1), option)


def _split_name(token: str) -> tuple:
    """('-ftz=true') -> ('ftz', 'true'); ('-DX=1') -> ('D', 'X=1'); value None if absent."""
    body = token.lstrip("-")
    name, eq, value = body.partition("=")
    if name[:1] in ("I", "D") and name not in OPTIONS and name not in ALIASES:
        return name[0], body[1:]            # joined -DX=1 / -I/path
    if re.fullmatch(r"O\d", name):
        return "O", name[1:]
    return ALIASES.get(name, name), (value if eq else None)


def _closest(name: str) -> str:
    """' (did you mean -X?)' for the known option nearest to name, or ''."""
    known = sorted(set(OPTIONS) | set(ALIASES))
    got = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    return f" (did you mean -{got[0]}?)" if got else ""


def _check_arch(token: str, value: str, cc: tuple, arch: str) -> None:
    """-arch/-code values (comma-separated) must name RawModule's arch=."""
    for one in value.split(","):
        m = _ARCH.match(one.strip())
        if m is None:
            raise _error(f"{token}: '{one}' names no architecture gpuemu knows; the module is "
                         f"compiled for RawModule's arch={arch!r}", token)
        got = (int(m.group(1)[:-1]), int(m.group(1)[-1]))
        if got != tuple(cc):
            raise _error(f"{token} names {one} but RawModule's arch={arch!r} is compute capability "
                         f"{cc[0]}.{cc[1]}; pass arch= for the architecture instead", token)


def _check_ptxas(token: str, one: str) -> None:
    """One ptxas option of -Xptxas: accepted, or a CompileError."""
    name = one.strip().lstrip("-")
    if name.startswith("maxrregcount"):
        rest = name[len("maxrregcount"):].lstrip("=")
        if not rest.isdigit() or int(rest) < 1:
            raise _error(f"{token}: maxrregcount needs a positive integer, got {rest!r}", token)
    elif name not in PTXAS:
        why = PTXAS_REFUSED.get(re.sub(r"[=\d].*", "", name))
        if why is None:
            raise _error(f"{token}: unknown ptxas option -{name}; gpuemu accepts "
                         f"{', '.join('-' + p for p in PTXAS)}, -maxrregcount=N", token)
        raise _error(f"{token}: {why}", token)


def check_options(tokens: list, cc: tuple, arch: str) -> list:
    """RawModule's option tokens checked against OPTIONS: a refused or
    unknown option is a CompileError naming it (and what gpuemu does instead,
    or the closest known option). Returns them in one spelling: -I<dir>,
    -D<def>, -maxrregcount=N, and ('-Xptxas', X) for each ptxas option X;
    the accepted others as given."""
    out, i = [], 0
    while i < len(tokens):
        token = str(tokens[i])
        if not token.startswith("-"):
            raise _error(f"'{token}' is not an option (an option starts with '-')", token)
        name, value = _split_name(token)
        kind, detail = OPTIONS.get(name, (None, None))
        if kind is None:
            raise _error(f"unknown option {token}{_closest(name)}", token)
        if kind in ("flag", "refused"):
            if value is not None:
                raise _error(f"{token}: -{name} takes no value", token)
            if kind == "refused":
                raise _error(f"{token}: {detail}", token)
            out.append(token)
            i += 1
            continue
        given = [token]
        if (value is None or (name in ("I", "D") and value == "")) and i + 1 < len(tokens) \
                and (name in ("I", "D", "Xptxas") or not str(tokens[i + 1]).startswith("-")):
            value = str(tokens[i + 1])      # '-D X', '--std c++17', '-Xptxas -v'
            given.append(value)
            i += 1
        i += 1
        shown = " ".join(given)
        if name in ("I", "D"):
            out.append(f"-{name}{value or ''}")
        elif name == "maxrregcount":
            if value is None or not value.isdigit() or int(value) < 1:
                raise _error(f"{shown}: -maxrregcount needs a positive integer", shown)
            out.append(f"-maxrregcount={value}")
        elif name == "Xptxas":
            for one in (value or "").split(","):
                _check_ptxas(shown, one)
                out += ["-Xptxas", one]
        elif kind == "value":
            if value is None:
                raise _error(f"{shown}: -{name} needs a value", shown)
            out += given
        elif kind == "arch":
            _check_arch(shown, value or "", cc, arch)
            out += given
        else:                               # a choice
            if value not in detail:
                raise _error(f"{shown}: -{name} takes {' or '.join(detail)}", shown)
            if detail[value] is not None:
                raise _error(f"{shown}: {detail[value]}", shown)
            out += given
    return out


__all__ = ["OPTIONS", "ALIASES", "PTXAS", "check_options"]
