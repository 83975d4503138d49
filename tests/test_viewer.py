"""mpsgraph.draw: the DOT text (op names, user names, shapes, dtypes, targets, gradient boxes),
the fallback to DOT text without Graphviz, rendering through `dot` (a real one when installed,
and a stand-in that records how it was called), and `mpsgraph draw script.py`."""

from __future__ import annotations

import os
import re
import stat
import sys
import textwrap

import numpy as np
import pytest

import mpsgraph as mg
from mpsgraph import cli, viewer


def _training_step():
    g = mg.Graph()
    x = g.placeholder([4, 3], mg.float32, name="x")
    w = g.variable(np.ones((3, 2), np.float32), [3, 2], mg.float32, name="w")
    h = g.reLU(g.matrixMultiplication(x, w, name="xw"))
    loss = g.reductionSum(h, axes=[0, 1], name="loss")
    grad = g.gradientForPrimaryTensor(loss, [w])[w]
    step = g.assign(w, g.stochasticGradientDescent(g.constant(0.1, dataType=mg.float32), w,
                                                   grad), name="update")
    exe = g.compile({x: mg.ShapedType([4, 3], mg.float32)}, [loss], [step])
    return g, exe, loss, step, grad


def _node_line(dot: str, needle: str) -> str:
    (line,) = [ln for ln in dot.splitlines() if "[label=" in ln and needle in ln]
    return line


def test_dot_labels_targets_and_gradient_group():
    g, exe, loss, step, grad = _training_step()
    dot = mg.draw(exe)  # no path: the DOT text
    assert dot.startswith("digraph mpsgraph {") and dot.rstrip().endswith("}")
    # op kinds, user names, shapes and dtypes
    assert "matrixMultiplication\\n'xw'\\n[4, 2] float32" in dot
    assert "placeholder\\n'x'\\n[4, 3] float32" in dot
    assert "reductionSum\\n'loss'\\n[1, 1] float32" in dot
    assert "variable\\n'w'\\n[3, 2] float32" in dot
    # the targets (the loss tensor's op, the assign operation) and nothing else are gold
    gold = [ln for ln in dot.splitlines() if "fillcolor=gold" in ln]
    assert len(gold) == 2
    assert "'loss'" in _node_line(dot, "'loss'") and "gold" in _node_line(dot, "'loss'")
    assert "gold" in _node_line(dot, "'update'") and "-> w" in _node_line(dot, "'update'")
    # the gradient's ops are in one dashed box titled with the primary tensor
    box = re.search(r"subgraph cluster_gradient_0 \{(.*?)\n  \}", dot, re.S)
    assert box and 'label="gradient of loss"' in box[1]
    inside = set(re.findall(r"op(\d+) \[", box[1]))
    assert str(grad.operation.id) in inside
    assert str(loss.operation.id) not in inside
    kinds = {g._ops[int(i)].kind for i in inside}
    assert "reLUGradient" in kinds and "matrixMultiplication" in kinds
    # every edge joins two drawn nodes, labelled with the input's argument name
    nodes = set(re.findall(r"^\s*op(\d+) \[", dot, re.M))
    for a, b in re.findall(r"op(\d+) -> op(\d+)", dot):
        assert a in nodes and b in nodes
    assert f'op{g._ops[1].id} -> op' in dot  # the variable w feeds the matmul
    assert '[label="secondary"]' in dot


def test_executable_draws_only_what_its_targets_need():
    g = mg.Graph()
    x = g.placeholder([2], mg.float32, name="x")
    a = g.reLU(x, name="a")
    b = g.sigmoid(x, name="b")
    exe = g.compile({x: mg.ShapedType([2], mg.float32)}, [a])
    dot = mg.draw(exe)
    assert "'a'" in dot and "'b'" not in dot
    whole = mg.draw(g, targetTensors=[b])
    assert "'a'" in whole and "gold" in _node_line(whole, "'b'")
    assert "gold" not in _node_line(whole, "'a'")
    assert "cluster" not in whole  # no gradient, no box


def test_without_graphviz_writes_dot_text(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert not viewer.graphviz_available()
    _, exe, *_ = _training_step()
    with pytest.warns(UserWarning, match="DOT text"):
        path = mg.draw(exe, tmp_path / "step.svg")
    assert path == str(tmp_path / "step.dot")
    assert (tmp_path / "step.dot").read_text().startswith("digraph mpsgraph {")
    assert not (tmp_path / "step.svg").exists()
    # .dot asks for the text: no warning
    assert mg.draw(exe, tmp_path / "x.dot") == str(tmp_path / "x.dot")
    with pytest.raises(ValueError, match="format"):
        mg.draw(exe, tmp_path / "x.jpeg")
    with pytest.raises(TypeError, match="Graph or Executable"):
        mg.draw(object(), tmp_path / "x.dot")


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for dot")
def test_renders_through_dot_program(tmp_path, monkeypatch):
    """The rendering plumbing, with a stand-in `dot` that records its arguments and input."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    fake = bin_ / "dot"
    fake.write_text(f"#!/bin/sh\necho \"$@\" > '{bin_}/args'\n"
                    f"cat > '{bin_}/input'\nprintf '<svg>stand-in</svg>'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bin_) + os.pathsep + os.environ.get("PATH", ""))
    _, exe, *_ = _training_step()
    path = mg.draw(exe, tmp_path / "step.svg")
    assert path == str(tmp_path / "step.svg")
    assert (tmp_path / "step.svg").read_text() == "<svg>stand-in</svg>"
    assert (bin_ / "args").read_text().split() == ["-Tsvg"]
    assert (bin_ / "input").read_text() == mg.draw(exe)


@pytest.mark.skipif(not viewer.graphviz_available(), reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_renders_with_graphviz(tmp_path, fmt):
    _, exe, *_ = _training_step()
    path = mg.draw(exe, tmp_path / f"step.{fmt}")
    data = open(path, "rb").read()
    if fmt == "svg":
        text = data.decode()
        assert "<svg" in text and "gradient of loss" in text and "matrixMultiplication" in text
    else:
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import mpsgraph as mg
    g = mg.Graph()
    x = g.placeholder([2, 2], mg.float32, name=sys.argv[1] if len(sys.argv) > 1 else "x")
    y = g.tanh(x, name="y")
    exe = g.compile({x: mg.ShapedType([2, 2], mg.float32)}, [y])
    other = mg.Graph()
    other.constant(1.0, dataType=mg.float32, name="lonely")
""")


def test_cli_draw_script(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no Graphviz: DOT text
    script = tmp_path / "build.py"
    script.write_text(SCRIPT)
    out = tmp_path / "g.svg"
    assert cli.main(["draw", "-o", str(out), "--args", "inputs", str(script)]) == 0
    printed = capsys.readouterr().out
    one, two = tmp_path / "g_1.dot", tmp_path / "g_2.dot"
    assert str(one) in printed and str(two) in printed and "not installed" in printed
    d1 = one.read_text()
    assert "placeholder\\n'inputs'" in d1 and "gold" in _node_line(d1, "'y'")
    assert "'lonely'" in two.read_text()
    # --format png without Graphviz: one clean line, exit 2
    assert cli.main(["draw", "--format", "png", str(script)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mpsgraph draw: error:") and "Graphviz" in err and "\n" not in err
    assert cli.main(["draw", str(tmp_path / "missing.py")]) == 2
    assert "no such script" in capsys.readouterr().err


def test_cli_draw_each_executable(tmp_path, capsys):
    script = tmp_path / "build.py"
    script.write_text(SCRIPT)
    assert cli.main(["draw", "--format", "dot", "--each-executable", "-o",
                     str(tmp_path / "e.dot"), str(script)]) == 0
    files = sorted(os.listdir(tmp_path))
    assert files == ["build.py", "e_1.dot", "e_2.dot"]
    assert "executable 1" in capsys.readouterr().out
