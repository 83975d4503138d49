"""The torch backend's two matrix-free convolution paths (backends/torch/convolution.py):
"gemm" (a 1x1 convolution of NHWC data, one group, no padding, any stride: one matrix product
with the weights as they are) and "scale" (a 1x1 depthwise convolution, stride 1: the
per-channel scale it is). Each path is forced through the graph (the path choice replaced by
the path under test, which must be among the call's candidates) on the torch-cpu device and
checked, forward, data gradient and weights gradient, against float64 torch.nn.functional;
the hand rules' choices are pinned too."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import mpsgraph as mg  # noqa: E402
from mpsgraph.backends.torch import convolution as conv  # noqa: E402

TL = mg.TensorNamedDataLayout


def _reference(x, wt, stride, groups):
    """float64 forward, data gradient and weights gradient (NCHW / OIHW) of a random dy."""
    xt = torch.tensor(x, requires_grad=True)
    wtt = torch.tensor(wt, requires_grad=True)
    y = F.conv2d(xt, wtt, stride=stride, groups=groups)
    dy = torch.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)))
    y.backward(dy)
    return y.detach().numpy(), dy.numpy(), xt.grad.numpy(), wtt.grad.numpy()


def _run(x, wt, stride, groups, layout, wlayout, want, monkeypatch):
    """The three ops through the graph with every path choice replaced by `want` (where it is
    a candidate; else the hand rule's), returning (outputs, {op: (paths, hand, taken)})."""
    seen = {}

    def pick(op, a, shapes, t, paths, hand, run):
        taken = want if want in paths else hand
        seen[op] = (list(paths), hand, taken)
        return taken

    monkeypatch.setattr(conv, "_pick", pick)
    y, dy, dx, dw = _reference(x, wt, stride, groups)
    nhwc = layout == "NHWC"
    to_l = (lambda a: a.transpose(0, 2, 3, 1)) if nhwc else (lambda a: a)
    w_l = wt.transpose(2, 3, 1, 0) if wlayout == "HWIO" else wt
    desc = mg.Convolution2DOpDescriptor(
        strideInX=stride[1], strideInY=stride[0], dilationRateInX=1, dilationRateInY=1,
        groups=groups, paddingStyle=mg.PaddingStyle.explicit,
        dataLayout=TL.NHWC if nhwc else TL.NCHW,
        weightsLayout=TL.HWIO if wlayout == "HWIO" else TL.OIHW)
    g = mg.Graph()
    xa = g.placeholder(list(to_l(x).shape), dataType=mg.float32, name="x")
    wa = g.placeholder(list(w_l.shape), dataType=mg.float32, name="w")
    da = g.placeholder(list(to_l(dy).shape), dataType=mg.float32, name="dy")
    outs = [g.convolution2D(xa, weights=wa, descriptor=desc),
            g.convolution2DDataGradient(da, weights=wa, outputShape=list(to_l(x).shape),
                                        forwardConvolutionDescriptor=desc),
            g.convolution2DWeightsGradient(da, source=xa, outputShape=list(w_l.shape),
                                           forwardConvolutionDescriptor=desc)]
    vals = {"x": to_l(x), "w": w_l, "dy": to_l(dy)}
    got = g.run({t: vals[t.operation.name].astype(np.float32) for t in (xa, wa, da)}, outs,
                device="torch-cpu")
    wants = [to_l(y), to_l(dx), dw.transpose(2, 3, 1, 0) if wlayout == "HWIO" else dw]
    for name, o, w in zip(("forward", "data gradient", "weights gradient"), outs, wants):
        np.testing.assert_allclose(got[o].numpy().astype(np.float64), w, rtol=2e-5, atol=2e-5,
                                   err_msg=name)
    return seen


@pytest.mark.parametrize("wlayout", ["HWIO", "OIHW"])
@pytest.mark.parametrize("n,c,h,w,o,stride", [
    (2, 3, 5, 7, 4, (1, 1)), (2, 3, 5, 7, 4, (2, 2)), (1, 5, 7, 6, 3, (2, 3)),
    (3, 2, 1, 4, 1, (3, 1)), (1, 1, 9, 1, 2, (4, 1))])
def test_gemm_path(n, c, h, w, o, stride, wlayout, monkeypatch):
    rng = np.random.default_rng(n * 100 + c * 10 + h)
    x = rng.standard_normal((n, c, h, w))
    wt = rng.standard_normal((o, c, 1, 1))
    seen = _run(x, wt, stride, 1, "NHWC", wlayout, "gemm", monkeypatch)
    assert {op: taken for op, (_, _, taken) in seen.items()} == dict.fromkeys(
        ("forward", "data_grad", "weights_grad"), "gemm")
    # the hand rule: the matrix product at stride 1, cuDNN's convolution otherwise
    assert all(h == ("gemm" if stride == (1, 1) else "cudnn") for _, h, _ in seen.values())


@pytest.mark.parametrize("layout,wlayout", [("NCHW", "OIHW"), ("NHWC", "HWIO"),
                                            ("NHWC", "OIHW")])
@pytest.mark.parametrize("n,c,h,w", [(2, 4, 5, 3), (1, 1, 1, 6), (3, 7, 2, 2)])
def test_scale_path(n, c, h, w, layout, wlayout, monkeypatch):
    rng = np.random.default_rng(c * 10 + h)
    x = rng.standard_normal((n, c, h, w))
    wt = rng.standard_normal((c, 1, 1, 1))
    seen = _run(x, wt, (1, 1), c, layout, wlayout, "scale", monkeypatch)
    assert seen["forward"][2] == seen["data_grad"][2] == "scale"
    assert seen["forward"][1] == seen["data_grad"][1] == "scale"  # the hand rule's too
    assert "scale" not in seen["weights_grad"][0]  # (a reduction: the convolution paths)


@pytest.mark.parametrize("case", ["pads", "groups", "k3", "multiplier", "stride"])
def test_paths_not_offered_outside_their_cases(case, monkeypatch):
    """Padding, groups, a larger kernel (gemm); a depthwise multiplier or a stride (scale):
    no such candidate, and the results stay right."""
    rng = np.random.default_rng(4)
    if case in ("pads", "groups", "k3"):
        k = 3 if case == "k3" else 1
        groups = 2 if case == "groups" else 1
        x = rng.standard_normal((2, 4, 5, 5))
        wt = rng.standard_normal((6, 4 // groups, k, k))
        want = "gemm"
    else:
        groups = 3
        x = rng.standard_normal((2, 3, 5, 5))
        wt = rng.standard_normal((6 if case == "multiplier" else 3, 1, 1, 1))
        want = "scale"
    if case == "pads":  # a 1x1 convolution with padding: through F.pad-free explicit pads
        seen = {}

        def pick(op, a, shapes, t, paths, hand, run):
            seen[op] = list(paths)
            return hand

        monkeypatch.setattr(conv, "_pick", pick)
        g = mg.Graph()
        xa = g.placeholder([2, 5, 5, 4], dataType=mg.float32, name="x")
        wa = g.placeholder([1, 1, 4, 6], dataType=mg.float32, name="w")
        desc = mg.Convolution2DOpDescriptor(
            strideInX=1, strideInY=1, dilationRateInX=1, dilationRateInY=1, groups=1,
            paddingLeft=1, paddingRight=0, paddingTop=0, paddingBottom=1,
            paddingStyle=mg.PaddingStyle.explicit, dataLayout=TL.NHWC, weightsLayout=TL.HWIO)
        y = g.convolution2D(xa, weights=wa, descriptor=desc)
        xn, wn = x.transpose(0, 2, 3, 1), wt.transpose(2, 3, 1, 0)
        got = g.run({xa: xn.astype(np.float32), wa: wn.astype(np.float32)}, [y],
                    device="torch-cpu")[y].numpy()
        ref = F.conv2d(F.pad(torch.tensor(x), (1, 0, 0, 1)), torch.tensor(wt)).numpy()
        np.testing.assert_allclose(got, ref.transpose(0, 2, 3, 1), rtol=2e-5, atol=2e-5)
        assert all("gemm" not in p for p in seen.values())
        return
    stride = (2, 2) if case == "stride" else (1, 1)
    seen = _run(x, wt, stride, groups, "NHWC", "HWIO", want, monkeypatch)
    assert all(want not in paths for paths, _, _ in seen.values())
