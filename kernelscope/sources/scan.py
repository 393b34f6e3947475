"""Find kernel definitions and test references in one source file — pure functions over its text.

Readers of source layouts, one function per language family. Regex-based on purpose: a repository
index must parse pytorch-sized trees on two cores in seconds, and every definition it reports is
re-checked against the file when a name is looked up.

Definitions (``Definition.kind``):
  triton    ``@triton.jit`` / ``@jit`` / ``@triton.autotune`` / ``@triton.heuristics`` / ``@gluon.jit`` functions
  flydsl    ``@flyc.kernel`` functions (FlyDSL, AMD's Python kernel DSL: a profiler prints ``<name>_0``); with
            ``name="…"`` the string is the kernel's name, with a computed ``name=`` it is not indexed
  helion    ``@helion.kernel`` functions, indexed as the device function Helion generates: ``_helion_<name>``
  cute      classes of CuTe-DSL kernels (``import cutlass.cute``): FlashAttention 4 and friends
  global    CUDA/HIP ``__global__`` functions (and templates)
  macro     kernels stamped out by a ``#define`` whose body declares a ``__global__`` (FlashAttention 2)
  struct    structs/classes in GPU sources: ck_tile kernels, ATen functors, CUTLASS kernel classes
  function  host functions in GPU sources that own the kernel's lambdas (ATen's ``*_kernel_cuda``)
  asm       pre-built assembly kernels named by mangled symbol strings (aiter ``_ZN5aiter...E``)
  op        aiter ``@compile_ops`` Python entry points
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from kernelscope.identity.cxx import split_top

PY_EXT = {".py"}
CXX_EXT = {".cu", ".cuh", ".hip", ".h", ".hpp", ".cpp", ".cc", ".cxx", ".inl", ".inc", ".hxx"}
GPU_EXT = {".cu", ".cuh", ".hip"}
CODE_OBJECT_EXT = {".co", ".hsaco"}  # AMDGPU code objects: read by their symbol table
DATA_EXT = {".csv", *CODE_OBJECT_EXT}
CMAKE = "CMakeLists.txt"
TEST_DIRS = {"test", "tests", "op_tests", "unittest", "unittests", "testing"}
VENDOR_DIRS = {"third_party", "3rdparty"}  # another project's code, copied in


@dataclass(frozen=True)
class Definition:
    symbol: str
    line: int
    kind: str
    namespace: str = ""  # "vllm::moe" for C++; the module's dotted path for Python
    # C++ kernels and structs: template parameters (0: not a template; None: not read, as for macro-made
    # kernels and Python) and whether the last is a pack (``typename... Ts``)
    arity: int | None = None
    variadic: bool = False


@dataclass(frozen=True)
class TestRef:
    token: str
    line: int
    test: str  # "test_fn" or "TestClass::test_fn"; "" at module level (imports)


def is_test_path(path: str) -> bool:
    p = PurePosixPath(path)
    name = p.name
    if name in ("conftest.py", "__init__.py"):
        return False
    if name.startswith("test_") or name.endswith(("_test.py", "_test.cpp", "_test.cu", "_tests.py")):
        return True
    # C++ tests are often named after the op alone (test/gemm/gemm_bf16.cpp); Python helpers in test
    # folders (utils.py, benchmarks) are not tests
    return any(part in TEST_DIRS for part in p.parts[:-1]) and p.suffix in CXX_EXT


def is_vendored_path(path: str) -> bool:
    return any(part in VENDOR_DIRS for part in PurePosixPath(path).parts[:-1])


# --- Python ---------------------------------------------------------------------------------------

_PY_DECOR = re.compile(
    r"^[ \t]*@(?:triton\.|tl\.|gluon\.)?(?:jit|autotune|heuristics)\b|^[ \t]*@(?:\w+\.)?compile_ops\b", re.M
)
# FlyDSL (``import flydsl.compiler as flyc``): the decorator's arguments, to see a ``name=`` that renames the kernel
_FLYDSL_DECOR = re.compile(r"^[ \t]*@(?:flyc|flydsl(?:\.compiler)?)\.kernel\b(?:[ \t]*\((?P<args>[^)]*)\))?", re.M)
_FLYDSL_NAME = re.compile(r"\bname[ \t]*=[ \t]*(?:(?P<q>[\"'])(?P<lit>\w+)(?P=q))?")
# Helion (pytorch/helion) lowers ``@helion.kernel def f`` to a Triton (or CuTe) device function ``_helion_f``
_HELION_DECOR = re.compile(r"^[ \t]*@helion\.kernel\b", re.M)
_PY_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", re.M)
_PY_CLASS = re.compile(r"^[ \t]*class[ \t]+(\w+)\b", re.M)
_PY_TEST = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:def[ \t]+(test\w*)|class[ \t]+(Test\w*))", re.M)
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a C/Python identifier: a symbol, a bare kernel name


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in re.finditer("\n", text))
    return starts


def _line_of(starts: list[int], offset: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def _decorated(text: str, decorator: re.Pattern[str]) -> Iterator[tuple[re.Match[str], re.Match[str]]]:
    """Each match of ``decorator`` with the ``def`` it decorates."""
    for m in decorator.finditer(text):
        if (d := _PY_DEF.search(text, m.end())) is not None:
            yield m, d


def python_definitions(text: str) -> list[Definition]:
    found: list[tuple[str, int, str]] = []  # (symbol, offset, kind)
    if "jit" in text or "autotune" in text or "compile_ops" in text:
        found += [
            (d.group(1), d.start(1), "op" if "compile_ops" in m.group(0) else "triton")
            for m, d in _decorated(text, _PY_DECOR)
        ]
    if "kernel" in text and "fly" in text:
        for m, d in _decorated(text, _FLYDSL_DECOR):
            named = _FLYDSL_NAME.search(m.group("args") or "")
            if named is None or named.group("lit") is not None:  # a computed name is not the def's: skipped
                found.append((named.group("lit") if named is not None else d.group(1), d.start(1), "flydsl"))
    if "helion" in text:
        found += [(f"_helion_{d.group(1)}", d.start(1), "helion") for _, d in _decorated(text, _HELION_DECOR)]
    if "cute" in text and re.search(r"^\s*(?:import|from)\s+cutlass", text, re.M):
        found += [(m.group(1), m.start(1), "cute") for m in _PY_CLASS.finditer(text)]
    starts = _line_starts(text) if found else []
    defs = [Definition(sym, _line_of(starts, off), kind) for sym, off, kind in found]
    # one definition per (symbol, line): a def under two matching decorators is one kernel
    return list({(d.symbol, d.line): d for d in defs}.values())


def python_test_refs(text: str, wanted: frozenset[str]) -> list[TestRef]:
    """References to ``wanted`` identifiers, each attributed to its enclosing ``test_*`` function."""
    scopes: list[tuple[int, str]] = []  # (offset, "Class::fn" or "fn") in file order
    cls = ""
    for m in _PY_TEST.finditer(text):
        indent, fn, klass = m.group(1), m.group(2), m.group(3)
        if klass:
            cls = klass if not indent else cls
            continue
        if not indent:
            cls = ""
        scopes.append((m.start(), f"{cls}::{fn}" if indent and cls else fn))
    return _refs(text, wanted, scopes)


def _refs(text: str, wanted: frozenset[str], scopes: list[tuple[int, str]]) -> list[TestRef]:
    starts = _line_starts(text)
    seen: set[tuple[str, str]] = set()
    out: list[TestRef] = []
    si, scope = 0, ""
    for m in IDENT.finditer(text):
        tok = m.group()
        if tok not in wanted:
            continue
        while si < len(scopes) and scopes[si][0] <= m.start():
            scope = scopes[si][1]
            si += 1
        if (tok, scope) not in seen:
            seen.add((tok, scope))
            out.append(TestRef(tok, _line_of(starts, m.start()), scope))
    return out


# --- C++ / CUDA / HIP -----------------------------------------------------------------------------

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_GLOBAL = re.compile(r"\b__global__\b")
# a kernel declared through a project's macro for ``__global__`` (RAFT's ``RAFT_KERNEL``, CCCL's
# ``_CCCL_KERNEL_ATTRIBUTES``, rocPRIM's ``ROCPRIM_KERNEL``): an upper-case word naming KERNEL, then a declaration
_MACRO_KERNEL = re.compile(r"^[ \t]*(?:static[ \t]+)?(_?[A-Z][A-Z0-9_]*KERNEL[A-Z0-9_]*)\s+(?=[\w\[])", re.M)
_CALLISH = re.compile(r"(~?\w+)\s*\(")
_PASTED = re.compile(r"(\w+)\s*##\s*(\w+)\s*\(")  # a kernel name a macro pastes: ``ncclDevKernel_##suffix(``
# a kernel name a code generator's template spells with Jinja placeholders:
# ``{{ mdesc }}_embedding{{ ndesc }}_codegen_forward_{{ desc_suffix }}_kernel(``
_PLACEHOLDER = re.compile(r"\{\{.*?\}\}")
_TEMPLATED = re.compile(r"((?:\w|\{\{[^{}\n]*\}\})*\{\{[^{}\n]*\}\}(?:\w|\{\{[^{}\n]*\}\})*)\s*\(")
TEMPLATED = "templated"  # a Definition whose symbol has ``{{}}`` placeholders (any identifier characters)


def templated_match(symbol: str, name: str) -> bool:
    """Whether a templated definition's symbol (``{{}}_embedding{{}}_codegen_forward_{{}}_kernel``) spells ``name``."""
    parts = [re.escape(p) for p in symbol.split("{{}}")]
    return re.fullmatch(r"\w*".join(parts), name) is not None


_NOT_A_NAME = re.compile(r"^(?:__\w+__|[A-Z][A-Z0-9_]*|void|static|inline|extern|const|auto|decltype|alignas)$")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", re.M)
# an object-like macro (no parameter list): ``#define MY_GLOBAL static __global__ void``
_OBJECT_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(?![\w(])((?:[^\n]*\\\n)*[^\n]*)", re.M)
_STRUCT = re.compile(
    r"\b(?:struct|class)\s+(?:alignas\s*\([^)]*\)\s*)?(?:[A-Z_][A-Z0-9_]*\s+)*(\w+)\s*(?:final\s*)?(?::[^;{()]*)?\{"
)
_FUNC = re.compile(
    r"^[ \t]*(?:template\s*<[^;{}]*>\s*)?(?:(?:static|inline|__host__|C10_\w+|TORCH_\w+)\s+)*"
    r"(?:void|auto|Tensor|at::Tensor)\s*&?\s+(\w+)\s*\([^;{}]*\)\s*(?:const\s*)?\{",
    re.M,
)
_NS_OR_BRACE = re.compile(
    r"\bnamespace\s+(?:(?:[A-Z][A-Z0-9_]*\s+|\[\[[^\]]*\]\]\s*)(?=[\w:]))*([\w:]*)\s*\{|[{}]"  # CUGRAPH_EXPORT cugraph
    # a line that only names a macro opening or closing namespaces (VLLM_NAMESPACE_BEGIN, MOE_END)
    r"|^[ \t]*([A-Z][A-Z0-9_]*?(?:NAMESPACE[A-Z0-9_]*|_BEGIN|_OPEN|_START|_END|_CLOSE))"
    r"[ \t]*(?:\(\s*\))?[ \t]*;?[ \t]*$",
    re.M,
)
_GPU_MARKERS = (
    "__global__",
    "__device__",
    "__host__",
    "CK_TILE_DEVICE",
    "CUTLASS_DEVICE",
    "CUTLASS_HOST_DEVICE",
    "CUTLASS_GLOBAL",
    "CUTE_DEVICE",
    "CUTE_HOST_DEVICE",
    "C10_DEVICE",
    "C10_HOST_DEVICE",
    "GPU_LAMBDA",
)


def _blank(pattern: re.Pattern[str], text: str) -> str:
    """``pattern``'s matches replaced by spaces of the same length, so offsets (and lines) stay true."""
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


# conditional directives inside a declaration (`__global__ void\n#if defined(USE_ROCM)\n__launch_bounds__(…)\n#endif\n
# k(`) would name the kernel `defined`; blanked, the name that follows is read
_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|else|endif|pragma)\b(?:[^\n]*\\\n)*[^\n]*", re.M)


def _namespaces(code: str, values: dict[str, str] | None = None) -> list[tuple[int, str]]:
    """(offset, namespace chain in force from there) at every namespace open and close; ``namespace NAME {``
    with a macro NAME the file defines (``values``) is the macro's value. A macro that opens
    namespaces on a line of its own (``VLLM_NAMESPACE_BEGIN``) stands in the chain as its name, upper case:
    scopes that are there but unknown, until a closing macro (``*_END``, ``*_CLOSE``)."""
    stack: list[str | None] = []
    macros: list[str] = []
    marks: list[tuple[int, str]] = [(0, "")]

    def mark(at: int) -> None:
        marks.append((at, "::".join([*macros, *(s for s in stack if s)])))

    for m in _NS_OR_BRACE.finditer(code):
        tok = m.group()
        if m.group(2):
            name = m.group(2)
            if name.endswith(("_END", "_CLOSE")):
                if macros:
                    macros.pop()
            elif not stack:  # at file scope: inside a function it is a statement macro
                macros.append(name)
            mark(m.end())
        elif tok == "}":
            if stack:
                popped = stack.pop()
                if popped is not None:
                    mark(m.end())
        elif tok == "{":
            stack.append(None)
        else:
            name = m.group(1) or "(anonymous)"
            stack.append((values or {}).get(name, name))
            mark(m.end())
    return marks


def _ns_at(marks: list[tuple[int, str]], offset: int) -> str:
    lo, hi = 0, len(marks) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if marks[mid][0] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return marks[lo][1]


def _kernel_name_after(code: str, pos: int) -> tuple[str, int] | None:
    """The declared name following ``__global__`` (skipping return types, attributes and macros, and their
    arguments: ``__launch_bounds__(getLaunchBound(), 3) pqCodeDistances(`` is ``pqCodeDistances``)."""
    end = min(len(code), pos + 600)
    while (m := _CALLISH.search(code, pos, end)) is not None:
        if not _NOT_A_NAME.match(m.group(1)):
            return m.group(1), m.start(1)
        close = closing(code, m.end() - 1, "(", ")", limit=end - m.end())
        pos = close + 1 if close >= 0 else m.end()
    return None


def _is_declaration(code: str, name_at: int) -> bool:
    """``__global__ void k(args);`` declares a kernel defined elsewhere: not a definition."""
    i = code.find("(", name_at)
    j = closing(code, i, "(", ")", limit=20000) if i >= 0 else -1
    return j >= 0 and code[j + 1 : j + 200].lstrip().startswith(";")


_QUALIFIER_TAIL = re.compile(r"(?:\b[A-Za-z_]\w*|\[\[[^\]]*\]\])$")
_REQUIRES = re.compile(r"\brequires\b[^;{}()]*(?:\([^;{}]*\))?[^;{}()]*$")


def closing(code: str, open_at: int, opener: str, closer: str, limit: int | None = None) -> int:
    """The offset of the bracket that closes ``code[open_at]`` (-1: none, or none within ``limit`` characters)."""
    depth = 0
    end = len(code) if limit is None else min(len(code), open_at + limit)
    for k in range(open_at, end):
        depth += 1 if code[k] == opener else -1 if code[k] == closer else 0
        if depth == 0:
            return k
    return -1


def _opening(code: str, close: int, opener: str, closer: str) -> int:
    """The offset of the bracket that ``code[close]`` closes (-1: none before it). Parenthesized groups inside
    other brackets are stepped over whole: in a template list's default ``bool kLinked = (kRanks > 1 and
    not kCached)`` the comparison is no bracket."""
    depth, k = 0, close
    while k >= 0:
        if code[k] == ")" and opener != "(":
            k = _opening(code, k, "(", ")")
            if k < 0:
                return -1
        else:
            depth += 1 if code[k] == closer else -1 if code[k] == opener else 0
            if depth == 0:
                return k
        k -= 1
    return -1


def _template_params(code: str, start: int) -> tuple[int, bool]:
    """(parameters, variadic) of the ``template <...>`` heading the declaration at ``start``; (0, False)
    when none does. Qualifiers and macros between them (``static``, ``__launch_bounds__(256)``,
    ``C10_LAUNCH_BOUNDS_1(128)``, ``[[nodiscard]]``) are stepped over."""
    i = start
    for _ in range(12):
        j = len(code[max(0, i - 400) : i].rstrip()) + max(0, i - 400)
        if clause := _REQUIRES.search(code, max(0, j - 300), j):  # a C++20 constraint after the template list
            i = clause.start()
            continue
        if j > 0 and code[j - 1] == ">":
            break
        line = code.rfind("\n", 0, j) + 1
        if code[line:j].lstrip().startswith("#"):  # a preprocessor line (#if USE_ROCM) between them
            i = line
            continue
        if j > 0 and code[j - 1] == ")":  # a macro's or attribute's argument list
            i = _opening(code, j - 1, "(", ")")
            continue
        m = _QUALIFIER_TAIL.search(code, max(0, j - 200), j)
        if m is None or m.end() != j:
            return 0, False
        i = m.start()
    else:
        return 0, False
    k = _opening(code, j - 1, "<", ">")
    if k < 0 or not code[max(0, k - 40) : k].rstrip().endswith("template"):
        return 0, False
    inner = code[k + 1 : j - 1].strip()
    if not inner:  # template <>: an explicit specialization, arguments fixed
        return 0, False
    params = split_top(inner, ",")
    return len(params), "..." in params[-1]


_NS_MACRO = re.compile(
    r"^[ \t]*#[ \t]*define[ \t]+([A-Z][A-Z0-9_]*)[ \t]+([A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)[ \t]*$", re.M
)
NS_MACRO = "nsmacro"  # a Definition that is no kernel: a macro naming a namespace, and its value (``namespace``)


def _namespace_macros(code: str) -> dict[str, tuple[str, int]]:
    """``#define FLASH_NAMESPACE flash``: macros that name a namespace (their name says so, or the file
    opens ``namespace NAME {``), with their value and offset."""
    opened = set(re.findall(r"\bnamespace\s+([A-Z][A-Z0-9_]*)\s*\{", code))
    return {
        m.group(1): (m.group(2), m.start(1))
        for m in _NS_MACRO.finditer(code)
        if m.group(1) in opened or "NAMESPACE" in m.group(1) or m.group(1).endswith("_NS")
    }


def _templated_definitions(code: str, starts: list[int], marks: list[tuple[int, str]]) -> list[Definition]:
    """Kernels of a code generator's template (FBGEMM's Jinja), their names spelled with placeholders; a name of
    fewer than eight characters besides them says too little to match."""
    named = {t.start(1): t for g in _GLOBAL.finditer(code) for t in _TEMPLATED.finditer(code, g.end(), g.end() + 400)}
    defs = []
    for at, t in named.items():
        if len(_PLACEHOLDER.sub("", t.group(1))) >= 8 and not _is_declaration(code, t.end(1)):
            symbol = _PLACEHOLDER.sub("{{}}", t.group(1))
            # its template parameters are templated too ({%- if %} lines): their count is not read
            defs.append(Definition(symbol, _line_of(starts, at), TEMPLATED, _ns_at(marks, at)))
    return defs


def cxx_definitions(text: str, path: str) -> list[Definition]:
    ext = PurePosixPath(path).suffix
    gpu = ext in GPU_EXT or any(k in text for k in _GPU_MARKERS) or _MACRO_KERNEL.search(text) is not None
    if not gpu and "NAMESPACE" not in text and "_NS" not in text:  # no kernels and no namespace macros
        return []
    code = _blank(_CONDITIONAL, _blank(_COMMENT, text))
    starts = _line_starts(code)
    macros = _namespace_macros(code)
    # the file's own macro values stand in its namespaces; another file's are the finder's (NS_MACRO rows)
    defs = [Definition(n, _line_of(starts, at), NS_MACRO, v) for n, (v, at) in macros.items()]
    if not gpu:
        return defs
    marks = _namespaces(code, {n: v for n, (v, _) in macros.items()})
    # an object-like macro whose value holds ``__global__`` stands for it where it is used, not where it is defined
    aliases = [m for m in _OBJECT_DEFINE.finditer(code) if _GLOBAL.search(m.group(2))]
    marker = re.compile(r"\b(?:" + "|".join(["__global__", *(re.escape(a.group(1)) for a in aliases)]) + r")\b")
    in_macro: list[tuple[int, int]] = []
    for m in _DEFINE.finditer(code):
        in_macro.append((m.start(), m.end()))
        params = [p.strip() for p in m.group(2).split(",")]
        body = m.group(3)
        if not (g := marker.search(body)):
            continue
        if (pasted := _PASTED.search(body, g.start())) and pasted[2] in params:
            # ``__global__ void ncclDevKernel_##suffix(``: every kernel the macro stamps starts with the prefix
            if len(pasted[1]) >= 8:
                at = m.start(1)
                defs.append(Definition(pasted[1] + "{{}}", _line_of(starts, at), TEMPLATED, _ns_at(marks, at)))
            continue
        if params and params[0]:
            kernel = _kernel_name_after(body, g.end())
            if kernel and kernel[0] == params[0]:  # the macro's first argument names the kernel
                for inv in re.finditer(rf"\b{re.escape(m.group(1))}\s*\(\s*(\w+)", code[m.end() :]):
                    off = m.end() + inv.start(1)
                    defs.append(Definition(inv.group(1), _line_of(starts, off), "macro", _ns_at(marks, off)))
    in_macro += [(m.start(), m.end()) for m in aliases]

    def macro_body(off: int) -> bool:
        return any(a <= off < b for a, b in in_macro)

    # ``__global__`` and a macro that stands for it (RAFT_KERNEL map_kernel(...)): where it starts -> where the
    # name is read from (one entry per start: a file's own RAFT_KERNEL is both an alias and a *KERNEL* macro)
    marked = {k.start(1): k.end() for k in _MACRO_KERNEL.finditer(code)}
    marked |= {u.start(): u.end() for u in marker.finditer(code)}
    for start, end in sorted(marked.items()):
        found = None if macro_body(start) else _kernel_name_after(code, end)
        if found and not _is_declaration(code, found[1]):
            n, pack = _template_params(code, start)
            at = found[1]
            defs.append(Definition(found[0], _line_of(starts, at), "global", _ns_at(marks, at), n, pack))
    if "{{" in code:
        defs.extend(_templated_definitions(code, starts, marks))
    for s in _STRUCT.finditer(code):
        if not macro_body(s.start()):
            n, pack = _template_params(code, s.start())
            at = s.start(1)
            defs.append(Definition(s.group(1), _line_of(starts, at), "struct", _ns_at(marks, at), n, pack))
    if ext in GPU_EXT:
        kernels = {(d.symbol, d.line) for d in defs if d.kind == "global"}
        for f in _FUNC.finditer(code):
            line = _line_of(starts, f.start(1))
            if not macro_body(f.start()) and (f.group(1), line) not in kernels:  # not a kernel's own `void k(`
                defs.append(Definition(f.group(1), line, "function", _ns_at(marks, f.start(1))))
    return defs


_CXX_TEST = re.compile(r"\b(?:TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P)\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")


def cxx_test_refs(text: str, wanted: frozenset[str]) -> list[TestRef]:
    code = _blank(_COMMENT, text)
    scopes = [(m.start(), f"{m.group(1)}.{m.group(2)}") for m in _CXX_TEST.finditer(code)]
    return _refs(code, wanted, scopes)


# --- build files and pre-built kernels --------------------------------------------------------------

_CMAKE_TARGET = re.compile(
    r"\b(add_gtest_executable|add_test_executable|add_executable|cuda_add_executable|hip_add_executable)"
    r"\s*\(\s*([\w\-.${}]+)\s+([^)]*)\)",
    re.I,
)


def cmake_targets(text: str) -> list[tuple[str, list[str]]]:
    """(target, source files) of the test executables a CMakeLists.txt declares."""
    return [
        (m.group(2), re.findall(r"[\w\-./${}]+\.(?:cpp|cu|hip|cc)", m.group(3))) for m in _CMAKE_TARGET.finditer(text)
    ]


_AITER_SYMBOL = re.compile(r"_ZN5aiter(\d+)")


def symbol_definitions(symbols: list[str]) -> list[Definition]:
    """Pre-built kernels by the symbols a code object's table gives: aiter's ``_ZN5aiter<n><name>E`` as
    ``aiter::<name>``, plain ``extern "C"`` names (``fmoe_kernel_func``) as they are; C++ kernels are found in
    their sources."""
    out = []
    for symbol in symbols:
        if _AITER_SYMBOL.match(symbol):
            out.extend(asm_definitions(symbol))
        elif IDENT.fullmatch(symbol) and not symbol.startswith("_Z"):
            out.append(Definition(symbol, 1, "asm"))
    return list({(d.namespace, d.symbol): d for d in out}.values())


def asm_definitions(text: str) -> list[Definition]:
    """Pre-built kernels named by their mangled symbol: in aiter's code objects (``.co``, read as
    latin-1 text) and in the tables and launchers that load them by name."""
    starts = _line_starts(text)
    out = []
    for m in _AITER_SYMBOL.finditer(text):
        n = int(m.group(1))
        symbol = text[m.end() : m.end() + n]
        if len(symbol) == n and text[m.end() + n : m.end() + n + 1] == "E" and IDENT.fullmatch(symbol):
            out.append(Definition(symbol, _line_of(starts, m.start()), "asm", "aiter"))
    return list({d.symbol: d for d in out}.values())
