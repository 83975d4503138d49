"""Generic tests driven by the op database (tests/opdb.py): every entry, on every backend present.

- test_every_op_has_an_entry: the meta-test (the registry and the database list the same ops);
- test_forward: each sample of each accepted dtype against the entry's float64 reference;
- test_gradient: the gradient rule (gradientForPrimaryTensor of sum(y * u)) against central
  differences of the float64 reference along one random direction, and against torch autograd
  of the entry's torch reference where it has one;
- test_backend_matches_numpy: each non-NumPy backend against the NumPy backend;
- test_feeds: inputs fed as non-contiguous NumPy views (Fortran order, negative steps, stepped
  slices, size-1 axes with odd strides, read-only zero-stride broadcasts), torch tensors and
  TensorData;
- test_executable_rerun: one compiled Executable run on A, on other data B, and on A again:
  no state leaks between runs, and on CPU backends two runs are bitwise equal;
- test_nan_propagation: a NaN in a floating input gives NaN exactly where the reference does;
- test_errors: each error input raises the GraphError expected, naming op and argument.

MPSGRAPH_OPDB_SAMPLES sets the samples per op and dtype (4 by default), MPSGRAPH_OPDB_FAMILIES
(comma-separated entry modules: shape,source) restricts the entries, MPSGRAPH_OPDB_COUNTS=path
writes the examples checked per family and device to path.<xdist worker or "main">.
"""

from __future__ import annotations

import json
import os
import zlib

import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES
from mpsgraph.ops._registry import OPS
from opdb import DT, OPDB, SOURCE_ONLY, OpInfo, Sample, f64


def _family(info: OpInfo) -> str:
    return info.build.__module__.rsplit(".", 1)[-1]


# MPSGRAPH_OPDB_FAMILIES=shape,source: only those families' entries (a deep run of a few)
_ONLY = {f for f in os.environ.get("MPSGRAPH_OPDB_FAMILIES", "").split(",") if f}
INFOS = sorted((i for i in OPDB.values() if not _ONLY or _family(i) in _ONLY),
               key=lambda i: i.name)
IDS = [i.name for i in INFOS]
CPU_BACKENDS = ("cpu", "torch-cpu")
# examples checked, per (family, device): written as JSON to MPSGRAPH_OPDB_COUNTS.<worker>
COUNTS: dict[str, int] = {}


@pytest.fixture(scope="module", autouse=True)
def _write_counts():
    yield
    path = os.environ.get("MPSGRAPH_OPDB_COUNTS")
    if path:
        path += "." + os.environ.get("PYTEST_XDIST_WORKER", "main")  # one file per worker
        with open(path, "w") as f:
            json.dump(COUNTS, f, indent=1, sort_keys=True)


def _count(info: OpInfo, device: str) -> None:
    key = f"{_family(info)}/{device}"
    COUNTS[key] = COUNTS.get(key, 0) + 1


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("/".join(map(str, key)).encode()))


def _samples(info: OpInfo, dt: mg.DataType, key: str = "") -> list[Sample]:
    out = list(info.samples(_rng(info.name, dt.name, key), dt))
    assert out, f"{info.name}: no samples for {dt!r}"
    return out


def _graph(info: OpInfo, s: Sample, inputs=None):
    g = mg.Graph()
    inputs = s.inputs if inputs is None else inputs
    phs = [g.placeholder(list(a.shape), DT.from_numpy(a.dtype)) for a in s.inputs]
    out = info.build(g, *phs, **s.kwargs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    return g, phs, outs


def _run(info: OpInfo, s: Sample, device: str, inputs=None) -> list[np.ndarray]:
    """The op's outputs (NumPy) for the sample's inputs (or `inputs`, fed as given)."""
    _count(info, device)
    if info.run is not None:
        return [np.asarray(r) for r in info.run(device, s, s.inputs if inputs is None
                                                else inputs)]
    g, phs, outs = _graph(info, s)
    feeds = s.inputs if inputs is None else inputs
    res = g.run(dict(zip(phs, feeds)), outs, device=device)
    got = []
    for o in outs:
        td = res[o]
        assert td.dataType == o.dataType, (info.name, td.dataType, o.dataType)
        a = td.numpy()
        assert len(a.shape) == len(o.shape) and all(  # -1: known only at run time
            d == n or d == -1 for d, n in zip(o.shape, a.shape)), (info.name, a.shape, o.shape)
        assert a.dtype == o.dataType.numpy_dtype, (info.name, a.dtype, o.dataType)
        got.append(a)
    return got


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _close(info: OpInfo, got: list[np.ndarray], want, s: Sample, what: str,
           scale: float = 1.0, device: str | None = None) -> None:
    wants = _as_list(want)
    assert len(got) == len(wants), f"{info.name} {s}: {len(got)} outputs, ref {len(wants)}"
    for k, (a, w) in enumerate(zip(got, wants)):
        w = np.asarray(w)
        assert a.shape == w.shape, f"{info.name} {s} output {k}: shape {a.shape}, ref {w.shape}"
        if a.dtype.kind in "biu":
            np.testing.assert_array_equal(a, w.astype(a.dtype),
                                          err_msg=f"{info.name} {what} {s} output {k}")
            continue
        rtol, atol = info.tolerance(DT.from_numpy(a.dtype), device)
        wide = np.complex128 if a.dtype.kind == "c" or w.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(a.astype(wide), w.astype(wide),
                                   rtol=rtol * scale, atol=atol * scale, equal_nan=True,
                                   err_msg=f"{info.name} {what} {s} output {k}")


def _forward_samples(info: OpInfo, key: str = ""):
    for dt in info.dtypes:
        for s in _samples(info, dt, key):
            yield dt, s


# ---------------------------------------------------------------------------- the meta-test
def test_every_op_has_an_entry():
    mg.Device("cpu").backend()
    # an op exercised only through another's entry names it in that entry's `kinds`
    covered = set(OPDB).union(*(i.kinds for i in OPDB.values()))
    missing = sorted(set(OPS) - SOURCE_ONLY - covered)
    assert not missing, f"ops of the registry without an opdb entry: {missing}"
    unknown = sorted(set(OPDB) - set(OPS))
    assert not unknown, f"opdb entries of no registered op: {unknown}"


def test_entries_are_well_formed():
    for info in INFOS:
        assert info.dtypes, info.name
        assert callable(info.build) and callable(info.ref), info.name
        if info.differentiable:
            assert any(dt == DT.float32 for dt in info.dtypes), info.name


def test_shape_helper_draws_zero_and_one():
    from opdb import shape

    rng = np.random.default_rng(0)
    seen = {d for _ in range(200) for d in shape(rng, 3)}
    assert {0, 1} <= seen and max(seen) >= 4


# ---------------------------------------------------------------------------- forward
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("info", INFOS, ids=IDS)
def test_forward(info: OpInfo, device: str):
    for _, s in _forward_samples(info):
        _close(info, _run(info, s, device), info.ref(*s.inputs, **s.kwargs), s, "forward",
               device=device)


# ---------------------------------------------------------------------------- gradients
def _float_outputs(outs) -> list[int]:
    return [k for k, o in enumerate(outs) if o.dataType.is_floating]


def _directional(info: OpInfo, s: Sample, diff, us, vs, eps=1e-6) -> float:
    """d/dt sum_k <ref(x + t v)_k, u_k> at t = 0, by central differences in float64."""
    def F(t):
        xs = [f64(a) + t * vs[diff.index(i)] if i in diff else a
              for i, a in enumerate(s.inputs)]
        outs = _as_list(info.ref(*xs, **s.kwargs))
        with np.errstate(invalid="ignore"):  # (weight 0: outputs that are not finite)
            return sum(float(np.sum(np.where(u == 0, 0.0, np.asarray(outs[k], np.float64) * u)))
                       for k, u in us.items())

    return (F(eps) - F(-eps)) / (2 * eps)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("info", [i for i in INFOS if i.differentiable and i.run is None],
                         ids=[i.name for i in INFOS if i.differentiable and i.run is None])
def test_gradient(info: OpInfo, device: str):
    rng = _rng(info.name, "gradient-directions")
    checked = 0
    for s in _samples(info, DT.float32, "gradient"):
        diff = list(info.diff_of(s))
        if not diff:
            continue
        g, phs, outs = _graph(info, s)
        us = {k: rng.standard_normal(outs[k].shape).astype(outs[k].dataType.numpy_dtype)
              .astype(np.float64) for k in _float_outputs(outs)}  # exact in the output dtype
        want = _as_list(info.ref(*s.inputs, **s.kwargs))
        terms = []
        for k, u in us.items():
            # u in the output's own dtype; outputs the reference says are not finite (an
            # exclusive cumulative maximum's -inf, the max of an empty slice) are selected
            # away, not weighted by 0 (inf * 0 is NaN)
            finite = np.isfinite(np.asarray(want[k], np.float64))
            u[~finite] = 0.0
            y = outs[k]
            if not finite.all():
                y = g.select(g.constant(finite, dataType=mg.bool), y,
                             g.constant(0.0, dataType=y.dataType))
            terms.append(g.reductionSum(g.cast(g.multiplication(
                y, g.constant(u, dataType=y.dataType)), mg.float32)))
        loss = terms[0]
        for t in terms[1:]:
            loss = g.addition(loss, t)
        grads = g.gradientForPrimaryTensor(loss, [phs[i] for i in diff])
        targets = [grads[phs[i]] for i in diff]
        res = g.run(dict(zip(phs, s.inputs)), targets, device=device)
        _count(info, device)
        ours = [res[t].numpy().astype(np.float64) for t in targets]
        for i, gr in zip(diff, ours):
            assert gr.shape == s.inputs[i].shape, (info.name, s, i)
        vs = [rng.standard_normal(s.inputs[i].shape) for i in diff]
        num = _directional(info, s, diff, us, vs)
        ana = sum(float(np.sum(gr * v)) for gr, v in zip(ours, vs))
        scale = sum(float(np.sum(np.abs(gr * v))) for gr, v in zip(ours, vs))
        rtol, atol = info.grad_tol
        assert abs(num - ana) <= atol + rtol * max(scale, abs(num)), (
            f"{info.name} {s}: directional derivative {ana} (gradient rule) vs {num} "
            f"(central differences of the float64 reference)")
        if info.torch_ref is not None:
            _check_torch_autograd(info, s, diff, us, ours)
        checked += 1
    assert checked, f"{info.name}: no differentiable sample"


def _check_torch_autograd(info: OpInfo, s: Sample, diff, us, ours) -> None:
    torch = pytest.importorskip("torch")
    ts = [torch.tensor(f64(a), requires_grad=i in diff) if a.dtype.kind == "f" or i in diff
          else torch.from_numpy(np.array(a)) for i, a in enumerate(s.inputs)]
    outs = _as_list(info.torch_ref(*ts, **s.kwargs))
    loss = sum((outs[k] * torch.from_numpy(u)).sum() for k, u in us.items())
    gts = torch.autograd.grad(loss, [ts[i] for i in diff], allow_unused=True)
    rtol, atol = info.grad_tol
    for i, ours_i, gt in zip(diff, ours, gts):
        want = np.zeros(s.inputs[i].shape) if gt is None else gt.detach().numpy()
        tol = atol + rtol * 10 * float(np.max(np.abs(want), initial=1.0))
        np.testing.assert_allclose(ours_i, want, rtol=rtol * 10, atol=tol,
                                   err_msg=f"{info.name} {s}: gradient of input {i} vs torch "
                                           "autograd")


# ---------------------------------------------------------------------------- backends
@pytest.mark.parametrize("device", [d for d in DEVICES if d.values[0] != "cpu"])
@pytest.mark.parametrize("info", INFOS, ids=IDS)
def test_backend_matches_numpy(info: OpInfo, device: str):
    for _, s in _forward_samples(info, "backend"):
        ref_cpu = _run(info, s, "cpu")
        COUNTS[f"{_family(info)}/cpu"] -= 1  # (the reference run: not an example of cpu)
        _close(info, _run(info, s, device), ref_cpu, s, f"{device} vs cpu",
               scale=2.0, device=device)


# ---------------------------------------------------------------------------- feeds
def _odd_size1(a: np.ndarray) -> np.ndarray:
    """`a` as a view whose size-1 axes carry strides that are neither canonical nor 0."""
    if a.ndim == 0:
        return a
    big = np.zeros(tuple(3 if n == 1 else n for n in a.shape), a.dtype)
    v = big[tuple(slice(1, 2) if n == 1 else slice(None) for n in a.shape)]
    v[...] = a
    return v


def _stepped(a: np.ndarray) -> np.ndarray:
    if a.ndim == 0:
        return a
    big = np.zeros(tuple(2 * n for n in a.shape), a.dtype)
    v = big[tuple(slice(None, None, 2) for _ in a.shape)]
    v[...] = a
    return v


def _reversed(a: np.ndarray) -> np.ndarray:
    if a.ndim == 0:
        return a
    return np.flip(np.flip(a, 0).copy(), 0)  # a negative stride on axis 0


def _broadcast(a: np.ndarray) -> np.ndarray:
    """A read-only zero-stride view: the first slice of the longest axis, repeated."""
    if a.ndim == 0 or a.size == 0:
        return a
    ax = int(np.argmax(a.shape))
    first = np.take(a, [0], axis=ax)
    return np.broadcast_to(first, a.shape)


def _fortran(a: np.ndarray) -> np.ndarray:
    return a if a.ndim < 2 else np.asfortranarray(a)  # (asfortranarray makes 0-d 1-d)


VIEWS = {"fortran": _fortran, "reversed": _reversed, "stepped": _stepped,
         "odd-size-1-strides": _odd_size1, "broadcast": _broadcast}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("info", [i for i in INFOS if i.views], ids=[i.name for i in INFOS
                                                                       if i.views])
def test_feeds(info: OpInfo, device: str):
    for _, s in _forward_samples(info, "feeds"):
        for vname, view in VIEWS.items():
            if vname == "broadcast" and not info.broadcast_ok:
                continue
            inputs = [view(a) for a in s.inputs]
            want = info.ref(*[np.array(a) for a in inputs], **s.kwargs)
            _close(info, _run(info, s, device, inputs), want, s, f"{vname} feeds", device=device)
        td = [mg.TensorData(a) for a in s.inputs]
        _close(info, _run(info, s, device, td), info.ref(*s.inputs, **s.kwargs), s,
               "TensorData feeds", device=device)
        if _has_torch():
            import torch

            if all(a.dtype.kind in "biuf" and a.dtype != DT.bFloat16.numpy_dtype
                   for a in s.inputs):
                ts = [torch.from_numpy(np.array(a)) for a in s.inputs]
                if device == "cuda":
                    ts = [t.cuda() for t in ts]
                _close(info, _run(info, s, device, ts), info.ref(*s.inputs, **s.kwargs), s,
                       "torch feeds", device=device)


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------------- executables
def _shuffled(rng: np.random.Generator, a: np.ndarray) -> np.ndarray:
    flat = np.array(a).reshape(-1)
    return rng.permutation(flat).reshape(a.shape)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("info", [i for i in INFOS if i.run is None],
                         ids=[i.name for i in INFOS if i.run is None])
def test_executable_rerun(info: OpInfo, device: str):
    rng = _rng(info.name, "rerun")
    for _, s in _forward_samples(info, "rerun"):
        g, phs, outs = _graph(info, s)
        exe = g.compile({p: mg.ShapedType(list(a.shape), DT.from_numpy(a.dtype))
                         for p, a in zip(phs, s.inputs)}, outs, device=device)
        assert list(exe.feedTensors) == phs
        order = [outs.index(t) for t in exe.targetTensors] if len(set(outs)) == len(outs) \
            else None
        if order is None:
            continue
        a1 = [r.numpy().copy() for r in exe.run(list(s.inputs))]
        b_in = [_shuffled(rng, a) for a in s.inputs]
        b = [r.numpy().copy() for r in exe.run(b_in)]
        a2 = [r.numpy().copy() for r in exe.run(list(s.inputs))]
        _count(info, device)
        inv = [a1[order.index(k)] for k in range(len(outs))]
        _close(info, inv, info.ref(*s.inputs, **s.kwargs), s, "executable run A", device=device)
        _close(info, [b[order.index(k)] for k in range(len(outs))],
               info.ref(*b_in, **s.kwargs), s, "executable run B (other data)", device=device)
        if device in CPU_BACKENDS:
            for x, y in zip(a1, a2):
                np.testing.assert_array_equal(x, y, err_msg=f"{info.name} {s}: two runs of "
                                                            "one Executable differ")
        else:
            _close(info, [a2[order.index(k)] for k in range(len(outs))], inv, s,
                   "executable run A again", device=device)


# ---------------------------------------------------------------------------- NaN
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("info", [i for i in INFOS if i.nan and set(i.dtypes) & {DT.float32}],
                         ids=[i.name for i in INFOS if i.nan and set(i.dtypes) & {DT.float32}])
def test_nan_propagation(info: OpInfo, device: str):
    rng = _rng(info.name, "nan")
    for s in _samples(info, DT.float32, "nan"):
        poison = s.nan_inputs if s.nan_inputs is not None else info.nan_inputs
        for i, a in enumerate(s.inputs):
            if a.dtype != np.float32 or a.size == 0 or (poison is not None and i not in poison):
                continue
            bad = np.array(a)
            bad.reshape(-1)[int(rng.integers(a.size))] = np.nan
            inputs = list(s.inputs)
            inputs[i] = bad
            want = info.ref(*inputs, **s.kwargs)
            _close(info, _run(info, s, device, inputs), want, s, f"NaN in input {i}", device=device)


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("info", [i for i in INFOS if i.errors],
                         ids=[i.name for i in INFOS if i.errors])
def test_errors(info: OpInfo, device: str):
    n = 0
    for e in info.errors(_rng(info.name, "errors")):
        with pytest.raises(mg.GraphError) as exc:
            _run(info, e.sample, device)
        msg = str(exc.value)
        assert isinstance(exc.value, e.cls), f"{info.name} {e.sample}: {type(exc.value)}: {msg}"
        assert f"argument '{e.argument}'" in msg, (info.name, e.argument, msg)
        assert e.match in msg, (info.name, e.match, msg)
        n += 1
    assert n
