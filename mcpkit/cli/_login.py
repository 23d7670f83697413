"""``mcpkit login URL`` and ``mcpkit logout URL``: the OAuth commands of ``mcpkit._login_cli``."""

from __future__ import annotations

import argparse


def _run(cmd: str, argv: list[str]) -> int:
    from .._login_cli import add_login_commands, run_login_command

    parser = argparse.ArgumentParser(prog="mcpkit")
    sub = parser.add_subparsers(dest="cmd", required=True)
    add_login_commands(sub)
    return run_login_command(parser.parse_args([cmd, *argv]))


def login(argv: list[str]) -> int:
    return _run("login", argv)


def logout(argv: list[str]) -> int:
    return _run("logout", argv)
