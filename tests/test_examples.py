"""The examples run and reach what they print they want."""

from __future__ import annotations

import pathlib
import runpy

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_swift_translation_example_fits_the_line(capsys):
    runpy.run_path(str(ROOT / "examples" / "swift_translation.py"), run_name="__main__")
    last = capsys.readouterr().out.strip().splitlines()[-1]
    w = float(last.split("w = ")[1].split(" ")[0])
    b = float(last.split("b = ")[1].split(" ")[0])
    assert abs(w - 3) < 1e-2 and abs(b + 1) < 1e-2
