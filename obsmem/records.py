"""Frozen records for the modules a cold process imports, without ``dataclasses`` at run time.

``from obsmem.records import dataclass, field`` and ``@dataclass(frozen=True)`` read as usual,
and type checkers see exactly that: ``dataclasses``' own names (imported for them below). At
run time they are this module's: ``_frozen`` gives the class what ``@dataclass(frozen=True)``
gives (a keyword and positional ``__init__`` from the annotated fields and their defaults,
``__repr__`` without ``repr=False`` fields, ``__eq__`` and ``__hash__`` over the compared fields,
no assignment afterwards) with plain closures. ``dataclasses`` imports ``inspect`` (with
``ast``, ``dis`` and ``tokenize``) and compiles every generated method at every start: for the
settings and the search's few records, about a third of a cold ``om search``'s instructions.

Only ``frozen=True`` and ``field(default=..., default_factory=..., repr=..., compare=...)`` are
supported; ``dataclasses.replace`` and ``fields`` do not apply (``Settings.replace`` is its own).
Modules off the cold path use ``dataclasses`` itself.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from collections.abc import Callable
    from dataclasses import dataclass as dataclass
    from dataclasses import field as field
    from typing import Any
else:

    def field(*, default: Any = None, default_factory: Any = None, **flags: bool) -> _Field:
        """``dataclasses.field``'s default, factory, ``repr`` and ``compare``."""
        return _Field(default, default_factory, flags.get("repr", True), flags.get("compare", True))

    def dataclass(*, frozen: bool) -> Callable[[type], type]:
        """``dataclasses.dataclass(frozen=True)``, built by ``_frozen``."""
        if not frozen:
            raise TypeError("obsmem.records builds frozen records only")
        return _frozen


__all__ = ["dataclass", "field"]


class _Field:
    """A field's default and flags, as ``dataclasses.field`` takes them (run time only)."""

    __slots__ = ("compare", "default", "default_factory", "repr")

    def __init__(self, default: Any, default_factory: Any, repr: bool, compare: bool) -> None:
        self.default, self.default_factory = default, default_factory
        self.repr, self.compare = repr, compare


def _frozen(cls: type) -> type:
    """``cls`` with what ``@dataclass(frozen=True)`` gives it: keyword ``__init__`` from its
    annotated fields and their defaults, ``__repr__`` (without ``repr=False`` fields),
    ``__eq__`` and ``__hash__`` over the compared fields, and no assignment afterwards."""
    fields: list[tuple[str, _Field]] = []
    for name in cls.__dict__.get("__annotations__", {}):  # noqa: RUF063 (inspect is what we avoid)
        value = cls.__dict__.get(name, _MISSING)
        spec = value if isinstance(value, _Field) else _Field(value, None, True, True)
        if isinstance(value, _Field):
            setattr(cls, name, spec.default)
        fields.append((name, spec))
    names = tuple(name for name, _ in fields)
    shown = tuple(name for name, spec in fields if spec.repr)
    compared = tuple(name for name, spec in fields if spec.compare)

    def __init__(self: Any, *args: Any, **values: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} positional arguments")
        values.update(zip(names, args, strict=False))
        for name, spec in fields:
            if name in values:
                value = values.pop(name)
            elif spec.default_factory is not None:
                value = spec.default_factory()
            elif spec.default is _MISSING:
                raise TypeError(f"{cls.__name__}() missing required argument: {name!r}")
            else:
                value = spec.default
            object.__setattr__(self, name, value)
        if values:
            raise TypeError(
                f"{cls.__name__}() got an unexpected keyword argument {next(iter(values))!r}"
            )

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{cls.__name__}({inner})"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in compared)

    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in compared))

    def __setattr__(self: Any, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self: Any, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    for method in (__init__, __repr__, __eq__, __hash__, __setattr__, __delattr__):
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
    return cls


_MISSING: Any = object()
