"""complexFloat32 in the general arithmetic ops (docs/semantics.md, "Complex inputs to the
general ops" and "No complex gradients"): exactly the documented ops accept it, the others
refuse it by name, and no gradient passes through a complex tensor. Values are checked by the
op database (tests/opdb_entries/arithmetic.py, complex128 references)."""

from __future__ import annotations

import numpy as np
import pytest

import mpsgraph as mg
from mpsgraph.ops._registry import OPS
from mpsgraph.ops.arithmetic import ELEMENTWISE

C64 = mg.DataType.complexFloat32
COMPLEX_OPS = {
    # the six complex ops of issue 15
    "complexTensor", "realPartOfTensor", "imaginaryPartOfTensor", "conjugate", "planarTensor",
    "absoluteSquare",
    # the general ops that take complexFloat32
    "addition", "subtraction", "multiplication", "division", "negative", "square",
    "reciprocal", "squareRoot", "exponent", "logarithm", "power", "sin", "cos", "tan", "sinh",
    "cosh", "absolute", "equal", "notEqual", "isNaN", "isFinite", "isInfinite", "select"}


def test_the_documented_ops_take_complex():
    takes = {n for n, r in ELEMENTWISE.items() if C64 in r.dtypes}
    takes.add("complexTensor")  # float32 parts in, complex out
    assert takes == COMPLEX_OPS


@pytest.mark.parametrize("name", sorted(n for n in ELEMENTWISE if n not in COMPLEX_OPS
                                        and n != "clamp"))
def test_the_others_refuse_complex(name):
    row = ELEMENTWISE[name]
    g = mg.Graph()
    z = g.placeholder([2], C64)
    with pytest.raises(mg.DataTypeError) as e:
        getattr(g, row.name if row.name != "not" else "not_")(*[z] * len(row.args))
    assert "complexFloat32" in str(e.value) and name in str(e.value)


def test_clamp_refuses_complex():
    g = mg.Graph()
    z = g.placeholder([2], C64)
    with pytest.raises(mg.DataTypeError, match="clamp.*complexFloat32"):
        g.clamp(z, min=z, max=z)


@pytest.mark.parametrize("op", sorted(n for n in COMPLEX_OPS - {"complexTensor"}
                                      if ELEMENTWISE[n].grad is not None))
def test_every_rule_refuses_complex_inputs(op):
    g = mg.Graph()
    z = g.placeholder([3], C64)
    args = [z] * len(ELEMENTWISE[op].args)
    if op == "select":
        args[0] = g.placeholder([3], mg.bool)
    w = getattr(g, op)(*args)
    with pytest.raises(mg.UnsupportedError, match=f"{op}: gradients through complexFloat32"):
        OPS[op].grad(g, w.operation, [g.placeholder([3], w.dataType)])


@pytest.mark.parametrize("op", ["multiplication", "division", "addition", "power", "exponent",
                                "sin", "squareRoot"])
def test_no_gradient_through_complex(op):
    # end to end: the loss depends on a real input through a complex tensor
    g = mg.Graph()
    a = g.placeholder([3], mg.float32)
    z = g.complexTensor(a, a)
    w = getattr(g, op)(*[z] * len(ELEMENTWISE[op].args))
    loss = g.reductionSum(g.absolute(w), axes=[0])
    with pytest.raises(mg.UnsupportedError, match="gradients through complexFloat32"):
        g.gradientForPrimaryTensor(loss, [a])


def test_real_gradients_unchanged():
    # the guard only fires for complex inputs: a real path still differentiates
    g = mg.Graph()
    a = g.placeholder([3], mg.float32)
    loss = g.reductionSum(g.multiplication(g.exponent(a), a), axes=[0])
    (da,) = g.gradientForPrimaryTensor(loss, [a]).values()
    av = np.array([0.1, -0.5, 1.5], np.float32)
    got = g.run({a: av}, [da])[da].numpy()
    x = av.astype(np.float64)
    np.testing.assert_allclose(got, np.exp(x) * (1 + x), rtol=1e-6)
