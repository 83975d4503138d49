"""Helpers shared by the op tests (tests/ops): run a one-op graph, check an op's gradient rule
through gradientForPrimaryTensor against central differences, and assert a GraphError's class
and message format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mpsgraph as mg
from oracles import gradcheck

DT = mg.DataType


def run(build, *arrays):
    g = mg.Graph()
    phs = [g.placeholder(list(a.shape), DT.from_numpy(a.dtype)) for a in arrays]
    out = build(g, *phs)
    res = g.run(dict(zip(phs, arrays)), [out])[out]
    assert res.shape == out.shape
    return res.numpy()


def grad_check(build, shapes, rng, args=None, eps=1e-2, rtol=2e-3, atol=2e-4, trials=2):
    """<J^T u, v> from gradientForPrimaryTensor (loss = sum(u * y)) against the central
    difference of the same float32 forward graph along random directions v."""
    g = mg.Graph()
    xs = [g.placeholder(list(s), mg.float32) for s in shapes]
    y = build(g, *xs)
    u = rng.standard_normal(y.shape).astype(np.float32)
    loss = g.reductionSum(g.multiplication(y, g.constant(u, dataType=mg.float32)))
    grads = g.gradientForPrimaryTensor(loss, xs)
    for x in xs:
        assert grads[x].shape == x.shape and grads[x].dataType == mg.float32
    exe = g.compile({x: mg.ShapedType(list(s)) for x, s in zip(xs, shapes)},
                    [loss] + [grads[x] for x in xs])
    args = [rng.standard_normal(s) for s in shapes] if args is None else args

    def f(*a):
        return exe.run([np.asarray(v, np.float32) for v in a])[0].numpy().astype(np.float64)

    res = dict(zip(exe.targetTensors, exe.run([np.asarray(a, np.float32) for a in args])))
    analytic = [res[grads[x]].numpy().astype(np.float64) for x in xs]
    for k in range(len(xs)):
        for _ in range(trials):
            v = rng.standard_normal(shapes[k])
            dirs = [v if i == k else np.zeros(s) for i, s in enumerate(shapes)]
            num = float(np.sum(gradcheck.directional_derivative(f, args, dirs, eps)))
            ana = float(np.sum(analytic[k] * v))
            scale = float(np.sum(np.abs(analytic[k] * v)))
            assert abs(num - ana) <= atol + rtol * scale, (k, num, ana)
    return analytic


def expect(cls, fn, op, argument, *given, name=None):
    with pytest.raises(mg.GraphError) as info:
        fn()
    msg = str(info.value)
    assert type(info.value) is cls, f"{type(info.value).__name__}: {msg}"
    who = f"{op} {name!r}" if name else op
    assert msg.startswith(f"{who}: argument '{argument}'"), msg
    for s in given:
        assert s in msg, (s, msg)
    return msg


def expect_named(cls, fn, op, name, argument, *given):
    """`expect` with the user's `name=` (or None) before the argument."""
    with pytest.raises(mg.GraphError) as info:
        fn()
    err, msg = info.value, str(info.value)
    assert type(err) is cls, f"{type(err).__name__} instead of {cls.__name__}: {msg}"
    who = f"{op} {name!r}" if name else op
    assert msg.startswith(f"{who}: argument '{argument}'"), msg
    for s in given:
        assert s in msg, f"{s!r} not in {msg!r}"


def triton_kernels(*names: str) -> list:
    """The modules mpsgraph.backends.torch.kernels.<name>, imported with TRITON_INTERPRET=1 set
    just then when no GPU is present (Triton picks its interpreter when a kernel is defined,
    i.e. at import); skips the calling test module without torch or triton."""
    import importlib
    import os

    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    set_it = not torch.cuda.is_available() and "TRITON_INTERPRET" not in os.environ
    if set_it:
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        return [importlib.import_module(f"mpsgraph.backends.torch.kernels.{n}") for n in names]
    finally:
        if set_it:
            del os.environ["TRITON_INTERPRET"]


def _cuda_present() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# tests of the Triton kernels on CPU tensors: Triton picks its interpreter when a kernel is
# defined (at import), so on a machine with a GPU the kernels are compiled ones, which CPU
# tensors cannot run; the `gpu` tests cover the same paths there
interpreter_only = pytest.mark.skipif(
    _cuda_present(), reason="interpreter test (CPU tensors): the kernels are compiled for the "
                            "GPU on this machine; the gpu tests cover them")


def _devices() -> list:
    """Every device present: cpu always, torch-cpu with torch, cuda (marked gpu) with torch;
    MPSGRAPH_TEST_DEVICES=cpu,cuda (a comma-separated list) keeps only those."""
    import os

    out = [pytest.param("cpu", id="cpu")]
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        out.append(pytest.param("torch-cpu", id="torch-cpu"))
        out.append(pytest.param("cuda", id="cuda", marks=pytest.mark.gpu))
    only = os.environ.get("MPSGRAPH_TEST_DEVICES")
    if only is not None:
        keep = {d.strip() for d in only.split(",") if d.strip()}
        out = [p for p in out if p.values[0] in keep]
    return out


DEVICES = _devices()


# ------------------------------------------------------------------ the API list (surface tests)
API_DATA = Path(__file__).resolve().parent / "data"
SHARED_API = Path(__file__).resolve().parents[1] / ".." / "shared" / "MPSGRAPH_API.tsv"


def api_rows(path, keep) -> list[dict]:
    """The rows of an MPSGRAPH_API.tsv copy (header, swift_signature, objc_selector, ...) for
    which `keep(row)` holds."""
    import csv

    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if keep(r)]


def swift_base(sig: str) -> str:
    """The Swift base name of a signature: `gather(withUpdatesTensor:...)` -> `gather`."""
    return sig.split("(")[0]


def swift_labels(sig: str) -> list[str]:
    """The argument labels of a Swift signature: `gather(withUpdatesTensor:indicesTensor:)` ->
    ['withUpdatesTensor', 'indicesTensor']."""
    return sig.split("(", 1)[1].rstrip(")").split(":")[:-1]


def check_api_copy(rows_of, copy, count: int, bases: int | None = None) -> None:
    """A surface test's copy of the API list (tests/data/, so that the tests run without the
    shared folder) holds `count` rows (`bases` distinct Swift base names) and, where
    ../shared/MPSGRAPH_API.tsv is present, exactly its rows; `rows_of(path)` selects them."""
    rows = rows_of(copy)
    assert len(rows) == count
    if bases is not None:
        assert len({swift_base(r["swift_signature"]) for r in rows}) == bases
    if not SHARED_API.exists():
        pytest.skip("../shared/MPSGRAPH_API.tsv is not here")
    assert rows == rows_of(SHARED_API)


def method_params(name: str) -> list:
    """The parameters (after self) of mg.Graph.<name>, which must exist and take its first
    argument positionally (API.md rule 9)."""
    import inspect

    fn = getattr(mg.Graph, name, None)
    assert callable(fn), f"mg.Graph has no method {name!r}"
    params = list(inspect.signature(fn).parameters.values())[1:]
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    return params
