"""gradientForPrimaryTensor end to end: a graph mixing convolution2D, LSTM,
matrixMultiplication and softMaxCrossEntropy, against central finite differences of the same
loss written independently in float64 NumPy (the oracles of tests/oracles)."""

from __future__ import annotations

import numpy as np
import pytest

import mpsgraph as mg
from oracles import conv_f64, lstm_f64

N, C, S, O, H, K = 2, 1, 6, 3, 4, 5  # batch, in channels, image size, conv out, hidden, classes


def _softmax_ce_mean(logits, onehot):
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return float(-(onehot * logp).sum() / logits.shape[0])


def loss_f64(p, onehot):
    """The model below in float64: conv (TF_SAME 3x3) -> tanh -> rows as time steps -> LSTM ->
    last state -> dense -> mean softmax cross-entropy."""
    (_, pads) = conv_f64.resolve_pads("TF_SAME", (S, S), (3, 3), (1, 1), (1, 1))
    y = np.tanh(conv_f64.conv2d_ref(p["x"], p["w1"], pads=pads))            # [N, O, S, S]
    seq = y.transpose(2, 0, 1, 3).reshape(S, N, O * S)                     # [T=S, N, O*S]
    state, _, _ = lstm_f64.lstm_ref(seq, p["R"][None], p["Wi"], p["b"], reverse=False,
                                    bidirectional=False, forget_gate_last=False,
                                    activations=(3, 3, 2, 3, 2))
    logits = state[-1] @ p["Wd"] + p["bd"]
    return _softmax_ce_mean(logits, onehot)


def test_gradient_of_mixed_graph_matches_finite_differences(rng):
    p = {"x": rng.standard_normal((N, C, S, S)), "w1": rng.standard_normal((O, C, 3, 3)) * 0.5,
         "R": rng.standard_normal((4 * H, H)) * 0.5,
         "Wi": rng.standard_normal((4 * H, O * S)) * 0.3,
         "b": rng.standard_normal(4 * H) * 0.1, "Wd": rng.standard_normal((H, K)),
         "bd": rng.standard_normal(K) * 0.1}
    labels = np.array([1, 3])
    onehot = np.eye(K)[labels]

    g = mg.Graph()
    t = {k: g.placeholder(list(v.shape), name=k) for k, v in p.items()}
    d = mg.Convolution2DOpDescriptor(paddingStyle=mg.PaddingStyle.TF_SAME)
    y = g.tanh(g.convolution2D(t["x"], t["w1"], d))
    seq = g.reshape(g.transpose(y, permutation=[2, 0, 1, 3]), shape=[S, N, O * S])
    (state,) = g.LSTM(seq, t["R"], inputWeight=t["Wi"], bias=t["b"],
                      descriptor=mg.LSTMDescriptor())
    last = g.reshape(g.sliceTensor(state, dimension=0, start=S - 1, length=1), shape=[N, H])
    logits = g.addition(g.matrixMultiplication(last, t["Wd"]), t["bd"])
    lab = g.constant(onehot.astype(np.float32))
    loss = g.softMaxCrossEntropy(logits, lab, -1, reductionType=mg.LossReductionType.mean)
    wrt = [t[k] for k in p]
    grads = g.gradientForPrimaryTensor(loss, wrt)
    assert set(grads) == set(wrt)
    out = g.run({t[k]: v.astype(np.float32) for k, v in p.items()},
                [loss, *[grads[w] for w in wrt]])
    assert out[loss].numpy().size == 1
    np.testing.assert_allclose(float(out[loss].numpy().reshape(-1)[0]), loss_f64(p, onehot),
                               rtol=1e-5)
    for k, w in zip(p, wrt):
        got = out[grads[w]].numpy().astype(np.float64)
        assert got.shape == p[k].shape
        # full central-difference gradient of the float64 loss, element by element
        num = np.zeros_like(p[k])
        eps = 1e-6
        for idx in np.ndindex(p[k].shape):
            hi = {**p, k: p[k].copy()}
            lo = {**p, k: p[k].copy()}
            hi[k][idx] += eps
            lo[k][idx] -= eps
            num[idx] = (loss_f64(hi, onehot) - loss_f64(lo, onehot)) / (2 * eps)
        np.testing.assert_allclose(got, num, rtol=1e-3, atol=2e-5, err_msg=k)


def test_unreachable_tensor_gets_zeros_and_multiple_uses_are_summed(rng):
    g = mg.Graph()
    a = g.placeholder([3], name="a")
    b = g.placeholder([2, 3], name="b")
    unrelated = g.placeholder([4], name="unrelated")
    y = g.multiplication(g.addition(a, a), b)  # a used twice and broadcast
    grads = g.gradientForPrimaryTensor(y, [a, b, unrelated])
    av, bv = rng.standard_normal(3).astype(np.float32), rng.standard_normal((2, 3)).astype(
        np.float32)
    out = g.run({a: av, b: bv, unrelated: np.zeros(4, np.float32)},
                [grads[a], grads[b], grads[unrelated]])
    np.testing.assert_allclose(out[grads[a]].numpy(), 2 * bv.sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(out[grads[b]].numpy(), np.broadcast_to(2 * av, (2, 3)),
                               rtol=1e-6)
    np.testing.assert_array_equal(out[grads[unrelated]].numpy(), np.zeros(4, np.float32))


def test_gradient_errors():
    g = mg.Graph()
    i = g.placeholder([3], mg.int32, name="i")
    f = g.placeholder([3], name="f")
    with pytest.raises(mg.DataTypeError, match="withTensors"):
        g.gradientForPrimaryTensor(f, [i])
    with pytest.raises(mg.DataTypeError, match="primaryTensor"):
        g.gradientForPrimaryTensor(i, [f])
    other = mg.Graph().placeholder([3])
    with pytest.raises(mg.GraphMismatchError):
        g.gradientForPrimaryTensor(f, [other])
    assert g.gradients(f, [f])[f] is not None  # the Swift spelling
