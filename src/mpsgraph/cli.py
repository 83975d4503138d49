"""The `mpsgraph` command (also `python -m mpsgraph`): `check` (trust an install), `demo` (train
two models on the digits data set), `draw` (draw the graphs a script builds) and `tuning` (show
or clear the torch backend's autotuning cache).

Every subcommand reports a missing optional extra or an absent device as one line on stderr,
`mpsgraph <command>: error: ...`, and exit status 2 (argparse's own usage errors also exit 2).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .errors import GraphError

PROG = "mpsgraph"  # the same name whether started as `mpsgraph` or `python -m mpsgraph`


class CommandError(Exception):
    """A clean, one-line failure of a subcommand (exit status 2)."""


class MissingExtraError(CommandError):
    """An optional dependency of a subcommand is not installed."""

    def __init__(self, extra: str, exc: ImportError):
        missing = getattr(exc, "name", None) or str(exc)
        super().__init__(f"this command needs the '{extra}' extra ({missing} is not "
                         f"installed): pip install 'mpsgraph[{extra}]'")


def require_extra(extra: str, *modules: str) -> None:
    """Import `modules` or raise MissingExtraError naming `extra`."""
    import importlib

    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError as e:
            raise MissingExtraError(extra, e) from None


def open_device(spec: str | None) -> Any:
    """The Device for `spec`, with its backend loaded; CommandError when it cannot be used."""
    from .runtime.device import resolve_device

    try:
        dev = resolve_device(spec)
        dev.backend()
    except GraphError as e:
        raise CommandError(str(e)) from None
    return dev


def _version() -> str:
    from . import __version__

    return f"{PROG} {__version__}"


def build_parser() -> argparse.ArgumentParser:
    from . import demo, viewer

    p = argparse.ArgumentParser(prog=PROG, description="mpsgraph: Apple's MPSGraph, portable.")
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", required=True, metavar="{check,demo,draw,tuning}")
    c = sub.add_parser("check", help="sweep every op option against float64 references and "
                       "finite differences; exit status 1 on any FAIL",
                       description="Sweep every op option against float64 references and "
                       "finite differences; exit status 1 on any FAIL.")
    c.add_argument("--device", default=None,
                   help="cpu (NumPy, default), torch-cpu, cuda or cuda:N (default: "
                        "$MPSGRAPH_DEVICE or cpu)")
    c.add_argument("--suite", action="append", default=None,
                   help="run only this suite (repeatable); default: all")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("-v", "--verbose", action="store_true", help="list every failing case")
    c.set_defaults(func=_check)
    d = sub.add_parser("demo", help="train a CNN and an LSTM on the digits data set (needs "
                       "the demo extra)", description=demo.__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_arguments(d)
    d.set_defaults(func=demo.run)
    w = sub.add_parser("draw", help="run a Python script and draw every graph it builds "
                       "(SVG/PNG with Graphviz, else DOT text)",
                       description=viewer.CLI_DESCRIPTION)
    viewer.add_arguments(w)
    w.set_defaults(func=viewer.run_cli)
    t = sub.add_parser("tuning", help="show (or --clear) the autotuner's cache of path "
                       "choices (torch backend)",
                       description="Show the torch backend's autotuning cache: for each "
                       "tuned key (op, shape, dtype, options, precision, mode) the path "
                       "chosen and every candidate's time. The file is "
                       "$MPSGRAPH_AUTOTUNE_CACHE, else $XDG_CACHE_HOME/mpsgraph/autotune.json, "
                       "else ~/.cache/mpsgraph/autotune.json; one section per GPU and library "
                       "versions.")
    t.add_argument("--all", action="store_true",
                   help="every machine section of the file, not only this machine's")
    t.add_argument("--clear", action="store_true", help="delete the file (everything retunes)")
    t.set_defaults(func=_tuning)
    return p


def _tuning(args: argparse.Namespace) -> int:
    require_extra("torch", "torch")
    from .backends.torch import autotune

    path = autotune.cache_path()
    if args.clear:
        existed = path.exists()
        autotune.clear(memory_only=False)
        print(f"{'removed' if existed else 'no file at'} {path}")
        return 0
    sections = autotune.cached_sections()
    me = autotune.identity()
    print(f"autotuning cache: {path}{'' if path.exists() else ' (no file yet)'}")
    print(f"this machine: {me}")
    shown = {k: v for k, v in sections.items() if args.all or k == me}
    if not shown:
        print("no choices cached for this machine" + ("" if args.all else
              f" ({len(sections)} other section(s): --all shows them)"))
    for ident, entries in shown.items():
        print(f"\n[{ident}] {len(entries)} key(s)")
        for key in sorted(entries):
            e = entries[key]
            times = ", ".join(f"{c} {t:.4g}" for c, t in sorted(
                e.get("times_ms", {}).items(), key=lambda kv: kv[1]))
            print(f"  {key}\n    -> {e['choice']}  ({times} ms; tuned in "
                  f"{e.get('tune_ms', 0):.0f} ms)")
    return 0


def _check(args: argparse.Namespace) -> int:
    from .check import SUITES, run_check

    dev = open_device(args.device)
    for s in args.suite or []:
        if s not in SUITES:
            raise CommandError(f"unknown suite {s!r}; choose from {', '.join(SUITES)}")
    return run_check(dev, args.suite, args.seed, args.verbose)


def main(argv: list[str] | None = None) -> int:
    p = build_parser()
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return args.func(args)
    except CommandError as e:
        print(f"{PROG} {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
