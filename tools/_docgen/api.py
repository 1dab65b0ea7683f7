"""The Python API reference: the public names of memspec's packages."""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from _docgen._common import (
    API_PAGE,
    IdLinker,
    code,
    first_paragraph,
    front,
    generated_note,
    md_heading,
    text,
)

#: (module, what it is) in page order; a module without __all__ is skipped with a note.
MODULES = (
    ("memspec", "The core: wire format, canonical JSON, signing, records, files, the engine "
                "interface and the error classes."),
    ("memspec.reference", "The reference engine and its parts."),
    ("memspec.conformance", "The conformance kit (a pytest plugin)."),
    ("memspec.report", "The conformance report, typed: read, validate, sign and write reports."),
    ("memspec.strategies", "Hypothesis strategies for valid wire objects, for engine authors' "
                           "own property tests."),
    ("memspec.testing", "The kit's store contract tests and state machines, for engine "
                        "authors' own test suites (guide: Test your engine in your own suite)."),
)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`]+)`")
_DOUBLE = re.compile(r"``(.+?)``")
_CODE = re.compile(r"(`[^`]+`)")


class _Ann:
    """An annotation shown exactly as written (they are strings under PEP 563)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        if isinstance(self.value, str):
            return self.value
        return inspect.formatannotation(self.value)


def stable_repr(value: Any) -> str:
    """``repr`` with sets in sorted order (their own order changes with hash seeds)."""
    if isinstance(value, set | frozenset):
        items = sorted(stable_repr(v) for v in value)
        name = type(value).__name__
        return f"{name}({{{', '.join(items)}}})" if items else f"{name}()"
    if isinstance(value, tuple) and type(value) is tuple:
        inner = ", ".join(stable_repr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list) and type(value) is list:
        return "[" + ", ".join(stable_repr(v) for v in value) + "]"
    if isinstance(value, dict) and type(value) is dict:
        return "{" + ", ".join(f"{stable_repr(k)}: {stable_repr(v)}"
                               for k, v in value.items()) + "}"
    return _ADDRESS.sub("", repr(value))


class _Shown:
    """A default value shown through :func:`stable_repr`."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return stable_repr(self.value)


def signature(obj: Any) -> str | None:
    """``(args) -> result`` of a callable, annotations as written; None when unavailable."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = []
    for param in sig.parameters.values():
        if param.annotation is not inspect.Parameter.empty:
            param = param.replace(annotation=_Ann(param.annotation))
        if param.default is not inspect.Parameter.empty:
            param = param.replace(default=_Shown(param.default))
        params.append(param)
    ret = sig.return_annotation
    sig = sig.replace(parameters=params,
                      return_annotation=_Ann(ret) if ret is not inspect.Signature.empty else ret)
    return _ADDRESS.sub("", str(sig))


def doc_markdown(doc: str, linker: IdLinker) -> str:
    """A docstring paragraph as Markdown: reST roles and literals become code spans."""
    doc = _ROLE.sub(r"``\1``", doc)
    doc = _DOUBLE.sub(lambda m: "`" + m.group(1).replace("`", "") + "`", doc)
    parts = _CODE.split(doc)
    return "".join(part if index % 2 else linker.text(part, API_PAGE)
                   for index, part in enumerate(parts))


def constant_comments(package: ModuleType) -> dict[str, str]:
    """``#:`` comments above module-level assignments anywhere in ``package``."""
    found: dict[str, str] = {}
    origin = getattr(package, "__file__", None)
    files = [Path(origin)] if origin else []
    for folder in getattr(package, "__path__", []):
        files.extend(sorted(Path(folder).rglob("*.py")))
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        lines = source.splitlines()
        for node in tree.body:
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            comment: list[str] = []
            row = node.lineno - 2
            while row >= 0 and lines[row].strip().startswith("#:"):
                comment.insert(0, lines[row].strip()[2:].strip())
                row -= 1
            for target in targets:
                if isinstance(target, ast.Name) and comment:
                    found.setdefault(target.id, " ".join(comment))
    return found


def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        if issubclass(obj, BaseException):
            return "exception"
        return "class"
    if inspect.isroutine(obj) or callable(obj):
        return "function"
    if inspect.ismodule(obj):
        return "module"
    return "constant"


def _value(obj: Any) -> str:
    shown = stable_repr(obj)
    return shown if len(shown) <= 160 else shown[:157] + "..."


def _methods(cls: type, linker: IdLinker) -> list[str]:
    out = []
    for name, member in vars(cls).items():
        if name.startswith("_") and name != "__init__":
            continue
        func = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        if isinstance(member, property):
            doc = first_paragraph(inspect.getdoc(member))
            out.append(f"- `{name}` (property)" + (f": {doc_markdown(doc, linker)}"
                                                   if doc else ""))
        elif inspect.isfunction(func) and name != "__init__":
            sig = signature(func) or "(...)"
            doc = first_paragraph(inspect.getdoc(func))
            out.append(f"- {code(name + sig)}" + (f": {doc_markdown(doc, linker)}"
                                                   if doc else ""))
    return out


def render_module(name: str, about: str, linker: IdLinker) -> list[str]:
    """The section of one module."""
    out = [md_heading(2, f"`{name}`", name), "", about, ""]
    try:
        module = importlib.import_module(name)
    except Exception as exc:
        return [*out, f"*Not importable here ({text(type(exc).__name__)}).*", ""]
    public = getattr(module, "__all__", None)
    if not public:
        return [*out, f"*`{name}` declares no `__all__` yet; nothing is listed.*", ""]
    comments = constant_comments(module)
    groups: dict[str, list[str]] = {"class": [], "exception": [], "function": [],
                                    "constant": [], "module": []}
    for item in public:
        if not hasattr(module, item):
            continue
        obj = getattr(module, item)
        groups[_kind(obj)].append(item)
    titles = {"class": "Classes", "exception": "Errors", "function": "Functions",
              "constant": "Constants", "module": "Modules"}
    for kind, names in groups.items():
        if not names:
            continue
        out.extend([f"**{titles[kind]}:** " + ", ".join(f"[`{n}`](#{name}.{n})" for n in names),
                    ""])
    for kind, names in groups.items():
        for item in names:
            obj = getattr(module, item)
            out.extend([md_heading(3, f"`{item}`", f"{name}.{item}"), ""])
            if kind == "constant":
                out.extend([f"```python\n{item} = {_value(obj)}\n```", ""])
                doc = comments.get(item, "")
            elif inspect.isclass(obj) and issubclass(obj, enum.Enum):
                # An enum's call signature is Enum's own; its members are what it says.
                members = "\n".join(f"    {m.name} = {m.value!r}" for m in obj)
                out.extend([f"```python\nclass {item}({obj.__mro__[1].__name__}):\n"
                            f"{members}\n```", ""])
                doc = first_paragraph(inspect.getdoc(obj))
            else:
                sig = signature(obj)
                prefix = "class " if kind in ("class", "exception") else ""
                if sig is not None:
                    out.extend([f"```python\n{prefix}{item}{sig}\n```", ""])
                doc = first_paragraph(inspect.getdoc(obj))
                if kind == "exception" and getattr(obj, "code", None):
                    doc = f"{doc} Error class `{obj.code}`.".strip()
            if doc:
                out.extend([doc_markdown(doc, linker), ""])
            if kind == "class":
                methods = _methods(obj, linker)
                if methods:
                    out.extend([*methods, ""])
    return out


def render(linker: IdLinker) -> str:
    """The API reference page."""
    out = [front("Python API", "The public Python surface of memspec: every name each "
                 "package exports, with its signature and summary."),
           generated_note("the `__all__` lists and docstrings of the installed packages"), "",
           "Only the names below (each package's `__all__`) are public; everything else, "
           "underscore modules included, may change without notice.", ""]
    for name, about in MODULES:
        out.extend(render_module(name, about, linker))
    return "\n".join(out)


def build(linker: IdLinker) -> dict[str, bytes]:
    """The API page."""
    return {API_PAGE: render(linker).encode()}
