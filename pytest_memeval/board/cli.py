"""``memeval-board RUN_OR_REPORT... -o DIR``: the board as a command (docs/board.md)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import MemevalError
from .load import load_inputs
from .site import PICKS, build_board, write_diff

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memeval-board",
        description="Write a static site comparing runs: JSON reports (--memeval-json) and run "
        "folders (<cache>/runs/<run_id>), grouped by comparability key, with cluster CIs, "
        "controls, published baselines, history, diffs and verification tiers.",
    )
    parser.add_argument("inputs", nargs="+", metavar="RUN_OR_REPORT")
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="site folder")
    parser.add_argument(
        "--data",
        metavar="DIR",
        default=os.environ.get("MEMEVAL_DATA_DIR") or None,
        help="benchmark data folder for re-scoring against the dataset's gold (default "
        "$MEMEVAL_DATA_DIR; without it the stored gold is used)",
    )
    parser.add_argument(
        "--pick",
        choices=PICKS,
        default=PICKS[0],
        help="which run of a system its row (and the Pareto charts, the baselines) shows: its "
        "latest (default) or its best; the other runs are in its history",
    )
    parser.add_argument(
        "--diff",
        nargs=2,
        metavar=("A", "B"),
        help="write only the diff page of results A and B (ids as on the index: a run page's "
        "name without run-/.html, or RUN_ID:SYSTEM) and their run pages into the output folder",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    data = Path(args.data) if args.data else None
    try:
        if args.diff:
            done = write_diff(
                load_inputs(args.inputs), args.diff[0], args.diff[1], Path(args.output), data
            )
            print(f"memeval-board: {done.pages[0]}")
            return 0
        out = build_board(args.inputs, Path(args.output), data, args.pick)
    except MemevalError as exc:
        print(f"memeval-board: {exc}", file=sys.stderr)
        return 2
    print(
        f"memeval-board: {out.entries} results in {out.keys} key(s): "
        f"{out.folder / 'index.html'} ({out.index_bytes:,} bytes, {len(out.pages)} pages)"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
