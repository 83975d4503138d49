"""The torch backend against the NumPy backend (the reference) on the same graphs: the
convolution sweep, the LSTM round trip over its options, autodiff through conv + LSTM, and the
runtime side (TensorData on a torch device, DLPack, zero-copy feeds, feed errors, variables).

Devices: "torch-cpu" always; "cuda" too (marked gpu) when torch sees a GPU."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import mpsgraph as mg  # noqa: E402
from mpsgraph.runtime.device import get_backend  # noqa: E402

L = mg.TensorNamedDataLayout
PS = mg.PaddingStyle
A = mg.RNNActivation

DEVICES = [pytest.param("torch-cpu", id="torch-cpu")] + (
    [pytest.param("cuda", id="cuda", marks=pytest.mark.gpu)] if torch.cuda.is_available()
    else [])
TOL = {mg.float32: (1e-5, 1e-5), mg.float16: (2e-3, 2e-3), mg.bFloat16: (1.6e-2, 1.6e-2)}


def _compare(g, feeds, targets, device, dtype=mg.float32, tol=None, what=""):
    """Run `targets` on the NumPy device and on `device`; assert equal within tolerance."""
    ref = g.run(feeds, targets, device="cpu")
    got = g.run(feeds, targets, device=device)
    rtol, atol_rel = tol or TOL[dtype]
    for i, t in enumerate(targets):
        a, b = got[t], ref[t]
        assert a.device == mg.Device(device)
        assert isinstance(a.array, torch.Tensor)
        assert a.dataType == b.dataType == t.dataType
        assert a.shape == b.shape == t.shape, (what, i)
        want = b.numpy().astype(np.float64)
        have = a.numpy()
        assert have.dtype == b.numpy().dtype
        scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
        np.testing.assert_allclose(have.astype(np.float64), want, rtol=rtol,
                                   atol=atol_rel * scale, err_msg=f"{what} target {i} "
                                   f"({t.name})")


# ---------------------------------------------------------------------------- convolution
STYLES = ["explicit", "explicit_sym", "TF_VALID", "TF_SAME", "ONNX_SAME_LOWER"]
GROUPS = {"g1": (1, 4, 6), "g2": (2, 4, 6), "dw": (4, 4, 8)}  # name: (groups, C, O)


def _conv_graph(rng, style, dl, wl, s, r, gname, dtype=mg.float32, N=2, hw=(7, 6), k=(3, 2)):
    groups, C, O = GROUPS[gname]
    pads = (1, 1, 2, 2) if style == "explicit_sym" else (1, 0, 2, 1)
    d = mg.Convolution2DOpDescriptor(
        strideInX=s, strideInY=s, dilationRateInX=r, dilationRateInY=r, groups=groups,
        paddingTop=pads[0], paddingBottom=pads[1], paddingLeft=pads[2], paddingRight=pads[3],
        paddingStyle=getattr(PS, style.split("_sym")[0]), dataLayout=getattr(L, dl),
        weightsLayout=getattr(L, wl))
    xs = (N, C, *hw) if dl == "NCHW" else (N, *hw, C)
    ws = (O, C // groups, *k) if wl == "OIHW" else (*k, C // groups, O)
    npdt = dtype.numpy_dtype
    g = mg.Graph()
    x = g.placeholder(list(xs), dtype, name="x")
    w = g.placeholder(list(ws), dtype, name="w")
    y = g.convolution2D(x, w, d, name="y")
    dy = g.placeholder(y.shape, dtype, name="dy")
    dx = g.convolution2DDataGradient(dy, w, list(xs), d, name="dx")
    dw = g.convolution2DWeightsGradient(dy, x, list(ws), d, name="dw")
    feeds = {x: rng.standard_normal(xs).astype(npdt), w: rng.standard_normal(ws).astype(npdt),
             dy: rng.standard_normal(y.shape).astype(npdt)}
    return g, feeds, [y, dx, dw]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("style,dl,wl,s,r,gname", [
    pytest.param(*p, id="-".join(map(str, p))) for p in itertools.product(
        STYLES, ["NCHW", "NHWC"], ["OIHW", "HWIO"], [1, 2], [1, 2], GROUPS)])
def test_convolution_sweep(rng, device, style, dl, wl, s, r, gname):
    g, feeds, targets = _conv_graph(rng, style, dl, wl, s, r, gname)
    _compare(g, feeds, targets, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [mg.float16, mg.bFloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("style,dl,wl,s,gname", [
    pytest.param(*p, id="-".join(map(str, p))) for p in itertools.product(
        ["explicit", "TF_SAME"], ["NCHW", "NHWC"], ["OIHW", "HWIO"], [1, 2], ["g1", "dw"])])
def test_convolution_half(rng, device, dtype, style, dl, wl, s, gname):
    g, feeds, targets = _conv_graph(rng, style, dl, wl, s, 1, gname, dtype=dtype)
    _compare(g, feeds, targets, device, dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("N,gname", [(0, "g1"), (0, "dw"), (2, "g1")])
def test_convolution_zero_batch_and_padding_wider_than_kernel(rng, device, N, gname):
    g, feeds, targets = _conv_graph(rng, "explicit", "NHWC", "HWIO", 1, 1, gname, N=N,
                                    hw=(2, 1), k=(1, 1))
    _compare(g, feeds, targets, device)


@pytest.mark.parametrize("device", DEVICES)
def test_convolution_large_asymmetric_pads(rng, device):
    groups, C, O = 1, 3, 2
    d = mg.Convolution2DOpDescriptor(strideInX=2, strideInY=3, dilationRateInX=2,
                                     paddingTop=0, paddingBottom=4, paddingLeft=3,
                                     paddingRight=0, groups=groups)
    g = mg.Graph()
    x = g.placeholder([2, C, 5, 6], mg.float32)
    w = g.placeholder([O, C, 2, 3], mg.float32)
    y = g.convolution2D(x, w, d)
    dy = g.placeholder(y.shape, mg.float32)
    dx = g.convolution2DDataGradient(dy, w, [2, C, 5, 6], d)
    dw = g.convolution2DWeightsGradient(dy, x, [O, C, 2, 3], d)
    feeds = {x: rng.standard_normal((2, C, 5, 6)).astype(np.float32),
             w: rng.standard_normal((O, C, 2, 3)).astype(np.float32),
             dy: rng.standard_normal(y.shape).astype(np.float32)}
    _compare(g, feeds, [y, dx, dw], device)


# ---------------------------------------------------------------------------- LSTM
DEFAULT_ACTS = (A.sigmoid, A.sigmoid, A.tanh, A.sigmoid, A.tanh)
ODD_ACTS = (A.hardSigmoid, A.sigmoid, A.relu, A.tanh, A.none)


def _lstm_graph(rng, *, T=4, N=3, I=5, H=4, reverse=False, bidirectional=False, fgl=False,
                acts=DEFAULT_ACTS, peephole="none", mask="none", has_w=True, has_b=True,
                h0="none", c0="none", state_grad=False, cell_grad="none", dtype=mg.float32):
    D = 2 if bidirectional else 1
    npdt = dtype.numpy_dtype
    g = mg.Graph()
    feeds = {}

    def ph(name, shape, binary=False):
        v = ((rng.uniform(size=shape) > 0.3) if binary else rng.uniform(-0.8, 0.8, shape))
        t = g.placeholder(list(shape), dtype, name=name)
        feeds[t] = v.astype(npdt)
        return t

    x = ph("x", (T, N, I if has_w else D * 4 * H))
    R = ph("R", (2, 4 * H, H) if bidirectional else (4 * H, H))
    kw = {}
    if has_w:
        kw["inputWeight"] = ph("W", (D * 4 * H, I))
    if has_b:
        kw["bias"] = ph("b", (D * 4 * H,))
    forms = {"NDH": (N, D * H), "1NDH": (1, N, D * H), "DH": (D * H,), "seq": (T, N, D * H),
             "state": (N, D * H), "1N1": (1, N, 1)}
    if h0 != "none":
        kw["initState"] = ph("h0", forms[h0])
    if c0 != "none":
        kw["initCell"] = ph("c0", forms[c0])
    if mask != "none":
        kw["mask"] = ph("mask", forms[mask], binary=True)
    if peephole != "none":
        kw["peephole"] = ph("p", {"4H": (4 * H,), "2x4H": (2, 4 * H), "8H": (8 * H,)}[peephole])
    d = mg.LSTMDescriptor(reverse=reverse, bidirectional=bidirectional, training=True,
                          forgetGateLast=fgl, inputGateActivation=acts[0],
                          forgetGateActivation=acts[1], cellGateActivation=acts[2],
                          outputGateActivation=acts[3], activation=acts[4])
    state, cell, z = g.LSTM(x, R, descriptor=d, **kw)
    gk = {}
    if state_grad:
        gk["stateGradient"] = ph("dhT", (N, D * H))
    if cell_grad != "none":
        gk["cellGradient"] = ph("dcT", forms[cell_grad])
    dstate = ph("dstate", (T, N, D * H))
    grads = g.LSTMGradients(x, R, dstate, z, cell, descriptor=d, **gk, **kw)
    return g, feeds, [state, cell, z, *grads]


_CORE = list(itertools.product([False, True], [False, True], [False, True], ["default", "odd"]))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("i", range(len(_CORE)),
                         ids=[f"rev{int(a)}-bi{int(b)}-fgl{int(c)}-{e}" for a, b, c, e in _CORE])
def test_lstm_round_trip_options(rng, device, i):
    rev, bi, fgl, acts = _CORE[i]
    peep = ["none", "4H"][i % 2] if not bi else ["none", "2x4H", "8H"][i % 3]
    opts = dict(reverse=rev, bidirectional=bi, fgl=fgl,
                acts=DEFAULT_ACTS if acts == "default" else ODD_ACTS, peephole=peep,
                mask=["none", "state", "seq", "1NDH"][i % 4],
                h0=["none", "NDH", "1NDH", "DH"][(i + 1) % 4],
                c0=["none", "NDH", "DH", "1N1"][(i + 2) % 4],
                state_grad=bool(i % 3), cell_grad=["none", "state", "seq"][i % 3])
    g, feeds, targets = _lstm_graph(rng, **opts)
    _compare(g, feeds, targets, device, what=str(opts))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("has_w,has_b,h0,c0", list(itertools.product(
    [True, False], [True, False], ["none", "NDH"], ["none", "1NDH"])))
def test_lstm_optional_inputs(rng, device, has_w, has_b, h0, c0):
    g, feeds, targets = _lstm_graph(rng, has_w=has_w, has_b=has_b, h0=h0, c0=c0,
                                    bidirectional=has_b and not has_w)
    _compare(g, feeds, targets, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("state_grad,cell_grad", list(itertools.product(
    [False, True], ["none", "state", "seq"])))
def test_lstm_gradient_forms(rng, device, state_grad, cell_grad):
    g, feeds, targets = _lstm_graph(rng, state_grad=state_grad, cell_grad=cell_grad,
                                    bidirectional=True, peephole="2x4H", mask="seq", h0="NDH",
                                    c0="NDH")
    _compare(g, feeds, targets, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("T,N", [(1, 2), (0, 2), (3, 0)])
def test_lstm_degenerate_sizes(rng, device, T, N):
    g, feeds, targets = _lstm_graph(rng, T=T, N=N, peephole="4H", h0="NDH", c0="NDH",
                                    cell_grad="state", state_grad=True)
    _compare(g, feeds, targets, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [mg.float16, mg.bFloat16], ids=["f16", "bf16"])
def test_lstm_half(rng, device, dtype):
    g, feeds, targets = _lstm_graph(rng, dtype=dtype, bidirectional=True, peephole="2x4H",
                                    h0="NDH", c0="NDH", cell_grad="seq")
    _compare(g, feeds, targets, device, dtype)


# ---------------------------------------------------------------------------- autodiff
@pytest.mark.parametrize("device", DEVICES)
def test_autodiff_through_conv_and_lstm(rng, device):
    be = get_backend(mg.Device(device))
    try:
        for kind in ("reshape", "constant"):
            if kind != "constant":
                be.kernel(kind)
    except mg.UnsupportedError as e:
        pytest.skip(f"the torch backend lacks a kernel this graph needs ({e})")
    T, N, C, O, H = 4, 3, 2, 5, 3
    g = mg.Graph()
    feeds = {}

    def ph(name, shape):
        t = g.placeholder(list(shape), mg.float32, name=name)
        feeds[t] = rng.uniform(-0.8, 0.8, shape).astype(np.float32)
        return t

    x = ph("x", (1, T, N, C))
    w = ph("w", (3, 3, C, O))
    d = mg.Convolution2DOpDescriptor(paddingStyle=PS.TF_SAME, dataLayout=L.NHWC,
                                     weightsLayout=L.HWIO)
    y = g.convolution2D(x, w, d)                                    # [1, T, N, O]
    src = g.reshape(y, shape=[T, N, O])
    R, W, h0 = ph("R", (4 * H, H)), ph("W", (4 * H, O)), ph("h0", (N, H))
    desc = mg.LSTMDescriptor(produceCell=True)
    state, cell = g.LSTM(src, R, inputWeight=W, initState=h0, descriptor=desc)
    wrt = [x, w, R, W, h0]
    grads = g.gradientForPrimaryTensor(state, wrt)
    _compare(g, feeds, [state, cell] + [grads[t] for t in wrt], device)


# ---------------------------------------------------------------------------- runtime
@pytest.mark.parametrize("device", DEVICES)
def test_tensor_data_on_torch_device(device):
    dev = mg.Device(device)
    tdev = get_backend(dev).device
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    td = mg.TensorData(a, device=dev)
    assert isinstance(td.array, torch.Tensor) and td.array.device == tdev
    assert td.shape == [3, 4] and td.dataType == mg.float32 and td.device == dev
    np.testing.assert_array_equal(td.numpy(), a)
    np.testing.assert_array_equal(np.asarray(td), a)
    np.testing.assert_array_equal(np.asarray(td, dtype=np.float64), a)
    t = torch.from_dlpack(td)
    assert t.data_ptr() == td.array.data_ptr()  # DLPack export is zero-copy
    bf = np.array([[1.5, -2.25], [3.0, 0.0078125]], ml_dtypes.bfloat16)
    tb = mg.TensorData(bf, device=dev)
    assert tb.array.dtype == torch.bfloat16 and tb.dataType == mg.bFloat16
    assert tb.numpy().dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(tb.numpy(), bf)
    assert torch.from_dlpack(tb).dtype == torch.bfloat16


@pytest.mark.parametrize("device", DEVICES)
def test_run_results_and_zero_copy_feeds(rng, device):
    dev = mg.Device(device)
    be = get_backend(dev)
    g = mg.Graph()
    x = g.placeholder([2, 3, 4, 4], mg.float32, name="x")
    w = g.placeholder([5, 3, 3, 3], mg.float32, name="w")
    y = g.convolution2D(x, w, mg.Convolution2DOpDescriptor())
    xv = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    wv = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    want = g.run({x: xv, w: wv}, [y], device="cpu")[y].numpy()
    xt = torch.from_numpy(xv).to(be.device)
    # feeds: a torch tensor, a TensorData of the device, an object with only __dlpack__
    wt = mg.TensorData(wv, device=dev)

    class OnlyDLPack:
        def __init__(self, t):
            self._t = t

        def __dlpack__(self, *a, **k):
            return self._t.__dlpack__(*a, **k)

        def __dlpack_device__(self):
            return self._t.__dlpack_device__()

    for xf, wf in ((xt, wt), (xv, wv), (OnlyDLPack(xt), wt)):
        out = g.run({x: xf, w: wf}, [y], device=dev)[y]
        assert isinstance(out.array, torch.Tensor) and out.array.device == be.device
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    # no copy: a tensor on the device with the right dtype is used as is
    st = mg.ShapedType([2, 3, 4, 4], mg.float32)
    assert be.convert_feed(xt, st, "x") is xt
    assert be.convert_feed(wt, mg.ShapedType([5, 3, 3, 3], mg.float32), "w") is wt.array
    assert be.convert_feed(OnlyDLPack(xt), st, "x").data_ptr() == xt.data_ptr()
    # a torch tensor on another device is moved (here: a CPU tensor for a CUDA device)
    assert be.convert_feed(torch.from_numpy(xv), st, "x").device == be.device


@pytest.mark.parametrize("device", DEVICES)
def test_feed_errors(device):
    dev = mg.Device(device)
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float32, name="x")
    w = g.placeholder([4, 3, 1, 1], mg.float32, name="w")
    xr = g.placeholder([1, 3, 2, 1], mg.float32, name="xr")
    y = g.convolution2D(xr, w, mg.Convolution2DOpDescriptor())
    exe = g.compile({xr: mg.ShapedType([1, 3, 2, 1], mg.float32),
                     w: mg.ShapedType([4, 3, 1, 1], mg.float32)}, [y], device=dev)
    good_w = torch.zeros(4, 3, 1, 1)
    for bad in (torch.zeros(1, 3, 2, 1, dtype=torch.float64),
                torch.zeros(1, 3, 2, 1, dtype=torch.float16),
                np.zeros((1, 3, 2, 1), np.float16),
                mg.TensorData(np.zeros((1, 3, 2, 1), np.int32), device=dev)):
        with pytest.raises(mg.FeedError, match=r"run: argument 'feeds\[xr\]'.*float32"):
            exe.run([bad, good_w])
    for bad in (torch.zeros(1, 3, 1, 2), np.zeros((3, 2, 1), np.float32),
                mg.TensorData(np.zeros((1, 3, 2, 2), np.float32), device=dev)):
        with pytest.raises(mg.FeedError, match=r"feeds\[xr\].*shape \[1, 3, 2, 1\]"):
            exe.run([bad, good_w])
    assert exe.run([torch.ones(1, 3, 2, 1), good_w])[0].shape == [1, 4, 2, 1]
    with pytest.raises(mg.FeedError):  # through run: the shared feed checks
        g.run({x: torch.zeros(2, 3, dtype=torch.int64)}, [x], device=dev)


@pytest.mark.parametrize("device", DEVICES)
def test_variables_persist_on_the_torch_device(device):
    dev = mg.Device(device)
    be = get_backend(dev)
    g = mg.Graph()
    v = g.variable(np.zeros(3, np.float32), [3], mg.float32, name="v")
    p = g.placeholder([3], mg.float32, name="p")
    r = g.read(v)
    a = g.assign(v, p)
    out = g.run({p: np.array([1, 2, 3], np.float32)}, [r], [a], device=dev)
    np.testing.assert_array_equal(out[r].numpy(), [0, 0, 0])  # start-of-run value
    stored = g._variable_storage[v.operation][dev.key]
    assert isinstance(stored, torch.Tensor) and stored.device == be.device
    fed = torch.tensor([7.0, 8.0, 9.0], device=be.device)
    out = g.run({p: fed}, [r], [a], device=dev)
    np.testing.assert_array_equal(out[r].numpy(), [1, 2, 3])
    fed.fill_(-1.0)  # the assigned value is a copy
    np.testing.assert_array_equal(g.run({}, [r], device=dev)[r].numpy(), [7, 8, 9])
    # each device keeps its own value
    np.testing.assert_array_equal(g.run({}, [r], device="cpu")[r].numpy(), [0, 0, 0])


def test_device_mapping_and_errors():
    be = get_backend(mg.Device("torch-cpu"))
    assert be.device == torch.device("cpu") and be is get_backend(mg.Device("torch-cpu"))
    assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    if not torch.cuda.is_available():
        with pytest.raises(mg.UnsupportedError, match="CUDA is not available"):
            get_backend(mg.Device("cuda"))
        with pytest.raises(mg.UnsupportedError, match="CUDA is not available"):
            get_backend(mg.Device("cuda:1"))
    else:
        assert get_backend(mg.Device("cuda:0")).device == torch.device("cuda", 0)
        n = torch.cuda.device_count()
        with pytest.raises(mg.UnsupportedError, match="CUDA index"):
            get_backend(mg.Device(f"cuda:{n}"))
    with pytest.raises(mg.UnsupportedError, match="no torch kernel"):
        be.kernel("noSuchOp")


def test_capture_runs_without_the_cycle_collector():
    # GraphReplayer captures inside no_gc(): a collection during a capture could destroy an
    # unrelated CUDA graph, which invalidates the capture (CPU check of the guard itself)
    import gc

    from mpsgraph.backends.torch import no_gc

    assert gc.isenabled()
    with no_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(KeyError), no_gc():
        raise KeyError("x")
    assert gc.isenabled()
    gc.disable()
    try:
        with no_gc():
            pass
        assert not gc.isenabled()  # left as found
    finally:
        gc.enable()
