"""Regressions found by the op database's entries for convolution, pooling and LSTM
(tests/opdb_entries/{convolution,pooling,rnn}.py), on every backend present.

Pooling (fixed here): the NumPy kernels let NumPy's floating-point RuntimeWarnings escape
(inf - inf in a window, inf * 0 for an empty window's gradient, a float16 result that
overflows), unlike every other NumPy kernel, which computes under np.errstate(all="ignore").

Autodiff and the CUDA LSTM (not fixed here): minimal reproductions marked xfail(strict=True)
on the devices where they fail today, so that a fix shows up as an XPASS. They pin decisions of
docs/semantics.md, "Decisions found by the op database (convolution, pooling, LSTM)": an absent
peephole adds no term; relu and hardSigmoid of NaN are NaN, and a NaN activation output has a
NaN derivative. (Whether a NaN reaches an output only through a product with an implicit zero,
padding or an absent initial state, is unspecified there: no test pins it.)
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES

D = mg.Convolution2DOpDescriptor
Pool = mg.Pooling2DOpDescriptor


def _devices(failing: dict[str, str]) -> list:
    """DEVICES, with xfail(strict=True, reason) on the devices named in `failing`."""
    out = []
    for p in DEVICES:
        dev = p.values[0]
        marks = list(p.marks)
        if dev in failing:
            marks.append(pytest.mark.xfail(strict=True, reason=failing[dev]))
        out.append(pytest.param(dev, id=dev, marks=marks))
    return out


def _run(device, build, *arrays):
    g = mg.Graph()
    phs = [g.placeholder(list(a.shape), mg.DataType.from_numpy(a.dtype)) for a in arrays]
    out = build(g, *phs)
    outs = out if isinstance(out, list) else [out]
    res = g.run(dict(zip(phs, arrays)), outs, device=device)
    got = [res[o].numpy() for o in outs]
    return got if isinstance(out, list) else got[0]


def _quietly(device, build, *arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return _run(device, build, *arrays)


# ---------------------------------------------------------------------------- pooling (fixed)
@pytest.mark.parametrize("device", DEVICES)
def test_avg_pooling_of_inf_and_minus_inf_is_nan_without_warning(device):
    # cause: NumPy's `s += tap` of inf and -inf warned "invalid value encountered in add"
    x = np.array([[[[np.inf, -np.inf, 1.0]]]], np.float32)
    y = _quietly(device, lambda g, t: g.avgPooling2D(t, descriptor=Pool(kernelWidth=2)), x)
    assert np.isnan(y[0, 0, 0, 0]) and y[0, 0, 0, 1] == -np.inf


@pytest.mark.parametrize("device", DEVICES)
def test_avg_pooling_gradient_of_inf_in_an_empty_window_without_warning(device):
    # window 0 lies in the padding (count 0): its inf gradient times 1/count = 0 warned
    # "invalid value encountered in multiply"; no source element receives it
    dy = np.array([[[[np.inf, 1.0]]]], np.float32)
    x = np.ones((1, 1, 1, 1), np.float32)
    d = Pool(kernelWidth=1, paddingLeft=1)
    dx = _quietly(device, lambda g, a, b: g.avgPooling2DGradient(a, b, descriptor=d), dy, x)
    np.testing.assert_array_equal(dx, [[[[1.0]]]])


@pytest.mark.parametrize("device", DEVICES)
def test_max_pooling_gradient_sums_quietly(device):
    # overlapping windows route inf and -inf to one element (NaN) and two 60000s to another
    # (120000: rounded once to float16, inf); NumPy warned "invalid value encountered in add"
    # and "overflow encountered in cast"
    x = np.array([[[[0.0, 5.0, 0.0, 0.0]]]], np.float32)
    dy = np.array([[[[np.inf, -np.inf, 1.0]]]], np.float32)
    d = Pool(kernelWidth=2)
    dx = _quietly(device, lambda g, a, b: g.maxPooling2DGradient(a, b, descriptor=d), dy, x)
    np.testing.assert_array_equal(dx, [[[[0.0, np.nan, 1.0, 0.0]]]])
    dx = _quietly(device, lambda g, a, b: g.maxPooling2DGradient(a, b, descriptor=d),
                  np.full((1, 1, 1, 3), 60000, np.float16), x.astype(np.float16))
    np.testing.assert_array_equal(dx, np.array([[[[0, np.inf, 60000, 0]]]], np.float16))


# ---------------------------------------------------------------------------- convolution
def _conv(g, x, w, d):
    return g.convolution2D(x, weights=w, descriptor=d)


_SYMMETRIC_PAD = ("torch backend: a symmetric padding is handed to torch.convolution, whose "
                  "CPU (oneDNN) path skips the padding taps instead of multiplying their zeros; "
                  "the asymmetric remainder is an F.pad of zeros and does multiply")


_EMPTY_SOURCE = ("an empty source takes the early zeros path, which skips the products of the "
                 "padding zeros with the weights")
_EMPTY = {"cpu": _EMPTY_SOURCE, "torch-cpu": _EMPTY_SOURCE, "cuda": _EMPTY_SOURCE}


_DATA_GRAD = ("NumPy data gradient: computed as a correlation of the zero-padded incoming "
              "gradient with the flipped weights, so a NaN weight meets padding zeros and "
              "reaches positions that none of its products reach")


_DATA_GRAD_CUDA = ("cuDNN's data gradient correlates the zero-dilated, zero-padded incoming "
                   "gradient with the flipped weights: the NumPy backend's defect, on the GPU")


_SYMMETRIC_PAD_CUDA = ("torch backend on CUDA: the weights gradient with a symmetric padding "
                       "(cuDNN's wgrad) skips the padding taps instead of multiplying their zeros")


@pytest.mark.parametrize("device", DEVICES)
def test_gradient_through_a_data_gradient_with_a_fed_shape(device):
    # fixed (found again by tests/property/test_conv_property.py): the gradient rules of the
    # data gradient built ops from the incoming gradient, whose shape is unknown when
    # outputShape is a fed tensor, and gradientForPrimaryTensor refused the result's shape
    # [-1, C, -1, -1] for the static [N, C, H, W] input (an internal error); the rules now
    # give it the input's static shape (ops/convolution.py, _shaped_like)
    g = mg.Graph()
    dy = g.placeholder([1, 1, 2, 2])
    w = g.placeholder([1, 1, 1, 1])
    shape = g.placeholder([4], mg.int32)
    dx = g.convolution2DDataGradient(dy, weights=w, outputShape=shape,
                                     forwardConvolutionDescriptor=D(strideInX=2, strideInY=2))
    grads = g.gradientForPrimaryTensor(g.reductionSum(dx), [dy, w])
    res = g.run({dy: np.ones((1, 1, 2, 2), np.float32),
                 w: np.full((1, 1, 1, 1), 3.0, np.float32),
                 shape: np.array([1, 1, 4, 4], np.int32)}, [grads[dy], grads[w]], device=device)
    np.testing.assert_array_equal(res[grads[dy]].numpy(), np.full((1, 1, 2, 2), 3.0))
    np.testing.assert_array_equal(res[grads[w]].numpy(), [[[[4.0]]]])


# ---------------------------------------------------------------------------- LSTM
def _lstm_grads(device, x, R, dstate, z, cell, **opt):
    names = list(opt)

    def build(g, a, b, c, d, e, *rest):
        return g.LSTMGradients(a, b, c, d, e, descriptor=mg.LSTMDescriptor(),
                               **dict(zip(names, rest)))
    return _run(device, build, x, R, dstate, z, cell, *opt.values())


def _lstm_case():
    """T = N = H = 1, no input weight: x [1, 1, 4], R [4, 1], and the zState / cell of the
    forward from a zero state and cell (the values need not be consistent for the point)."""
    x = np.full((1, 1, 4), 0.5, np.float32)
    R = np.full((4, 1), 0.5, np.float32)
    z = np.array([[[0.6, 0.7, 0.4, 0.6]]], np.float32)
    cell = np.array([[[0.24]]], np.float32)
    return x, R, z, cell


_ABSENT_STATE = ("LSTMGradients skips the products with an absent initState / initCell (the "
                 "first processed step's da^T (h_prev * m) in dR, sum(da * c_prev) in the "
                 "peephole gradient) instead of taking them as zeros, as the forward does and "
                 "as an explicit zero initState / initCell gives")



@pytest.mark.parametrize("act", ["relu", "hardSigmoid"])
@pytest.mark.parametrize("device", DEVICES)  # (fixed in the CUDA kernels: selects)
def test_lstm_relu_and_hard_sigmoid_of_nan_are_nan(device, act):
    # a NaN cell-gate input: z = tanh(NaN) = NaN, c = f c0 + i z = NaN, h = o * g(c) with
    # g = relu / hardSigmoid must be NaN (as np.maximum / torch.relu / torch.clamp give)
    x = np.full((1, 1, 4), 0.5, np.float32)
    x[0, 0, 2] = np.nan
    R = np.full((4, 1), 0.5, np.float32)
    d = mg.LSTMDescriptor(activation=getattr(mg.RNNActivation, act))
    state = _run(device, lambda g, a, b: g.LSTM(a, b, descriptor=d)[0], x, R)
    assert np.isnan(state).all(), state
    d = mg.LSTMDescriptor(forgetGateActivation=getattr(mg.RNNActivation, act))
    x = np.full((1, 1, 4), 0.5, np.float32)
    x[0, 0, 1] = np.nan  # the forget gate's input: f = relu(NaN) = NaN, c = f * c0 + i z
    state = _run(device, lambda g, a, b: g.LSTM(a, b, descriptor=d)[0], x, R)
    assert np.isnan(state).all(), state


@pytest.mark.parametrize("device", DEVICES)
def test_lstm_absent_peephole_adds_no_term(device):
    # decision pinned (passes): SPEC 3.5 "p absent: 0" is the peephole TERM; a NaN initCell
    # reaches the cell and the state of the first step, not its gates (zState)
    x = np.full((1, 1, 4), 0.5, np.float32)
    R = np.full((4, 1), 0.5, np.float32)
    c0 = np.full((1, 1), np.nan, np.float32)
    state, cell, z = _run(device, lambda g, a, b, c: g.LSTM(
        a, b, initCell=c, descriptor=mg.LSTMDescriptor(training=True)), x, R, c0)
    assert np.isnan(state).all() and np.isnan(cell).all() and np.isfinite(z).all()


@pytest.mark.parametrize("act", ["none", "relu", "tanh", "sigmoid", "hardSigmoid"])
@pytest.mark.parametrize("device", DEVICES)
def test_lstm_gradients_nan_gate_has_a_nan_derivative(device, act):
    # decision pinned (passes): f'(y) of a NaN output y is NaN for every activation (relu's
    # "1 if y > 0 else 0" does not turn it into 0), so a NaN input gate i gives a NaN da_i
    x, R, z, cell = _lstm_case()
    z[0, 0, 0] = np.nan
    d = mg.LSTMDescriptor(inputGateActivation=getattr(mg.RNNActivation, act))

    def build(g, a, b, c, e, f):
        return g.LSTMGradients(a, b, c, e, f, descriptor=d)
    dx = _run(device, build, x, R, np.ones((1, 1, 1), np.float32), z, cell)[0]
    assert np.isnan(dx[0, 0, 0]), dx  # da_i = dc * z * f_i'(i)
