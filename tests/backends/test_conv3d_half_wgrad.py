"""The half-type convolution3D weights gradient (backends/torch/convolution.py
`_wgrad_3d_by_depth_taps`): kD 2-D weights gradients with depth folded into the batch must give
the correctly rounded result (float64 reference on the rounded inputs, rounded once) for every
stride, dilation, group count, asymmetric padding and both layouts."""

import numpy as np
import pytest

import mpsgraph as mg

from ..helpers import DEVICES

torch = pytest.importorskip("torch")
F = torch.nn.functional
TL = mg.TensorNamedDataLayout
CASES = [  # stride, dilation, groups, (top, bottom, left, right, front, back), layout
    (1, 1, 1, (1, 1, 1, 1, 1, 1), "NCDHW"),
    (2, 1, 2, (0, 1, 1, 0, 2, 1), "NCDHW"),
    (1, 2, 1, (1, 1, 0, 0, 1, 1), "NDHWC"),
    (2, 2, 4, (1, 0, 1, 1, 0, 0), "NDHWC"),
    (1, 1, 8, (0, 0, 0, 0, 0, 0), "NCDHW"),
]


@pytest.mark.parametrize("device", [d for d in DEVICES if d.values[0] != "cpu"])
@pytest.mark.parametrize("dtype", ["bFloat16", "float16"])
@pytest.mark.parametrize("case", CASES, ids=[f"s{c[0]}r{c[1]}g{c[2]}{c[4]}" for c in CASES])
def test_half_conv3d_weights_gradient_is_correctly_rounded(device, dtype, case):
    sd, rd, g, (pt, pb, pl, pr, pf, pk), layout = case
    tdt = {"bFloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    rng = np.random.default_rng(sum(case[:3]))
    n, c, o, d, h, w = 2, 8, 8, 7, 6, 5
    stride, dil = (sd, 1, sd), (rd, 1, rd)
    x = torch.tensor(rng.standard_normal((n, c, d, h, w))).to(tdt).double()
    wshape = (o, c // g, 3, 2, 3)
    xp = F.pad(x, (pl, pr, pt, pb, pf, pk))
    y_shape = F.conv3d(xp, torch.zeros(wshape, dtype=torch.float64), stride=stride,
                       dilation=dil, groups=g).shape
    dy = torch.tensor(rng.standard_normal(tuple(y_shape))).to(tdt).double()
    wr = torch.zeros(wshape, dtype=torch.float64, requires_grad=True)
    F.conv3d(xp, wr, stride=stride, dilation=dil, groups=g).backward(dy)
    ref = wr.grad  # float64 of the rounded inputs: the exact sum
    cl = layout == "NDHWC"
    last = (0, 2, 3, 4, 1)
    xu, dyu = (x.permute(*last), dy.permute(*last)) if cl else (x, dy)
    ref = ref.permute(2, 3, 4, 1, 0) if cl else ref
    desc = mg.Convolution3DOpDescriptor(
        strideInZ=sd, strideInX=sd, dilationRateInZ=rd, dilationRateInX=rd, groups=g,
        paddingTop=pt, paddingBottom=pb, paddingLeft=pl, paddingRight=pr, paddingFront=pf,
        paddingBack=pk, dataLayout=TL.NDHWC if cl else TL.NCDHW,
        weightsLayout=TL.DHWIO if cl else TL.OIDHW)
    gr = mg.Graph()
    mdt = getattr(mg, dtype)
    a = gr.placeholder(list(dyu.shape), mdt)
    b = gr.placeholder(list(xu.shape), mdt)
    r = gr.convolution3DWeightsGradient(a, b, outputShape=list(ref.shape),
                                        forwardConvolutionDescriptor=desc)
    tdev = "cuda" if device == "cuda" else "cpu"
    feeds = {a: mg.TensorData(dyu.to(tdt).to(tdev)), b: mg.TensorData(xu.to(tdt).to(tdev))}
    out = gr.run(feeds=feeds, targetTensors=[r], device=mg.Device(device))[r].numpy()
    want = ref.to(tdt).double().numpy()
    got = np.asarray(out, dtype=np.float64)
    # correctly rounded, but for ties and the float32 accumulation: within one ulp of the type
    ulp = np.spacing(np.abs(want).astype(np.float32)) * (2**16 if dtype == "bFloat16" else 2**13)
    assert np.all(np.abs(got - ref.numpy()) <= ulp), np.max(np.abs(got - ref.numpy()) / ulp)
    assert np.mean(got == want) > 0.98
