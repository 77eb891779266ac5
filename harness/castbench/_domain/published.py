"""What the packs of published benchmarks (`castbench_tau`, `castbench_tau2`) share beyond the
customer's identity (`castbench._domain.identity`): the user's opening in the first person, and a
tool's published JSON schema as the arguments model `Toolkit.validate` checks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

__all__ = ["first_person", "schema_arguments_model"]

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}

_PRONOUNS = [
    (r"\bYou are\b", "I am"),
    (r"\byou are\b", "I am"),
    (r"\bYou're\b", "I'm"),
    (r"\byou're\b", "I'm"),
    (r"\bYou've\b", "I've"),
    (r"\byou've\b", "I've"),
    (r"\bYou'd\b", "I'd"),
    (r"\byou'd\b", "I'd"),
    (r"\bYour\b", "My"),
    (r"\byour\b", "my"),
    (r"\byourself\b", "myself"),
    (r"\bYou\b", "I"),
    (r"\byou\b", "I"),
]


def first_person(instruction: str) -> str:
    """A second-person instruction ("You are Yusuf Rossi in 19122...") as the user's opening."""
    text = " ".join(instruction.split())
    for pattern, replacement in _PRONOUNS:
        text = re.sub(pattern, replacement, text)
    return text


def _field_type(schema: Mapping[str, Any]) -> Any:
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    return _JSON_TYPES.get(str(schema.get("type")), Any)


def schema_arguments_model(name: str, parameters: Mapping[str, Any]) -> type[BaseModel]:
    """What `Toolkit.validate` checks (the labeler, `domains validate`): required arguments,
    no unknown ones, JSON types and enums, as τ's schema declares them."""
    required = set(parameters.get("required", []))
    fields: dict[str, Any] = {}
    for argument, schema in parameters.get("properties", {}).items():
        kind = _field_type(schema)
        if argument in required:
            fields[argument] = (kind, Field(...))
        else:
            fields[argument] = (kind | None, Field(None))
    return create_model(  # type: ignore[call-overload, no-any-return]
        f"{name}_arguments", __config__=ConfigDict(extra="forbid", strict=False), **fields
    )
