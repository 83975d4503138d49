"""Entries of the convolution family (ops/convolution.py): convolution2D,
convolution2DDataGradient, convolution2DWeightsGradient.

References are the float64 direct loops of tests/oracles/conv_f64.py (SPEC 2.4-2.8), which
never import mpsgraph, applied to the operands in the canonical layouts (NCHW data, OIHW
weights; SPEC 2.3). The paddings are resolved by the oracle's `resolve_pads` and applied as
literal zeros (np.pad) before the unpadded loop runs: a padding zero takes part in the products
like any other element, so a NaN weight reaches every output whose window holds it, padding
or not (0 * NaN = NaN: docs/semantics.md, "Decisions found by the op database"). Positions of
the data gradient that no window reaches get an exact 0.

Samples draw every descriptor option cyclically (each of the n_samples() samples of a dtype
takes the next padding style, layout pair, group kind, ... from a random start), and shapes
with 0 and 1 on every axis (N, C, H, W, O, kH, kW; the kernel never 0, which is an error
input). The gradient ops take `outputShape` as a list, as a constant shape tensor, as a shape
tensor fed at run time (int32 / int64, under both keywords `outputShape=` and
`outputShapeTensor=`).

Harness workaround (reported): a fed shape tensor is an input like any other for the generic
tests, which shuffle it (Executable re-run) and replace it by a broadcast of its first element
(feeds); a fed shape is therefore drawn with four equal sizes [k, k, k, k], which every
permutation and broadcast leaves as it is. Its result has the build-time shape
[-1, -1, -1, -1] (asserted), reshaped to the static shape for the harness; these samples are
not used for the gradient test (diff=()): the gradient rules fail on the unknown shape, see
tests/regressions/test_opdb_found_conv_pool_lstm.py.
"""

from __future__ import annotations

import numpy as np

import mpsgraph as mg
from opdb import DT, FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples
from oracles import conv_f64 as C

from ._common import cycle as _cycle
from ._common import size as _size

P = mg.PaddingStyle
L = mg.TensorNamedDataLayout
STYLES = (P.explicit, P.TF_VALID, P.TF_SAME, P.ONNX_SAME_LOWER)
LAYOUTS = ((L.NCHW, L.OIHW), (L.NHWC, L.HWIO), (L.NCHW, L.HWIO), (L.NHWC, L.OIHW))
GROUP_KINDS = ("g1", "grouped", "depthwise", "g1")
SHAPE_FORMS = ("list", "const", "fed", "fed-kw")

# float32 tolerance from the math: a K-term float32 dot product (however it is ordered) has
# |error| <= K u sum|terms| (u = 2^-24; Higham's gamma_K bound, plus one rounding per product).
# Operands are in [-1, 1], so sum|terms| <= K; the largest K of these samples is
# Cg*kH*kW = 3*3*3 = 27 (forward), Og*kH*kW = 27 (data gradient) and N*Ho*Wo <= 2*4*4 = 32
# (weights gradient, sizes kept small for that): 32 * 32 * 2^-24 = 6.1e-5 absolute. The half
# types round their result once after float32 work: the default tolerance of opdb.py, plus
# that absolute float32 bound for results that cancel to near 0.
_ATOL32 = 6.1e-5
TOL = {DT.float32: (2e-5, _ATOL32), DT.float16: (2e-3, 1e-4 + _ATOL32),
       DT.bFloat16: (1.6e-2, 1e-3 + _ATOL32)}


# ---------------------------------------------------------------------------- layouts
def _data_c(a, layout):  # user layout -> NCHW
    return C.nhwc_to_nchw(a) if layout == L.NHWC else np.asarray(a)


def _data_u(a, layout):  # NCHW -> user layout
    return C.nchw_to_nhwc(a) if layout == L.NHWC else a


def _w_c(a, layout):  # user layout -> OIHW
    return C.hwio_to_oihw(a) if layout == L.HWIO else np.asarray(a)


def _w_u(a, layout):  # OIHW -> user layout
    return C.oihw_to_hwio(a) if layout == L.HWIO else a


def _shape_c(shp, layout, weights=False):
    """A user-layout shape in canonical order (NCHW / OIHW)."""
    s = list(shp)
    if weights:
        return [s[3], s[2], s[0], s[1]] if layout == L.HWIO else s
    return [s[0], s[3], s[1], s[2]] if layout == L.NHWC else s


def _shape_u(shp, layout, weights=False):
    n, c, h, w = shp
    if weights:
        return [h, w, c, n] if layout == L.HWIO else [n, c, h, w]
    return [n, h, w, c] if layout == L.NHWC else [n, c, h, w]


def _resolve(d: mg.Convolution2DOpDescriptor, in_hw, k_hw):
    """((Ho, Wo), (top, bottom, left, right)) by the oracle (SPEC 2.4)."""
    return C.resolve_pads(d.paddingStyle.name, in_hw, k_hw, (d.strideInY, d.strideInX),
                          (d.dilationRateInY, d.dilationRateInX),
                          (d.paddingTop, d.paddingBottom, d.paddingLeft, d.paddingRight))


def _pad(x, pads):
    pt, pb, pl, pr = pads
    return np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))


def _kw(d):
    return dict(stride=(d.strideInY, d.strideInX), dilation=(d.dilationRateInY,
                                                            d.dilationRateInX),
                pads=(0, 0, 0, 0), groups=d.groups)


# ---------------------------------------------------------------------------- references
def _conv_ref(x, w, *, desc, **_):
    d = desc
    xc, wc = f64(_data_c(x, d.dataLayout)), f64(_w_c(w, d.weightsLayout))
    (ho, wo), pads = _resolve(d, xc.shape[2:], wc.shape[2:])
    n, o = xc.shape[0], wc.shape[0]
    if ho == 0 or wo == 0:  # a SAME-padded empty input (SPEC 2.8)
        return _data_u(np.zeros((n, o, ho, wo)), d.dataLayout)
    return _data_u(C.conv2d_ref(_pad(xc, pads), wc, **_kw(d)), d.dataLayout)


def _data_grad_ref(dy, w, *rest, desc, shape, **_):
    d = desc
    dyc, wc = f64(_data_c(dy, d.dataLayout)), f64(_w_c(w, d.weightsLayout))
    xs = _shape_c(shape, d.dataLayout)
    (ho, wo), pads = _resolve(d, xs[2:], wc.shape[2:])
    if ho == 0 or wo == 0:
        return _data_u(np.zeros(xs), d.dataLayout)
    pt, pb, pl, pr = pads
    padded = [xs[0], xs[1], xs[2] + pt + pb, xs[3] + pl + pr]
    dxp = C.conv2d_data_grad_ref(dyc, wc, padded, **_kw(d))
    return _data_u(dxp[:, :, pt:pt + xs[2], pl:pl + xs[3]], d.dataLayout)


def _weights_grad_ref(dy, x, *rest, desc, shape, **_):
    d = desc
    dyc, xc = f64(_data_c(dy, d.dataLayout)), f64(_data_c(x, d.dataLayout))
    ws = _shape_c(shape, d.weightsLayout, weights=True)
    (ho, wo), pads = _resolve(d, xc.shape[2:], ws[2:])
    if ho == 0 or wo == 0:
        return _w_u(np.zeros(ws), d.weightsLayout)
    return _w_u(C.conv2d_weights_grad_ref(dyc, _pad(xc, pads), ws, **_kw(d)), d.weightsLayout)


# torch float64 references (torch.nn.functional.conv2d on the explicitly zero-padded source;
# the gradient ops as autograd of it with create_graph, so that their own gradient rules are
# checked against torch autograd too)
def _t_canon(x, layout, weights=False):
    # contiguous: torch's float64 CPU convolution backward ("slow_conv2d") refuses a
    # non-contiguous weight gradient
    if weights:
        return (x.permute(3, 2, 0, 1) if layout == L.HWIO else x).contiguous()
    return (x.permute(0, 3, 1, 2) if layout == L.NHWC else x).contiguous()


def _t_user(y, layout, weights=False):
    if weights:
        return y.permute(2, 3, 1, 0) if layout == L.HWIO else y
    return y.permute(0, 2, 3, 1) if layout == L.NHWC else y


def _t_conv(xc, wc, d, pads):
    import torch.nn.functional as F

    pt, pb, pl, pr = pads
    return F.conv2d(F.pad(xc, (pl, pr, pt, pb)), wc, stride=(d.strideInY, d.strideInX),
                    dilation=(d.dilationRateInY, d.dilationRateInX), groups=d.groups)


def _t_zeros_like_result(shape, *ts):
    """Zeros of `shape` that depend on `ts` (gradient 0): the value of an op on empty operands
    (torch's conv2d refuses zero channels)."""
    import torch

    z = torch.zeros(shape, dtype=torch.float64)
    for t in ts:
        z = z + 0.0 * t.sum()
    return z


def _conv_torch(x, w, *, desc, **_):
    d = desc
    xc, wc = _t_canon(x, d.dataLayout), _t_canon(w, d.weightsLayout, True)
    (ho, wo), pads = _resolve(d, tuple(xc.shape[2:]), tuple(wc.shape[2:]))
    shp = (xc.shape[0], wc.shape[0], ho, wo)
    if 0 in shp or 0 in xc.shape or 0 in wc.shape:
        return _t_user(_t_zeros_like_result(shp, x, w), d.dataLayout)
    return _t_user(_t_conv(xc, wc, d, pads), d.dataLayout)


def _data_grad_torch(dy, w, *rest, desc, shape, **_):
    import torch

    d = desc
    dyc, wc = _t_canon(dy, d.dataLayout), _t_canon(w, d.weightsLayout, True)
    xs = _shape_c(shape, d.dataLayout)
    (ho, wo), pads = _resolve(d, xs[2:], tuple(wc.shape[2:]))
    if 0 in xs or 0 in dyc.shape or 0 in wc.shape:
        return _t_user(_t_zeros_like_result(xs, dy, w), d.dataLayout)
    x0 = torch.zeros(xs, dtype=torch.float64, requires_grad=True)
    (dx,) = torch.autograd.grad(_t_conv(x0, wc, d, pads), x0, dyc, create_graph=True)
    return _t_user(dx, d.dataLayout)


def _weights_grad_torch(dy, x, *rest, desc, shape, **_):
    import torch

    d = desc
    dyc, xc = _t_canon(dy, d.dataLayout), _t_canon(x, d.dataLayout)
    ws = _shape_c(shape, d.weightsLayout, weights=True)
    (ho, wo), pads = _resolve(d, tuple(xc.shape[2:]), ws[2:])
    if 0 in ws or 0 in dyc.shape or 0 in xc.shape:
        return _t_user(_t_zeros_like_result(ws, dy, x), d.weightsLayout, True)
    w0 = torch.zeros(ws, dtype=torch.float64, requires_grad=True)
    (dw,) = torch.autograd.grad(_t_conv(xc, w0, d, pads), w0, dyc, create_graph=True)
    return _t_user(dw, d.weightsLayout, True)


# ---------------------------------------------------------------------------- builders
def _build_conv(g, x, w, *, desc, **_):
    return g.convolution2D(x, weights=w, descriptor=desc)


def _shape_arg(g, rest, form, shape, dtype):
    """The outputShape keyword(s) for the sample's form of the shape argument."""
    if form == "list":
        return {"outputShape": list(shape)}
    if form == "const":
        return {"outputShapeTensor": g.constant(np.asarray(shape, dtype.numpy_dtype),
                                                dataType=dtype)}
    (t,) = rest
    return {"outputShapeTensor" if form == "fed-kw" else "outputShape": t}


def _static(g, y, form, shape):
    """A fed shape leaves the result's build-time shape [-1, -1, -1, -1]: reshaped to the
    sample's static shape, it suits every version of the harness's shape checks (the values
    and their order are what the reference checks)."""
    return g.reshape(y, shape=list(shape)) if form.startswith("fed") else y


def _build_data_grad(g, dy, w, *rest, desc, shape, form, shape_dtype=DT.int32):
    y = g.convolution2DDataGradient(dy, weights=w, forwardConvolutionDescriptor=desc,
                                    **_shape_arg(g, rest, form, shape, shape_dtype))
    assert not form.startswith("fed") or y.shape == [-1] * 4, y.shape
    return _static(g, y, form, shape)


def _build_weights_grad(g, dy, x, *rest, desc, shape, form, shape_dtype=DT.int32):
    y = g.convolution2DWeightsGradient(dy, source=x, forwardConvolutionDescriptor=desc,
                                       **_shape_arg(g, rest, form, shape, shape_dtype))
    assert not form.startswith("fed") or y.shape == [-1] * 4, y.shape
    return _static(g, y, form, shape)


# ---------------------------------------------------------------------------- samples
def _draw(rng, k, pick, small_out=False, fed_side=None):
    """One valid configuration: (descriptor, canonical x shape, canonical w shape).
    `small_out` keeps N*Ho*Wo small (the weights gradient's dot products); `fed_side`, if
    given, forces the canonical shape of that operand ("x" or "w") to [s, s, s, s]."""
    dl, wl = pick(k, "layouts", LAYOUTS)
    style = pick(k, "styles", STYLES)
    gk = pick(k, "group_kinds", GROUP_KINDS)
    for _ in range(1000):
        sy, sx = (int(v) for v in rng.choice([1, 1, 2, 3], 2))
        ry, rx = (int(v) for v in rng.choice([1, 1, 2, 3], 2))
        pads = [int(v) for v in rng.integers(0, 4, 4)] if style == P.explicit else [0] * 4
        if style != P.explicit and rng.random() < 0.5:  # ignored by the other styles
            pads = [int(v) for v in rng.integers(0, 4, 4)]
        kh, kw = _size(rng, 1, 3), _size(rng, 1, 3)
        n = _size(rng, 0, 2 if small_out else 3)
        if gk == "g1":
            groups, cg, og = 1, _size(rng, 0, 3), _size(rng, 0, 3)
        elif gk == "grouped":
            groups, cg, og = int(rng.integers(2, 4)), _size(rng, 0, 2), _size(rng, 0, 2)
        else:  # depthwise: groups == C, one input channel per group, multiplier og
            groups, cg, og = _size(rng, 1, 3), 1, _size(rng, 0, 2)
        c, o = groups * cg, groups * og
        h, w = _size(rng, 0, 4 if small_out else 6), _size(rng, 0, 4 if small_out else 6)
        if fed_side is not None:  # that operand's canonical shape is [s, s, s, s]
            s = int(rng.integers(1, 4))
            if fed_side == "x":
                n = h = w = s
                groups, cg = (1, s) if gk == "g1" else (s, 1)
            else:
                kh = kw = cg = s
                groups, og = 1, s  # O == Cg == s: ungrouped
            c, o = groups * cg, groups * og
        d = mg.Convolution2DOpDescriptor(
            strideInX=sx, strideInY=sy, dilationRateInX=rx, dilationRateInY=ry,
            groups=groups, paddingLeft=pads[2], paddingRight=pads[3], paddingTop=pads[0],
            paddingBottom=pads[1], paddingStyle=style, dataLayout=dl, weightsLayout=wl)
        try:
            (ho, wo), _ = _resolve(d, (h, w), (kh, kw))
        except ValueError:  # the padded source is smaller than the dilated kernel
            continue
        if small_out and n * ho * wo > 32:
            continue
        if n * c * h * w > 300 or n * o * ho * wo > 300:
            continue
        return d, [n, c, h, w], [o, cg, kh, kw], [n, o, ho, wo]
    raise RuntimeError("no configuration drawn")


def _vals(rng, shp, dt):
    return arr(rng, shp, dt, -1.0, 1.0)


def _conv_samples(rng, dt):
    pick = _cycle(rng)
    for k in range(n_samples()):
        d, xs, ws, _ = _draw(rng, k, pick)
        yield Sample([_vals(rng, _shape_u(xs, d.dataLayout), dt),
                      _vals(rng, _shape_u(ws, d.weightsLayout, True), dt)],
                     {"desc": d}, desc=f"{d.paddingStyle.name} g={d.groups}")


def _grad_samples(which):
    def gen(rng, dt):
        pick = _cycle(rng)
        for k in range(n_samples()):
            form = pick(k, "shape_forms", SHAPE_FORMS)
            sdt = pick(k, "shape_dtype", (DT.int32, DT.int64, DT.int64, DT.int32))
            fed = form.startswith("fed")
            side = ("x" if which == "data" else "w") if fed else None
            d, xs, ws, ys = _draw(rng, k, pick, small_out=which == "weights", fed_side=side)
            dy = _vals(rng, _shape_u(ys, d.dataLayout), dt)
            if which == "data":
                shape = _shape_u(xs, d.dataLayout)
                inputs = [dy, _vals(rng, _shape_u(ws, d.weightsLayout, True), dt)]
            else:
                shape = _shape_u(ws, d.weightsLayout, True)
                inputs = [dy, _vals(rng, _shape_u(xs, d.dataLayout), dt)]
            if fed:
                inputs.append(np.asarray(shape, sdt.numpy_dtype))
            # a fed shape: the result's shape is unknown until run time (see the module
            # docstring); the other forms check the gradient
            yield Sample(inputs, {"desc": d, "shape": shape, "form": form,
                                  "shape_dtype": sdt}, diff=() if fed else None,
                         desc=f"{d.paddingStyle.name} g={d.groups} outputShape {form}")
    return gen


# ---------------------------------------------------------------------------- errors
def _d(**kw):
    return mg.Convolution2DOpDescriptor(**kw)


def _f32(*shape):
    return np.ones(shape, np.float32)


def _conv_errors(rng):
    E = mg
    ok = _d()
    yield ErrorInput(Sample([_f32(1, 2, 4, 4), np.ones((3, 2, 3, 3), np.float16)], {"desc": ok}),
                     E.DataTypeError, "weights")
    yield ErrorInput(Sample([np.ones((1, 2, 4, 4), np.int32), np.ones((3, 2, 3, 3), np.int32)],
                            {"desc": ok}), E.DataTypeError, "source")
    yield ErrorInput(Sample([_f32(2, 4, 4), _f32(3, 2, 3, 3)], {"desc": ok}), E.ShapeError,
                     "source")
    yield ErrorInput(Sample([_f32(1, 2, 4, 4), _f32(3, 2, 3)], {"desc": ok}), E.ShapeError,
                     "weights")
    # C != groups * Cg, O not divisible by groups
    yield ErrorInput(Sample([_f32(1, 4, 4, 4), _f32(4, 3, 3, 3)], {"desc": _d(groups=2)}),
                     E.ShapeError, "weights")
    yield ErrorInput(Sample([_f32(1, 4, 4, 4), _f32(3, 2, 3, 3)], {"desc": _d(groups=2)}),
                     E.ShapeError, "weights")
    yield ErrorInput(Sample([_f32(1, 3, 4, 4), _f32(4, 1, 3, 3)], {"desc": _d(groups=2)}),
                     E.ShapeError, "source")
    # a kernel of spatial size 0; a padded source smaller than the dilated kernel
    yield ErrorInput(Sample([_f32(1, 2, 4, 4), _f32(3, 2, 0, 3)], {"desc": ok}), E.ShapeError,
                     "weights")
    yield ErrorInput(Sample([_f32(1, 2, 4, 4), _f32(3, 2, 3, 3)],
                            {"desc": _d(dilationRateInY=2, paddingStyle=P.TF_VALID)}),
                     E.ShapeError, "source")
    yield ErrorInput(Sample([_f32(1, 2, 1, 4), _f32(3, 2, 3, 3)],
                            {"desc": _d(paddingTop=1, paddingBottom=0)}), E.ShapeError,
                     "source")
    # NHWC source checked in its own layout: channels on the last axis
    yield ErrorInput(Sample([_f32(1, 4, 4, 2), _f32(3, 3, 3, 3)],
                            {"desc": _d(dataLayout=L.NHWC)}), E.ShapeError, "weights")
    for prop, val in (("strideInX", 0), ("strideInY", -1), ("dilationRateInX", 0),
                      ("dilationRateInY", 0), ("groups", 0), ("paddingLeft", -1),
                      ("paddingBottom", -2), ("paddingStyle", P.explicitOffset),
                      ("dataLayout", L.OIHW), ("dataLayout", L.CHW),
                      ("weightsLayout", L.NCHW), ("weightsLayout", L.NHWC)):
        yield ErrorInput(Sample([_f32(1, 2, 4, 4), _f32(3, 2, 3, 3)], {"desc": _d(**{prop: val})}),
                         E.DescriptorError, f"descriptor.{prop}")


def _grad_errors(which):
    """Error inputs of the two gradient ops; `which` is "data" or "weights"."""
    data = which == "data"
    other = "weights" if data else "source"
    dargs = "forwardConvolutionDescriptor"

    def s(dy, b, shape, form="list", desc=None, extra=(), sdt=DT.int32):
        return Sample([dy, b, *extra], {"desc": desc or _d(), "shape": shape, "form": form,
                                        "shape_dtype": sdt})

    def gen(rng):
        E = mg
        # forward: x [1, 2, 5, 5], w [3, 2, 3, 3], valid (no padding) -> y [1, 3, 3, 3]
        dy, b = _f32(1, 3, 3, 3), (_f32(3, 2, 3, 3) if data else _f32(1, 2, 5, 5))
        good = [1, 2, 5, 5] if data else [3, 2, 3, 3]
        bad_spatial = [1, 2, 7, 5] if data else [3, 2, 2, 3]
        yield ErrorInput(s(dy, b, bad_spatial), E.ShapeError, "outputShape")
        yield ErrorInput(s(dy, b, bad_spatial, "const"), E.ShapeError, "outputShape")
        # a fed shape tensor: the check happens when the value arrives (run time)
        yield ErrorInput(s(dy, b, good, "fed", extra=[np.asarray(bad_spatial, np.int32)]),
                         E.ShapeError, "outputShape")
        yield ErrorInput(s(dy, b, good, "fed-kw",
                           extra=[np.asarray(bad_spatial, np.int64)], sdt=DT.int64),
                         E.ShapeError, "outputShape")
        yield ErrorInput(s(dy, b, good[:3]), E.ShapeError, "outputShape")
        yield ErrorInput(s(dy, b, good, "fed", extra=[np.asarray(good[:3], np.int32)]),
                         E.ShapeError, "outputShape")
        yield ErrorInput(s(dy, b, good, "fed", extra=[np.asarray(good, np.float32)]),
                         E.DataTypeError, "outputShape")
        yield ErrorInput(s(dy, b, [*good[:3], -1]), E.ShapeError, "outputShape")
        # batch / channel mismatches between the incoming gradient and the other operands
        if data:
            yield ErrorInput(s(dy, b, [2, 2, 5, 5]), E.ShapeError, "outputShape")
            yield ErrorInput(s(_f32(1, 4, 3, 3), b, good), E.ShapeError, "incomingGradient")
            yield ErrorInput(s(dy, b, [1, 3, 5, 5]), E.ShapeError, "outputShape")
        else:
            yield ErrorInput(s(_f32(2, 3, 3, 3), b, good), E.ShapeError, "incomingGradient")
            yield ErrorInput(s(dy, b, [4, 2, 3, 3]), E.ShapeError, "outputShape")
            yield ErrorInput(s(dy, b, [3, 3, 3, 3]), E.ShapeError, "outputShape")
        yield ErrorInput(s(np.ones((1, 3, 3, 3), np.float16), b, good), E.DataTypeError,
                         other)
        yield ErrorInput(s(_f32(3, 3, 3), b, good), E.ShapeError, "incomingGradient")
        yield ErrorInput(s(dy, b, good, desc=_d(paddingStyle=P.explicitOffset)),
                         E.DescriptorError, f"{dargs}.paddingStyle")
        yield ErrorInput(s(dy, b, good, desc=_d(groups=0)), E.DescriptorError,
                         f"{dargs}.groups")
        yield ErrorInput(s(dy, b, good, desc=_d(weightsLayout=L.NHWC)), E.DescriptorError,
                         f"{dargs}.weightsLayout")
    return gen


_NOTES = ("float64 loops of tests/oracles/conv_f64.py on the zero-padded source; every "
          "padding style, both layouts of data and weights, strides, dilations, groups and "
          "depthwise; shapes with 0 and 1 on every axis")

add(OpInfo("convolution2D", build=_build_conv, ref=_conv_ref, samples=_conv_samples,
           dtypes=FLOAT, differentiable=(0, 1), torch_ref=_conv_torch, errors=_conv_errors,
           tol=TOL, nan_inputs=(0,),  # a NaN weight meets padding zeros: unspecified
           notes=_NOTES))
add(OpInfo("convolution2DDataGradient", build=_build_data_grad, ref=_data_grad_ref,
           samples=_grad_samples("data"), dtypes=FLOAT, differentiable=(0, 1),
           torch_ref=_data_grad_torch, errors=_grad_errors("data"), tol=TOL,
           nan_inputs=(0,),  # a NaN weight meets the zeros around dy: unspecified
           notes=_NOTES + "; outputShape as a list, a constant and a fed shape tensor"))
add(OpInfo("convolution2DWeightsGradient", build=_build_weights_grad, ref=_weights_grad_ref,
           samples=_grad_samples("weights"), dtypes=FLOAT, differentiable=(0, 1),
           torch_ref=_weights_grad_torch, errors=_grad_errors("weights"), tol=TOL,
           nan_inputs=(1,),  # a NaN in dy meets padding zeros: unspecified
           notes=_NOTES + "; outputShape as a list, a constant and a fed shape tensor"))
