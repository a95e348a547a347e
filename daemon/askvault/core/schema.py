"""Typed documents: JSON Schemas derived from dataclasses, and a document as JSON.

Every JSON document a user or an agent sees (`--json`, an MCP tool's result) is a
dataclass made by `@document`, and every MCP tool's input is one too: the schema an agent is shown is derived
here from the class, never written a second time (docs/decisions.md, "One typed document
per output"). A field says what it means and how it is bounded with `prop(...)`; its type
says the rest:

    str, int, float, bool, None      -> "string", "integer", "number", "boolean", "null"
    X | None                         -> X's schema with "null" added to its type
    Literal["a", "b"]                -> an enum
    tuple[X, ...], list[X]           -> an array of X; tuple[X, X] -> exactly two X
    dict[str, X]                     -> an object of X; dict[Literal[...], X] -> those keys
    a dataclass                      -> an object whose properties are its fields (closed)
    Any                              -> no constraint

An output document lists every field as required (it is always printed, null when there
is nothing) except a field marked `omitted=True`, which is left out while it is None. An
input lists as required the fields without a default (and states the others' defaults),
and refuses any other key; an argument whose default is None is offered as its type alone
(left out, never null).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, dataclass_transform

_SCALARS: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}
_KIND = Literal["input", "output"]
_HINTS: dict[type, dict[str, Any]] = {}


T = TypeVar("T")


def prop(
    description: str = "",
    *,
    default: Any = dataclasses.MISSING,
    omitted: bool = False,
    min_length: int | None = None,
    minimum: int | None = None,
    maximum: int | None = None,
    item_min_length: int | None = None,
) -> Any:
    """A dataclass field with what its schema says beyond its type: the description an
    agent reads, bounds, and (`omitted`) whether an output leaves it out while None."""
    bounds = {
        "minLength": min_length,
        "minimum": minimum,
        "maximum": maximum,
    }
    meta = {
        "description": description,
        "bounds": {k: v for k, v in bounds.items() if v is not None},
        "item_min_length": item_min_length,
        "omitted": omitted,
    }
    return dataclasses.field(default=default, metadata=meta)


@dataclass_transform(field_specifiers=(prop,))
def document(cls: type[T]) -> type[T]:
    """A typed document (or a tool's arguments): a dataclass whose `prop(...)` fields
    without `default=` are required. Not frozen: a document is built once and printed, and
    a frozen class costs half as much again to create, on the start-up of every command
    that prints one (docs/decisions.md, "One typed document per output")."""
    return dataclasses.dataclass(cls)


def output_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema of the documents of class `cls` (a dataclass)."""
    return _object_schema(cls, "output")


def input_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema of the arguments that build a `cls` (a dataclass): the fields
    without a default are required, and no other key is accepted."""
    return _object_schema(cls, "input")


def to_json(value: Any) -> Any:
    """A document (or any value of one) as JSON-ready data: dataclasses become objects of
    their fields (an `omitted` field left out while None), tuples lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if item is None and f.metadata.get("omitted"):
                continue
            out[f.name] = to_json(item)
        return out
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: to_json(v) for k, v in value.items()}
    return value


def from_arguments(cls: type[Any], arguments: Mapping[str, Any]) -> Any:
    """A `cls` built from arguments its input schema accepted (JSON arrays become the
    tuples the fields hold)."""
    hints = _hints(cls)
    values = {}
    for name, value in arguments.items():
        origin = typing.get_origin(_without_none(hints[name]))
        values[name] = tuple(value) if origin is tuple and isinstance(value, list) else value
    return cls(**values)


def _object_schema(cls: type, kind: _KIND) -> dict[str, Any]:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = _hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if kind == "input" and f.default is None:
            hint = _without_none(hint)  # an optional argument is left out, never null
        schema = _schema(hint, kind)
        meta = f.metadata
        if meta.get("item_min_length") is not None and "items" in schema:
            schema["items"] = {**schema["items"], "minLength": meta["item_min_length"]}
        schema.update(meta.get("bounds", {}))
        if kind == "input" and f.default not in (None, dataclasses.MISSING):
            schema["default"] = to_json(f.default)
        if meta.get("description"):
            schema["description"] = meta["description"]
        properties[f.name] = schema
        has_default = (
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        )
        if (kind == "input" and not has_default) or (kind == "output" and not meta.get("omitted")):
            required.append(f.name)
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _schema(hint: Any, kind: _KIND) -> dict[str, Any]:
    if hint is Any:
        return {}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _object_schema(hint, kind)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return _nullable(hint, args, kind)
    if origin is Literal:
        return _enum(args)
    if origin in (list, tuple):
        return _array(hint, origin, args, kind)
    if origin is dict:
        return _mapping(args, kind)
    raise TypeError(f"no JSON Schema for {hint!r}")


def _nullable(hint: Any, args: tuple[Any, ...], kind: _KIND) -> dict[str, Any]:
    others = [a for a in args if a is not type(None)]
    if len(others) != 1 or len(args) != 2:
        raise TypeError(f"only `X | None` unions have a JSON Schema, not {hint!r}")
    schema = _schema(others[0], kind)
    if not isinstance(schema.get("type"), str):
        raise TypeError(f"no JSON Schema for {hint!r}")
    schema["type"] = [schema["type"], "null"]
    if "enum" in schema:
        schema["enum"] = [*schema["enum"], None]
    return schema


def _enum(args: tuple[Any, ...]) -> dict[str, Any]:
    kinds = {_SCALARS[type(a)] for a in args}
    if len(kinds) != 1:
        raise TypeError(f"a Literal of one type only, not {args!r}")
    return {"type": kinds.pop(), "enum": list(args)}


def _array(hint: Any, origin: Any, args: tuple[Any, ...], kind: _KIND) -> dict[str, Any]:
    if origin is list or (len(args) == 2 and args[1] is Ellipsis):
        return {"type": "array", "items": _schema(args[0], kind)}
    if not args or any(a != args[0] for a in args):
        raise TypeError(f"a fixed tuple of one type only, not {hint!r}")
    n = len(args)
    return {"type": "array", "items": _schema(args[0], kind), "minItems": n, "maxItems": n}


def _mapping(args: tuple[Any, ...], kind: _KIND) -> dict[str, Any]:
    key, value = args
    schema = _schema(value, kind)
    if typing.get_origin(key) is Literal:
        names = list(typing.get_args(key))
        return {
            "type": "object",
            "properties": {n: schema for n in names},
            "required": names,
            "additionalProperties": False,
        }
    if key is not str:
        raise TypeError(f"JSON object keys are strings, not {key!r}")
    return (
        {"type": "object"} if value is Any else {"type": "object", "additionalProperties": schema}
    )


def _without_none(hint: Any) -> Any:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        others = [a for a in typing.get_args(hint) if a is not type(None)]
        return others[0] if len(others) == 1 else hint
    return hint


def _hints(cls: type) -> dict[str, Any]:
    """The field types of `cls`, resolved once (annotations are strings here)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints
