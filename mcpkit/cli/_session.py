"""Running one command against a TARGET: parse, connect, run the body within the time limit,
and turn every failure into a clear message and an exit status."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .._wakeup import run as run_loop
from ._safe import clean, safe_logging, set_raw
from ._target import CliError, Target, errors_to_catch, failure, kill_process, resolve_target, split_command, usage_error

if TYPE_CHECKING:
    from ..client import Client

Body = Callable[["Client"], Awaitable[int]]


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[argparse.Namespace, list[str] | None]:
    """Options and positionals may be mixed; the command after ``--`` is returned apart."""
    before, command = split_command(argv)
    ns = parser.parse_intermixed_args(before)
    set_raw(getattr(ns, "raw", False))
    safe_logging()
    return ns, command


def target_or_usage(parser: argparse.ArgumentParser, positionals: list[str], command: list[str] | None,
                    ns: argparse.Namespace) -> Target | int:
    try:
        return resolve_target(positionals, command, ns)
    except CliError as exc:
        return usage_error(parser, str(exc))


def begin(parser: argparse.ArgumentParser, argv: list[str],
          no_extra: bool = False) -> tuple[argparse.Namespace, list[str], Target] | int:
    """Parse ``argv`` and resolve its TARGET: (namespace, the other positionals, target), or
    the exit code of a usage error. ``no_extra``: positionals besides TARGET are an error."""
    ns, command = parse(parser, argv)
    items = list(ns.items)
    target = target_or_usage(parser, items, command, ns)
    if isinstance(target, int):
        return target
    if no_extra and items:
        return usage_error(parser, f"unexpected argument {items[0]!r}")
    return ns, items, target


#: A command's work once its TARGET is resolved: (parser, namespace, other positionals, target) -> exit code.
Command = Callable[[argparse.ArgumentParser, argparse.Namespace, list[str], Target], int]


def command(make_parser: Callable[[], argparse.ArgumentParser], *,
            no_extra: bool = False) -> Callable[[Command], Callable[[list[str]], int]]:
    """Make ``main(argv)`` of a command against a TARGET: parse ``argv`` with
    ``make_parser()``, resolve the TARGET (a usage error is its exit code), then run the
    decorated function; a :class:`CliError` it raises (a bad ``key=value``) is one line."""
    def wrap(work: Command) -> Callable[[list[str]], int]:
        def main(argv: list[str]) -> int:
            p = make_parser()
            begun = begin(p, argv, no_extra)
            if isinstance(begun, int):
                return begun
            ns, items, target = begun
            try:
                return work(p, ns, items, target)
            except CliError as exc:
                print(clean(f"{p.prog}: {exc}"), file=sys.stderr)
                return exc.code

        main.__doc__ = work.__doc__
        return main

    return wrap


def run(prog: str, target: Target, body: Body, **client_options: Any) -> int:
    return run_loop(session(prog, target, body, **client_options))


async def session(prog: str, target: Target, body: Body, **client_options: Any) -> int:
    """Connect to ``target``, run ``body(client)``; all of it within ``target.timeout``."""
    try:
        try:
            client = target.client(**client_options)
        except CliError as exc:
            print(clean(f"{prog}: {exc}"), file=sys.stderr)
            return exc.code
        except (TypeError, ValueError) as exc:
            print(clean(f"{prog}: {target.label}: {exc}"), file=sys.stderr)
            return 2
        loop = asyncio.get_running_loop()
        target.deadline = loop.time() + target.timeout
        # At the deadline a stuck server process is killed, so giving up takes no longer.
        reaper = [loop.call_at(target.deadline + 0.05, kill_process, client)]
        try:
            try:
                async with asyncio.timeout_at(target.deadline) as scope:
                    def moved(deadline: float | None) -> None:
                        scope.reschedule(deadline)
                        reaper[0].cancel()
                        if deadline is not None:
                            reaper[0] = loop.call_at(deadline + 0.05, kill_process, client)

                    target.on_deadline_moved = moved
                    await client.start()
                    return await body(client)
            finally:
                reaper[0].cancel()
                target.on_deadline_moved = None
                if target.deadline is not None and loop.time() >= target.deadline:
                    # Out of time: the server process is killed now, not asked to stop (a polite
                    # close of a busy server takes seconds, and --timeout includes shutting down).
                    kill_process(client)
                await _close(client)
        except CliError as exc:  # its text may quote the server (the names of its tools)
            print(clean(f"{prog}: {exc}"), file=sys.stderr)
            return exc.code
        except errors_to_catch() as exc:
            return failure(prog, target, exc)
        except ImportError as exc:  # an optional dependency a step needed (the OAuth flow's joserfc...)
            from ._extras import missing_extra

            print(clean(f"{prog}: {missing_extra(exc, target.label)}"), file=sys.stderr)
            return 1
    finally:
        target.close()


async def _close(client: Client) -> None:
    try:
        await asyncio.wait_for(client.close(), 5.0)
    except Exception:
        pass
