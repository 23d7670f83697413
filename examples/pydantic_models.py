"""Pydantic models as tool parameters and return types (needs ``pip install 'mcpkit[pydantic]'``).

A ``BaseModel`` parameter's JSON Schema is the tool's ``inputSchema`` entry for it, a ``BaseModel``
return type its ``outputSchema``, and a bad field is named, by ``mcpkit call`` (which checks the
arguments against the schema first) or in Pydantic's words by the server (``factor=-1``)::

    mcpkit list tools examples/pydantic_models.py
    mcpkit call norm --args '{"p": {"x": 3, "y": 4}}' examples/pydantic_models.py
    mcpkit call norm --args '{"p": {"x": "three", "y": 4}}' examples/pydantic_models.py
    mcpkit call scale --args '{"points": [{"x": 1, "y": 2}], "factor": -1}' examples/pydantic_models.py
"""

from __future__ import annotations

import enum
import math
from typing import Annotated

from pydantic import BaseModel, Field

from mcpkit import Server

server = Server("pydantic-models", "1.0.0")


class Point(BaseModel):
    """A point in the plane."""

    x: float = Field(description="the x coordinate")
    y: float = Field(description="the y coordinate")


class Result(BaseModel):
    length: float
    point: Point


class Unit(enum.Enum):
    METRES = "m"
    FEET = "ft"


@server.tool()
def norm(p: Point) -> Result:
    """The distance of a point from the origin."""
    return Result(length=math.hypot(p.x, p.y), point=p)


@server.tool()
def scale(points: list[Point], factor: Annotated[float, Field(gt=0, description="how much to scale by")] = 2.0,
          unit: Unit = Unit.METRES) -> list[Point]:
    """Scale every point by ``factor`` (which must be positive)."""
    return [Point(x=p.x * factor, y=p.y * factor) for p in points]


if __name__ == "__main__":
    server.run()
