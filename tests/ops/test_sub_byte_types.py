"""The sub-byte integer types int4, uInt4, int2, uInt2 (ml_dtypes; docs/semantics.md,
"Sub-byte integer types"): storage types that are fed, read, held by constants and variables,
moved by the data-movement ops and converted by `cast`; arithmetic refuses them. References
are plain Python / float64 NumPy on int64 values (never our kernels)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES

DT = mg.DataType
SUB = {DT.int4: (4, True), DT.uInt4: (4, False), DT.int2: (2, True), DT.uInt2: (2, False)}
NP = {DT.int4: ml_dtypes.int4, DT.uInt4: ml_dtypes.uint4, DT.int2: ml_dtypes.int2,
      DT.uInt2: ml_dtypes.uint2}


def _range(dt):
    bits, signed = SUB[dt]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def _wrap(v: int, dt) -> int:
    lo, _ = _range(dt)
    return (v - lo) % (1 << SUB[dt][0]) + lo


def _values(rng, dt, shape):
    lo, hi = _range(dt)
    return rng.integers(lo, hi + 1, size=shape).astype(NP[dt])


SHAPES = [(3, 4), (0, 5), (1, 1, 7), (2, 0, 3), ()]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", list(SUB), ids=lambda d: d.name)
def test_types_exist(dt, device):
    assert dt.numpy_dtype == np.dtype(NP[dt])
    assert DT.from_numpy(NP[dt]) == dt
    assert dt.itemsize == 1  # one element per byte (ml_dtypes' layout)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", list(SUB), ids=lambda d: d.name)
def test_feed_read_and_data_movement(dt, device):
    rng = np.random.default_rng(int(dt) % 1000)
    for shape in SHAPES:
        xv = _values(rng, dt, shape)
        g = mg.Graph()
        x = g.placeholder(list(shape), dt)
        outs = {"identity": g.identity(x), "reshape": g.reshape(x, [-1]),
                "expand": g.expandDims(x, axis=0)}
        if len(shape) >= 2:
            outs["transpose"] = g.transposeTensor(x, dimension=0, withDimension=1)
            outs["concat"] = g.concatTensors([x, x], dimension=1)
            outs["slice"] = g.sliceTensor(x, dimension=1, start=0, length=min(1, shape[1]))
            outs["broadcast"] = g.broadcast(x, [2, *shape])
        c = g.constant(xv)
        v = g.variable(xv)
        outs["constant"], outs["variable"] = c, v
        r = g.run({x: xv}, list(outs.values()), device=device)
        ints = xv.astype(np.int64)
        want = {"identity": ints, "reshape": ints.reshape(-1), "expand": ints[None],
                "constant": ints, "variable": ints}
        if len(shape) >= 2:
            want.update(transpose=ints.swapaxes(0, 1), concat=np.concatenate([ints, ints], 1),
                        slice=ints[:, :min(1, shape[1])],
                        broadcast=np.broadcast_to(ints, (2, *shape)))
        for k, t in outs.items():
            td = r[t]
            assert td.dataType == dt, (k, td.dataType)
            got = td.numpy()
            assert got.dtype == np.dtype(NP[dt]), (k, got.dtype)
            np.testing.assert_array_equal(got.astype(np.int64), want[k], err_msg=k)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", list(SUB), ids=lambda d: d.name)
def test_cast_to_sub_byte(dt, device):
    rng = np.random.default_rng(7)
    lo, hi = _range(dt)
    floats = np.concatenate([rng.uniform(-40, 40, 50), [np.nan, np.inf, -np.inf, -0.0, 0.5,
                                                        -0.5, hi + 0.99, lo - 0.99, hi + 1.0,
                                                        lo - 1.0]]).astype(np.float32)
    ints = np.concatenate([rng.integers(-300, 300, 50), [lo, hi, lo - 1, hi + 1, -1, 0,
                                                         2 ** 31 - 1, -2 ** 31]]).astype(np.int32)
    bools = np.array([True, False, True])
    g = mg.Graph()
    f, i, b = g.placeholder([floats.size], mg.float32), g.placeholder([ints.size], mg.int32), \
        g.placeholder([3], mg.bool)
    h = g.placeholder([floats.size], mg.float16)
    outs = [g.cast(t, to=dt) for t in (f, i, b, h)]
    r = g.run({f: floats, i: ints, b: bools, h: floats.astype(np.float16)}, outs, device=device)
    # floats: truncate toward zero, saturate, NaN -> 0 (as for every integer type)
    t = np.trunc(floats.astype(np.float64))
    want_f = np.clip(np.where(np.isnan(t), 0, t), lo, hi).astype(np.int64)
    t16 = np.trunc(floats.astype(np.float16).astype(np.float64))
    want_h = np.clip(np.where(np.isnan(t16), 0, t16), lo, hi).astype(np.int64)
    want_i = np.array([_wrap(int(v), dt) for v in ints])  # integers wrap
    for out, want in zip(outs, (want_f, want_i, bools.astype(np.int64), want_h)):
        got = r[out].numpy()
        assert r[out].dataType == dt and got.dtype == np.dtype(NP[dt])
        np.testing.assert_array_equal(got.astype(np.int64), want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", list(SUB), ids=lambda d: d.name)
@pytest.mark.parametrize("to", [mg.float32, mg.float16, mg.bFloat16, mg.int8, mg.uInt8,
                                mg.int32, mg.int64, mg.bool, DT.int4, DT.uInt2],
                         ids=lambda d: d.name)
def test_cast_from_sub_byte(dt, to, device):
    rng = np.random.default_rng(3)
    xv = _values(rng, dt, (4, 6))
    g = mg.Graph()
    x = g.placeholder([4, 6], dt)
    y = g.cast(x, to=to)
    got = g.run({x: xv}, [y], device=device)[y].numpy()
    ints = xv.astype(np.int64)
    if to == mg.bool:
        want = ints != 0
    elif to in SUB:
        want = np.vectorize(lambda v: _wrap(int(v), to))(ints)
    elif to.is_floating:
        want = ints.astype(np.float64)  # |v| <= 15: exact in every float type
    else:
        want = np.vectorize(lambda v: int(np.array(v).astype(to.numpy_dtype)))(ints)
    assert got.dtype == to.numpy_dtype
    np.testing.assert_array_equal(got.astype(np.float64), np.asarray(want, np.float64))


@pytest.mark.parametrize("dt", list(SUB), ids=lambda d: d.name)
def test_arithmetic_refuses(dt):
    g = mg.Graph()
    x = g.placeholder([2], dt)
    for fn in (lambda: g.addition(x, x), lambda: g.negative(x), lambda: g.equal(x, x),
               lambda: g.bitwiseAND(x, x)):
        with pytest.raises(mg.DataTypeError) as e:
            fn()
        msg = str(e.value)
        assert f"given DataType.{dt.name}" in msg and "storage type" in msg, msg
        assert ("int8" if SUB[dt][1] else "uInt8") in msg


@pytest.mark.parametrize("dt", list(SUB), ids=lambda d: d.name)
def test_torch_feeds(dt):
    torch = pytest.importorskip("torch")
    g = mg.Graph()
    x = g.placeholder([3], dt)
    y = g.cast(x, to=mg.int32)
    # torch has no sub-byte type: an int8 / uint8 tensor could hold values out of range
    with pytest.raises(mg.FeedError, match=dt.name):
        g.run({x: torch.zeros(3, dtype=torch.int8 if SUB[dt][1] else torch.uint8)}, [y],
              device="torch-cpu")
    with pytest.raises(mg.FeedError):
        g.run({x: np.zeros(3, np.int8)}, [y], device="torch-cpu")
    xv = _values(np.random.default_rng(0), dt, (3,))
    td = mg.TensorData(xv, device="torch-cpu")
    assert td.dataType == dt and td.numpy().dtype == np.dtype(NP[dt])
    got = g.run({x: td}, [y], device="torch-cpu")[y].numpy()
    np.testing.assert_array_equal(got, xv.astype(np.int64))
    # python data takes the placeholder's type
    got = g.run({x: [1, 0, 1]}, [y], device="torch-cpu")[y].numpy()
    np.testing.assert_array_equal(got, [1, 0, 1])
