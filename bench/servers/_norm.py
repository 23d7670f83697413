"""The Pydantic workload's models and tool body, the same for both sides' servers
(``pydantic_mcpkit.py``, ``pydantic_official.py``; each runs with its own interpreter)."""

import math

from pydantic import BaseModel


class Point(BaseModel):
    x: float
    y: float


class Result(BaseModel):
    length: float
    point: Point


def norm_of(p: Point) -> Result:
    """The distance of a point from the origin."""
    return Result(length=math.hypot(p.x, p.y), point=p)
