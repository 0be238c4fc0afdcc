"""Parse ``__global__`` kernel signatures from CUDA source text (no nvcc needed)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LAUNCH_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s*)?"
_KERNEL = re.compile(r"__global__\s+" + _LAUNCH_BOUNDS + r"void\s+" + _LAUNCH_BOUNDS + r"(\w+)\s*\(([^)]*)\)", re.S)

# struct-module codes understood by pycuda's Function.prepare
_SCALAR_CODES = {
    "float": "f",
    "double": "d",
    "int": "i",
    "int32_t": "i",
    "unsigned": "I",
    "unsigned int": "I",
    "uint32_t": "I",
    "bool": "?",
    "char": "b",
    "unsigned char": "B",
    "short": "h",
    "long long": "q",
    "int64_t": "q",
    "unsigned long long": "Q",
    "uint64_t": "Q",
}


@dataclass(frozen=True)
class KernelParam:
    """One kernel parameter: its C type (without qualifiers), name and pointer flag."""

    ctype: str
    name: str
    is_pointer: bool

    @property
    def code(self) -> str:
        """pycuda ``prepare`` type code of this parameter."""
        if self.is_pointer:
            return "P"
        try:
            return _SCALAR_CODES[self.ctype]
        except KeyError:
            raise ValueError(f"unsupported kernel parameter type '{self.ctype} {self.name}'") from None

    @property
    def base_kind(self) -> str:
        """'float', 'int' or 'other': what a pointer parameter points to (4-byte kinds only)."""
        if self.ctype in ("float",):
            return "float"
        if self.ctype in ("int", "int32_t"):
            return "int"
        if self.ctype in ("unsigned", "unsigned int", "uint32_t"):
            return "uint"
        return "other"


def strip_comments(source: str) -> str:
    """Remove C and C++ comments."""
    return _COMMENTS.sub(" ", source)


def _parse_param(text: str) -> KernelParam:
    text = " ".join(text.replace("*", " * ").split())
    tokens = [t for t in text.split(" ") if t not in ("const", "__restrict__", "restrict", "volatile")]
    if len(tokens) < 2:
        raise ValueError(f"cannot parse kernel parameter '{text}'")
    name = tokens[-1]
    is_pointer = "*" in tokens
    ctype = " ".join(t for t in tokens[:-1] if t != "*")
    return KernelParam(ctype=ctype, name=name, is_pointer=is_pointer)


def parse_kernel_signatures(source: str) -> dict[str, list[KernelParam]]:
    """Return ``{kernel_name: [KernelParam, ...]}`` for every ``__global__`` function."""
    out: dict[str, list[KernelParam]] = {}
    for match in _KERNEL.finditer(strip_comments(source)):
        name, params = match.group(1), match.group(2).strip()
        if not params or params == "void":
            out[name] = []
        else:
            out[name] = [_parse_param(p) for p in params.split(",")]
    return out
