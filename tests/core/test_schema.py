"""core/schema.py: JSON Schemas derived from typed documents, and documents as JSON."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import jsonschema
import pytest

from askvault.core.schema import (
    document,
    from_arguments,
    input_schema,
    output_schema,
    prop,
    to_json,
)

Colour = Literal["red", "green"]


@document
class Point:
    x: int
    y: float = prop("Height.")


@document
class Shape:
    name: str = prop("What it is called.", min_length=1)
    colour: Colour
    corners: tuple[Point, ...]
    span: tuple[int, int]
    label: str | None
    best: Point | None
    tags: dict[str, Any]
    counts: dict[str, int]
    by_colour: dict[Colour, tuple[str, ...]]
    trace: dict[str, Any] | None = prop("Only when asked.", omitted=True)


@document
class Arguments:
    query: str = prop("Words.", min_length=1)
    limit: int | None = prop("How many.", default=None, minimum=1, maximum=10)
    folders: tuple[str, ...] = prop("Where.", default=(), item_min_length=1)
    exact: bool = prop("Exact words.", default=False)


def shape(**changes: Any) -> Shape:
    values: dict[str, Any] = {
        "name": "square",
        "colour": "red",
        "corners": (Point(0, 0.0), Point(1, 0.5)),
        "span": (1, 2),
        "label": None,
        "best": Point(1, 0.5),
        "tags": {"a": [1, "b"]},
        "counts": {"n": 2},
        "by_colour": {"red": ("a",), "green": ()},
        "trace": None,
    }
    return Shape(**{**values, **changes})


def test_an_output_schema_states_each_type_and_requires_every_field_but_an_omitted_one() -> None:
    schema = output_schema(Shape)
    props = schema["properties"]
    assert schema["required"] == [n for n in props if n != "trace"]
    assert schema["additionalProperties"] is False
    assert props["name"] == {"type": "string", "minLength": 1, "description": "What it is called."}
    assert props["colour"] == {"type": "string", "enum": ["red", "green"]}
    assert props["corners"]["items"]["properties"]["y"] == {
        "type": "number",
        "description": "Height.",
    }
    assert props["span"] == {
        "type": "array",
        "items": {"type": "integer"},
        "minItems": 2,
        "maxItems": 2,
    }
    assert props["label"] == {"type": ["string", "null"]}
    assert props["best"]["type"] == ["object", "null"] and props["best"]["required"] == ["x", "y"]
    assert props["tags"] == {"type": "object"}
    assert props["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["by_colour"]["required"] == ["red", "green"]
    assert props["trace"] == {"type": ["object", "null"], "description": "Only when asked."}
    jsonschema.Draft202012Validator.check_schema(schema)


def test_a_document_as_json_validates_against_its_schema_and_omits_an_unset_omitted_field() -> None:
    doc = to_json(shape())
    assert "trace" not in doc
    assert doc["corners"] == [{"x": 0, "y": 0.0}, {"x": 1, "y": 0.5}] and doc["span"] == [1, 2]
    assert doc["label"] is None and doc["by_colour"] == {"red": ["a"], "green": []}
    jsonschema.validate(doc, output_schema(Shape))
    assert to_json(shape(trace={"k": 1}))["trace"] == {"k": 1}


def test_the_schema_refuses_what_the_model_would_not_hold() -> None:
    validator = jsonschema.Draft202012Validator(output_schema(Shape))
    good = to_json(shape())
    for bad in (
        {**good, "colour": "blue"},
        {**good, "span": [1, 2, 3]},
        {**good, "extra": 1},
        {k: v for k, v in good.items() if k != "label"},
        {**good, "by_colour": {"red": []}},
    ):
        assert not validator.is_valid(bad), bad


def test_an_input_schema_requires_only_fields_without_a_default_and_offers_no_null() -> None:
    schema = input_schema(Arguments)
    assert schema["required"] == ["query"] and schema["additionalProperties"] is False
    assert schema["properties"]["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
        "description": "How many.",
    }
    assert schema["properties"]["folders"]["items"] == {"type": "string", "minLength": 1}
    assert schema["properties"]["folders"]["default"] == []
    assert schema["properties"]["exact"]["default"] is False
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"query": "x", "limit": 3, "folders": ["a"]})
    for bad in ({}, {"query": ""}, {"query": "x", "limit": None}, {"query": "x", "rm": 1}):
        assert not validator.is_valid(bad), bad


def test_arguments_become_the_typed_input_with_tuples_and_defaults() -> None:
    args = from_arguments(Arguments, {"query": "x", "folders": ["a", "b"]})
    assert args == Arguments(query="x", limit=None, folders=("a", "b"), exact=False)


@pytest.mark.parametrize(
    "hint",
    [int | str, int | str | None, tuple[int, str], dict[int, str], set[str], Literal["a", 1]],
)
def test_a_type_json_cannot_state_is_refused_when_the_schema_is_derived(hint: Any) -> None:
    odd = dataclasses.make_dataclass("Odd", [("value", hint)], frozen=True)
    with pytest.raises(TypeError):
        output_schema(odd)
