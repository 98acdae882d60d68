"""``memeval-board RUN_OR_REPORT... -o DIR``: the board as a command (docs/board.md)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import MemevalError
from ._load import load_inputs
from ._site import PICKS, build_board, write_diff

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
        help="benchmark data folder for re-scoring against the dataset's gold and checking each "
        "result's question set (default $MEMEVAL_DATA_DIR; without it the stored gold is used "
        "and question sets of benchmarks other than the demo cannot be verified)",
    )
    parser.add_argument(
        "--show-partial",
        action="store_true",
        help="rank partial runs (stopped early, narrowed by -k / -m / --deselect / a shard, more "
        "than half ERROR) beside full runs, marked; by default they are shown apart",
    )
    parser.add_argument(
        "--follow-symlinks",
        action="store_true",
        help="let -o name a symbolic link to a folder and write the site into its target "
        "(refused by default)",
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


def output_problem(out: Path, follow_symlinks: bool = False) -> str | None:
    """Why ``-o`` cannot take the site (None: it can): a symbolic link (unless followed), or
    something that exists and is not a folder."""
    if out.is_symlink():
        if not follow_symlinks:
            return (
                f"-o {out}: a symbolic link (to {os.readlink(out)}); name a real folder, or pass "
                "--follow-symlinks to write the site into its target"
            )
        if not out.is_dir():
            return f"-o {out}: the symbolic link does not lead to a folder; name a folder"
    elif out.exists() and not out.is_dir():
        return f"-o {out}: exists and is not a folder; name a new folder or a board's folder"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    out = Path(args.output)
    problem = output_problem(out, args.follow_symlinks)
    if problem is not None:
        print(f"memeval-board: {problem}", file=sys.stderr)
        return 2
    data = Path(args.data) if args.data else None
    try:
        if args.diff:
            done = write_diff(load_inputs(args.inputs), args.diff[0], args.diff[1], out, data)
            print(f"memeval-board: {done.pages[0]}")
            return 0
        built = build_board(args.inputs, out, data, args.pick, show_partial=args.show_partial)
    except MemevalError as exc:
        message = str(exc)  # the loader's own errors already start with the command's name
        prefix = "" if message.startswith("memeval-board: ") else "memeval-board: "
        print(prefix + message, file=sys.stderr)
        return 2
    except RecursionError:  # a bound above should have caught it: still one line, never a trace
        print(
            "memeval-board: an input nests arrays or objects too deeply to be read; "
            "check the reports and run folders given",
            file=sys.stderr,
        )
        return 2
    except OSError as exc:
        where = exc.filename if exc.filename is not None else out
        print(
            f"memeval-board: -o {out}: cannot write the site ({exc.strerror or exc}: {where})",
            file=sys.stderr,
        )
        return 2
    print(
        f"memeval-board: {built.entries} results in {built.keys} key(s): "
        f"{built.folder / 'index.html'} ({built.index_bytes:,} bytes, {len(built.pages)} pages)"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
