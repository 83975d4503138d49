"""Command line: `python -m mpsgraph check` (trust an install) and `python -m mpsgraph demo`
(train two models on the digits data set)."""

from __future__ import annotations

import argparse
import sys

from .errors import GraphError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mpsgraph",
                                description="mpsgraph: Apple's MPSGraph, portable.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="sweep every op option against float64 references and "
                       "finite differences; exit status 1 on any FAIL")
    c.add_argument("--device", default=None,
                   help="cpu (NumPy, default), torch-cpu, cuda or cuda:N (default: "
                        "$MPSGRAPH_DEVICE or cpu)")
    c.add_argument("--suite", action="append", default=None,
                   help="run only this suite (repeatable); default: all")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("-v", "--verbose", action="store_true", help="list every failing case")
    sub.add_parser("demo", help="train a CNN and an LSTM on the digits data set (needs the "
                   "demo extra)", add_help=False)
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["demo"]:
        from .demo import main as demo_main

        return demo_main(argv[1:])
    args = p.parse_args(argv)
    if args.command == "check":
        from .check import SUITES, run_check
        from .runtime.device import resolve_device

        try:
            dev = resolve_device(args.device)
            dev.backend()
        except GraphError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        for s in args.suite or []:
            if s not in SUITES:
                print(f"error: unknown suite {s!r}; choose from {', '.join(SUITES)}",
                      file=sys.stderr)
                return 2
        return run_check(dev, args.suite, args.seed, args.verbose)
    return 2


if __name__ == "__main__":
    sys.exit(main())
