"""The one round runner: every measurement interleaves the two sides round by round, and who
goes first alternates, so slow drift (thermal, other load) hits both alike."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator

from _common import SIDES, Results


def round_order(r: int) -> tuple[str, ...]:
    """Alternate who goes first each round."""
    return tuple(SIDES) if r % 2 == 0 else tuple(SIDES[::-1])


def interleaved(rounds: int, alive: Callable[[str], object],
                cells: Iterable[object] = (None,)) -> Iterator[tuple[int, object, str]]:
    """(round, cell, side) in measuring order: round by round, cell by cell (e.g. each HTTP mode
    and connection count), then each side, the first one alternating per round. A side is
    skipped while ``alive(side)`` is false (checked as the loop reaches it)."""
    cells = list(cells)
    for r in range(rounds):
        for cell in cells:
            for name in round_order(r):
                if alive(name):
                    yield r, cell, name


@contextlib.contextmanager
def attempt(res: Results, workload: str, name: str, ok: dict[str, bool] | None = None,
            diag: Callable[[], str] = lambda: "") -> Iterator[None]:
    """One measurement of side ``name``: an exception is recorded as an error of ``workload``
    (type, message, then the server's diagnostics) and, given ``ok``, takes the side out of the
    remaining rounds; the other side keeps running."""
    try:
        yield
    except Exception as exc:  # keep the other side running
        if ok is not None:
            ok[name] = False
        res.error(name, workload, f"{type(exc).__name__}: {exc}{diag()}")
