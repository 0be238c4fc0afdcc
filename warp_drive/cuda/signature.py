"""Read CUDA source text without nvcc: kernel signatures, C linkage, and which kernels call a
given device function (directly or through other device functions)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from warp_drive.errors import KernelSignatureError

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# string and character literals other than the "C" of extern "C" (their braces would confuse a scan)
_LITERALS = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)+\'')
_DIRECTIVES = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
_LAUNCH_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s*)?"
_KERNEL = re.compile(
    r"__global__\s+" + _LAUNCH_BOUNDS + r"void\s+" + _LAUNCH_BOUNDS + r"(\w+)\s*\(([^)]*)\)\s*([;{]?)", re.S
)
_EXTERN_C = re.compile(r'extern\s+"C"\s*$')  # before a kernel, or before the { of a block
_NAMESPACE = re.compile(r"namespace(?:\s+\w+)?\s*$")
_QUALIFIERS = ("const", "__restrict__", "restrict", "volatile", "struct")
_NOT_FUNCTIONS = frozenset({"if", "for", "while", "switch", "catch", "return", "sizeof", "do", "else", "defined"})

# struct-module codes understood by pycuda's Function.prepare
_SCALAR_CODES = {
    "float": "f",
    "double": "d",
    "int": "i",
    "signed": "i",
    "signed int": "i",
    "int32_t": "i",
    "unsigned": "I",
    "unsigned int": "I",
    "uint32_t": "I",
    "bool": "?",
    "char": "b",
    "signed char": "b",
    "int8_t": "b",
    "unsigned char": "B",
    "uint8_t": "B",
    "short": "h",
    "int16_t": "h",
    "unsigned short": "H",
    "uint16_t": "H",
    "long long": "q",
    "long long int": "q",
    "int64_t": "q",
    "unsigned long long": "Q",
    "unsigned long long int": "Q",
    "uint64_t": "Q",
    "size_t": "Q",
}
# what a pointer parameter points to, for the 4-byte kinds (KernelParam.base_kind)
_BASE_KINDS = {"float": "float", "int": "int", "int32_t": "int", "signed": "int", "signed int": "int",
               "unsigned": "uint", "unsigned int": "uint", "uint32_t": "uint"}


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
            raise KernelSignatureError(f"unsupported kernel parameter type '{self.ctype} {self.name}'") from None

    @property
    def base_kind(self) -> str:
        """'float', 'int', 'uint' or 'other': what a pointer parameter points to (4-byte kinds only)."""
        return _BASE_KINDS.get(self.ctype, "other")


def strip_comments(source: str) -> str:
    """Remove C and C++ comments."""
    return _COMMENTS.sub(" ", source)


def _parse_param(text: str, position: int) -> KernelParam:
    text = text.split("=", 1)[0]  # a default argument (allowed in declarations)
    text = " ".join(text.replace("*", " * ").replace("&", " & ").split())
    tokens = [t for t in text.split(" ") if t not in _QUALIFIERS]
    if not tokens:
        raise KernelSignatureError(f"cannot parse kernel parameter '{text}'")
    is_pointer = "*" in tokens
    words = [t for t in tokens if t not in ("*", "&")]
    # the last word is the name unless the parameter is unnamed (a declaration: `float*`, `int`)
    if len(words) >= 2 and " ".join(words) not in _SCALAR_CODES and words[-1] not in _SCALAR_CODES:
        name, type_words = words[-1], words[:-1]
    else:
        name, type_words = f"arg{position}", words
    return KernelParam(ctype=" ".join(type_words), name=name, is_pointer=is_pointer)


def parse_params(params: str) -> list[KernelParam]:
    """The parameters of a C parameter list (the text between the parentheses)."""
    params = params.strip()
    if not params or params == "void":
        return []
    return [_parse_param(p, i) for i, p in enumerate(params.split(","))]


def parse_kernel_signatures(source: str) -> dict[str, list[KernelParam]]:
    """Return ``{kernel_name: [KernelParam, ...]}`` for every ``__global__`` function.

    Declarations (prototypes, possibly with unnamed parameters or default values) and
    definitions are both read; when a kernel has both, the definition's parameter names win.
    """
    out: dict[str, list[KernelParam]] = {}
    defined: set[str] = set()
    for match in _KERNEL.finditer(strip_comments(source)):
        name, params, end = match.group(1), match.group(2), match.group(3)
        if name in defined:
            continue
        out[name] = parse_params(params)
        if end == "{":
            defined.add(name)
    return out


def _extern_c_ranges(text: str) -> list[tuple[int, int]]:
    """Character ranges of the ``extern "C" { ... }`` blocks of comment-free text."""
    ranges = []
    for match in re.finditer(r'extern\s+"C"\s*\{', text):
        start = match.end() - 1
        depth = 0
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    ranges.append((start, i))
                    break
        else:
            ranges.append((start, len(text)))
    return ranges


def kernel_linkage(source: str) -> dict[str, bool]:
    """``{kernel_name: True when it has C linkage}``: declared ``extern "C" __global__`` or inside an
    ``extern "C" { ... }`` block. A kernel without C linkage gets a mangled symbol name, which
    ``get_function(name)`` cannot find."""
    text = strip_comments(source)
    ranges = _extern_c_ranges(text)
    out: dict[str, bool] = {}
    for match in _KERNEL.finditer(text):
        name, pos = match.group(1), match.start()
        linked = bool(_EXTERN_C.search(text[max(0, pos - 64):pos])) or any(a < pos < b for a, b in ranges)
        out[name] = out.get(name, False) or linked
    return out


def _function_name(head: str) -> str | None:
    """Name of the function whose definition header is ``head`` (text before its ``{``)."""
    head = re.sub(r"\b(?:const|noexcept|override|final)\s*$", "", head.rstrip()).rstrip()
    if not head.endswith(")"):
        return None
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        if head[i] == ")":
            depth += 1
        elif head[i] == "(":
            depth -= 1
            if depth == 0:
                match = re.search(r"(\w+)\s*$", head[:i])
                if match is None or match.group(1) in _NOT_FUNCTIONS:
                    return None
                return match.group(1)
    return None


def function_bodies(source: str) -> dict[str, str]:
    """``{function_name: body text}`` for every function defined at namespace scope (kernels and
    device functions; bodies of overloads are joined). ``extern "C"`` and namespace blocks are
    looked through."""
    text = strip_comments(source)
    text = _LITERALS.sub(lambda m: m.group() if m.group() == '"C"' else '""', text)
    text = _DIRECTIVES.sub(lambda m: " " * len(m.group()), text)
    bodies: dict[str, str] = {}
    stack: list[tuple[str, str | None, int]] = []  # (kind, name, position of the brace)
    boundary = 0
    for match in re.finditer(r"[{};]", text):
        char, pos = match.group(), match.start()
        if char == "{":
            head = text[boundary:pos]
            at_top = all(kind == "open" for kind, _, _ in stack)
            if at_top and (_EXTERN_C.search(head) or _NAMESPACE.search(head)):
                stack.append(("open", None, pos))
            elif at_top and (name := _function_name(head)) is not None:
                stack.append(("function", name, pos))
            else:
                stack.append(("block", None, pos))
        elif char == "}" and stack:
            kind, name, start = stack.pop()
            if kind == "function" and name is not None:
                bodies[name] = bodies.get(name, "") + text[start + 1:pos]
        boundary = pos + 1
    return bodies


def functions_calling(source: str, symbol: str) -> set[str]:
    """Names of the functions of ``source`` that call ``symbol``, directly or through other
    functions defined in ``source``."""
    bodies = function_bodies(source)
    users: set[str] = set()
    targets = [symbol]
    while targets:
        target = targets.pop()
        call = re.compile(rf"\b{re.escape(target)}\s*\(")
        for name, body in bodies.items():
            if name not in users and name != symbol and call.search(body):
                users.add(name)
                targets.append(name)
    return users
