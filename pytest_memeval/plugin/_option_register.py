"""The declared options (``_option_table.OPTIONS``) registered with pytest: each in its
``--help`` group with its ini twin, a deprecated spelling hidden beside it (pytest glue)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from ._option_table import GROUPS, _Opt

__all__ = ["addoptions", "alias_dest", "ini_name"]


def addoptions(parser: pytest.Parser) -> None:
    """Each option in its ``--help`` group, with its ini twin; an ``alias`` too, hidden."""
    for name, heading, opts in GROUPS:
        group = parser.getgroup(name, heading)
        for opt in opts:
            _add(parser, group, opt, opt.name, opt.dest, opt.help)
            if opt.alias is not None:
                ini_help = f"deprecated spelling of {ini_name(opt)}"
                _add(parser, group, opt, opt.alias, alias_dest(opt), ini_help, hidden=True)


def _add(
    parser: pytest.Parser,
    group: pytest.OptionGroup,
    opt: _Opt,
    name: str,
    dest: str,
    help: str,
    *,
    hidden: bool = False,
) -> None:
    kwargs: dict[str, Any] = {"action": "store", "metavar": opt.metavar}
    ini: dict[str, Any] = {"default": None}
    if opt.flag:
        kwargs, ini = {"action": "store_true"}, {"type": "bool", "default": False}
    elif opt.multiple:
        kwargs["action"], ini = "append", {"type": "linelist", "default": []}
    elif opt.const is not None:
        kwargs.update(nargs="?", const=opt.const)
    cli_help = argparse.SUPPRESS if hidden else help
    group.addoption(f"--{name}", default=None, dest=dest, help=cli_help, **kwargs)
    parser.addini(ini_name(name), help, **ini)


def alias_dest(opt: _Opt) -> str:
    """Where the deprecated spelling's command-line value lands (``deprecated_memeval_...``)."""
    return f"deprecated_{str(opt.alias).replace('-', '_')}"


def ini_name(opt: _Opt | str) -> str:
    """``memeval`` for --memeval, ``memeval_memsys`` for --memsys, ``memeval_limit`` for
    --memeval-limit (an option, or an option's name)."""
    dest = (opt if isinstance(opt, str) else opt.name).replace("-", "_")
    if dest == "memeval" or dest.startswith("memeval_"):
        return dest
    return f"memeval_{dest}"
