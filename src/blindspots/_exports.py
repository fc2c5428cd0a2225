"""Lazy public names for the Part packages: ``from blindspots.masked import masked_discrepancy``.

A Part's ``__init__`` lists its public names by module; a name's module is imported on first use, so
``import blindspots.masked`` stays as cheap as the modules a reader actually calls (no torch, no
matplotlib until needed). The same table writes the package's ``help()`` overview.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Sequence

# (module, chapters that use it, what it holds, public names)
Group = tuple[str, str, str, Sequence[str]]


def lazy_exports(package: str, title: str, groups: Sequence[Group]
                 ) -> tuple[str, list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__doc__``, ``__all__``, ``__getattr__`` and ``__dir__`` for ``package`` from its ``groups``."""
    where: dict[str, str] = {}
    for module, _, _, names in groups:
        for name in names:
            if name in where:
                raise ValueError(f"{package}: {name!r} is exported from both {where[name]} and {module}")
            where[name] = module

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    lines = [title, "", "Public names, by module (import them from this package; each module is loaded",
             "when one of its names is first used):", ""]
    for module, chapters, what, names in groups:
        lines.append(f"{package}.{module}: {what} (chapters {chapters})")
        lines += _wrap(", ".join(names), "    ")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n", sorted(where), __getattr__, __dir__


def _wrap(text: str, indent: str, width: int = 120) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent)
