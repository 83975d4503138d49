"""Entries of ops/conv_extra.py (issue 18): convolution3D, depthwiseConvolution2D,
depthwiseConvolution3D (each with its data and weights gradient) and the transposed 2-D family.

References are torch float64 (torch.nn.functional.conv2d / conv3d on the explicitly zero-padded
source, the paddings resolved by the independent oracle tests/oracles/conv_f64.py; the gradient
ops as torch autograd of that forward with create_graph, so that their own gradient rules are
checked against torch autograd too); `ref` is the same computation returned as NumPy. The
layouts are undone in the test (permutations written from the layout names): NCDHW / NDHWC
data and OIDHW / DHWIO weights; depthwise 2-D weights [M, C, kH, kW] (OIHW) or [kH, kW, C, M]
(HWIO) with output channel c*M + m; depthwise 3-D sources of rank 4 and 5 with every
channelDimensionIndex. The transposed ops use the 2-D entries' float64 loops and torch
references with the roles renamed (SPEC 2.9). Samples cycle through every padding style,
layout and option, with 0 and 1 on every axis; the gradient ops take outputShape as a list,
a constant tensor and a fed tensor where the method has a tensor variant (fed shapes use equal
sizes: see opdb_entries/convolution.py's docstring).
"""

from __future__ import annotations

import numpy as np

import mpsgraph as mg
from opdb import DT, FLOAT, ErrorInput, OpInfo, Sample, add, arr, n_samples
from oracles import conv_f64 as C

from . import convolution as C2
from ._common import cycle as _cycle
from ._common import size as _size

P = mg.PaddingStyle
L = mg.TensorNamedDataLayout
STYLES = (P.explicit, P.TF_VALID, P.TF_SAME, P.ONNX_SAME_LOWER)
TOL = C2.TOL


def _torch():
    import torch

    return torch


def _inv(perm):
    return [perm.index(i) for i in range(len(perm))]


# ---------------------------------------------------------------------------- geometry
class _Geo:
    """One sample's geometry: how user shapes map to canonical [B, C, *S] / [O, Cg, *K]."""

    def __init__(self, kind, d, xrank=None):
        self.kind, self.d = kind, d
        self.xrank = xrank if xrank is not None else (5 if kind == "c3" else 4)

    # data
    def xperm(self):
        if self.kind == "c3":
            return [0, 1, 2, 3, 4] if self.d.dataLayout == L.NCDHW else [0, 4, 1, 2, 3]
        if self.kind == "d2":
            return [0, 1, 2, 3] if self.d.dataLayout == L.NCHW else [0, 3, 1, 2]
        r = self.xrank
        ci = r + self.d.channelDimensionIndex
        return list(range(r - 4)) + [ci] + [i for i in range(r - 4, r) if i != ci]

    def wperm(self):
        if self.kind == "c3":
            return [0, 1, 2, 3, 4] if self.d.weightsLayout == L.OIDHW else [4, 3, 0, 1, 2]
        if self.kind == "d2":  # -> [C, M, kH, kW]
            return [1, 0, 2, 3] if self.d.weightsLayout == L.OIHW else [2, 3, 0, 1]
        ci = 4 + self.d.channelDimensionIndex
        return [ci] + [i for i in range(4) if i != ci]

    def spatial(self):
        d = self.d
        if self.kind == "c3":
            return [(d.strideInZ, d.dilationRateInZ, d.paddingFront, d.paddingBack),
                    (d.strideInY, d.dilationRateInY, d.paddingTop, d.paddingBottom),
                    (d.strideInX, d.dilationRateInX, d.paddingLeft, d.paddingRight)]
        if self.kind == "d2":
            return [(d.strideInY, d.dilationRateInY, d.paddingTop, d.paddingBottom),
                    (d.strideInX, d.dilationRateInX, d.paddingLeft, d.paddingRight)]
        pv = d.paddingValues
        return [(d.strides[i], d.dilationRates[i], pv[2 * i], pv[2 * i + 1]) for i in range(3)]

    def resolve(self, s_in, k):
        """(So, pads) by the oracle (ValueError when the padded source is too small)."""
        so, pads = [], []
        for (s, r, pb, pe), n, kk in zip(self.spatial(), s_in, k):
            o, b, e = C.resolve_axis(self.d.paddingStyle.name, n, kk, s, r, pb, pe)
            so.append(o)
            pads.append((b, e))
        return so, pads

    # canonical <-> user (torch tensors)
    def x_c(self, x):
        t = x.permute(*self.xperm())
        if self.kind == "dw3":
            lead = int(np.prod(t.shape[:self.xrank - 4]))
            return t.reshape(lead, *t.shape[self.xrank - 4:])
        return t

    def x_u(self, yc, like_shape):
        perm = self.xperm()
        if self.kind == "dw3":
            lead = [like_shape[i] for i in perm[:self.xrank - 4]]
            yc = yc.reshape(*lead, *yc.shape[1:])
        return yc.permute(*_inv(perm))

    def user_x_shape(self, cshape, like_shape=None):
        """A canonical data shape as the user's (dw3: the leading axes of like_shape)."""
        perm = self.xperm()
        if self.kind == "dw3":
            lead = [like_shape[i] for i in perm[:self.xrank - 4]]
            permuted = lead + list(cshape[1:])
        else:
            permuted = list(cshape)
        out = [0] * len(perm)
        for k, i in enumerate(perm):
            out[i] = permuted[k]
        return out

    def w_c(self, w):
        t = w.permute(*self.wperm())
        if self.kind == "d2":
            c, m = t.shape[:2]
            return t.reshape(c * m, 1, *t.shape[2:])
        if self.kind == "dw3":
            return t.reshape(t.shape[0], 1, *t.shape[1:])
        return t

    def w_u(self, wc, user_shape):
        perm = self.wperm()
        permuted = [user_shape[i] for i in perm]
        return wc.reshape(*permuted).permute(*_inv(perm))

    def groups(self, c):
        return self.d.groups if self.kind == "c3" else c

    def conv(self, xc, wc, pads):
        """torch float64 convolution of canonical operands, zero-padded explicitly."""
        import torch.nn.functional as F

        padarg = []
        for b, e in reversed(pads):
            padarg += [b, e]
        fn = F.conv2d if len(pads) == 2 else F.conv3d
        return fn(F.pad(xc, padarg), wc, stride=[s for s, _, _, _ in self.spatial()],
                  dilation=[r for _, r, _, _ in self.spatial()], groups=self.groups(xc.shape[1]))


def _zeros_dep(shape, *ts):
    torch = _torch()
    z = torch.zeros(tuple(shape), dtype=torch.float64)
    for t in ts:
        z = z + 0.0 * t.sum()
    return z


def _fwd_t(geo):
    def ref(x, w, **_):
        xc, wc = geo.x_c(x), geo.w_c(w)
        so, pads = geo.resolve(xc.shape[2:], wc.shape[2:])
        yc_shape = [xc.shape[0], wc.shape[0], *so]
        if 0 in yc_shape or 0 in xc.shape or 0 in wc.shape:
            return geo.x_u(_zeros_dep(yc_shape, x, w), list(x.shape))
        return geo.x_u(geo.conv(xc, wc, pads), list(x.shape))
    return ref


def _dgrad_t(geo):
    def ref(dy, w, *rest, shape, **_):
        torch = _torch()
        x0 = torch.zeros(tuple(shape), dtype=torch.float64, requires_grad=True)
        y = _fwd_t(geo)(x0, w)
        if y.numel() == 0 or x0.numel() == 0 or w.numel() == 0:
            return _zeros_dep(shape, dy, w)
        (dx,) = torch.autograd.grad(y, x0, dy, create_graph=True)
        return dx
    return ref


def _wgrad_t(geo):
    def ref(dy, x, *rest, shape, **_):
        torch = _torch()
        w0 = torch.zeros(tuple(shape), dtype=torch.float64, requires_grad=True)
        y = _fwd_t(geo)(x, w0)
        if y.numel() == 0 or x.numel() == 0 or w0.numel() == 0:
            return _zeros_dep(shape, dy, x)
        (dw,) = torch.autograd.grad(y, w0, dy, create_graph=True)
        return dw
    return ref


def _np_ref(torch_ref_of):
    def ref(*arrays, desc, geo, **kw):
        torch = _torch()
        ts = [torch.from_numpy(np.asarray(a, np.float64)) if np.asarray(a).dtype.kind != "i"
              else torch.from_numpy(np.asarray(a)) for a in arrays]
        return torch_ref_of(geo)(*ts, **kw).detach().numpy()
    return ref


def _t_ref(torch_ref_of):
    def ref(*ts, desc, geo, **kw):
        return torch_ref_of(geo)(*ts, **kw)
    return ref


# ---------------------------------------------------------------------------- samples
def _desc(kind, rng, k, pick):
    style = pick(k, "styles", STYLES)
    pads = [int(v) for v in rng.integers(0, 3, 6)]
    st = [int(v) for v in rng.choice([1, 1, 2, 3], 3)]
    dl = [int(v) for v in rng.choice([1, 1, 2], 3)]
    if kind == "c3":
        dlay, wlay = pick(k, "layouts3", ((L.NCDHW, L.OIDHW), (L.NDHWC, L.DHWIO),
                                          (L.NCDHW, L.DHWIO), (L.NDHWC, L.OIDHW)))
        return mg.Convolution3DOpDescriptor(
            strideInX=st[2], strideInY=st[1], strideInZ=st[0], dilationRateInX=dl[2],
            dilationRateInY=dl[1], dilationRateInZ=dl[0], groups=1, paddingLeft=pads[4],
            paddingRight=pads[5], paddingTop=pads[2], paddingBottom=pads[3],
            paddingFront=pads[0], paddingBack=pads[1], paddingStyle=style, dataLayout=dlay,
            weightsLayout=wlay)
    if kind == "d2":
        dlay, wlay = pick(k, "layouts2", ((L.NCHW, L.OIHW), (L.NHWC, L.HWIO),
                                          (L.NCHW, L.HWIO), (L.NHWC, L.OIHW)))
        return mg.DepthwiseConvolution2DOpDescriptor(
            strideInX=st[2], strideInY=st[1], dilationRateInX=dl[2], dilationRateInY=dl[1],
            paddingLeft=pads[4], paddingRight=pads[5], paddingTop=pads[2],
            paddingBottom=pads[3], paddingStyle=style, dataLayout=dlay, weightsLayout=wlay)
    return mg.DepthwiseConvolution3DOpDescriptor(
        strides=st, dilationRates=dl, paddingValues=pads, paddingStyle=style,
        channelDimensionIndex=pick(k, "channel", (-4, -3, -2, -1)))


def _draw(kind, rng, k, pick, small=False, fed=None):
    """(desc, geo, x user shape, w user shape, y user shape)."""
    for _ in range(2000):
        d = _desc(kind, rng, k, pick)
        xrank = pick(k, "xrank", (4, 5)) if kind == "dw3" else None
        geo = _Geo(kind, d, xrank)
        nd = 2 if kind == "d2" else 3
        s_in = [_size(rng, 0, 4 if small else 5) for _ in range(nd)]
        kk = [_size(rng, 1, 3) for _ in range(nd)]
        n = _size(rng, 0, 2)
        if kind == "c3":
            g = pick(k, "groups", (1, 2, 1, 3))
            cg, og = _size(rng, 0, 2), _size(rng, 0, 2)
            c, o = g * cg, g * og
            d.groups = g
            if fed is not None:
                s = int(rng.integers(1, 3))
                if fed == "x":
                    n, s_in, c, d.groups, cg = s, [s] * 3, s, 1, s
                    o = og = _size(rng, 0, 2)
                else:
                    kk, cg, o, d.groups = [s] * 3, s, s, 1
                    c = s
            xc, wc = [n, c, *s_in], [o, cg, *kk]
        else:
            c, m = _size(rng, 0, 3), (_size(rng, 0, 2) if kind == "d2" else 1)
            xc, wc = [n, c, *s_in], [c * m, 1, *kk]
        try:
            so, _ = geo.resolve(s_in, kk)
        except ValueError:
            continue
        yc = [n, wc[0], *so]
        if np.prod(xc) > 400 or np.prod(yc) > 400 or (small and n * np.prod(so) > 40):
            continue
        if kind == "dw3":
            lead = [n] if geo.xrank == 5 else []
            if geo.xrank == 4:
                xc[0] = yc[0] = 1
                n = 1
            permuted = lead + xc[1:]
            xs = [0] * geo.xrank
            for j, i in enumerate(geo.xperm()):
                xs[i] = permuted[j]
            ys = geo.user_x_shape(yc, xs)
            wperm = geo.wperm()
            wp = [c, *kk]
            ws = [0] * 4
            for j, i in enumerate(wperm):
                ws[i] = wp[j]
        else:
            xs = geo.user_x_shape(xc)
            ys = geo.user_x_shape(yc)
            if kind == "d2":
                wp = [c, m, *kk]
            else:
                wp = wc
            ws = [0] * len(wp)
            for j, i in enumerate(geo.wperm()):
                ws[i] = wp[j]
        return d, geo, xs, ws, ys
    raise RuntimeError("no configuration drawn")


def _vals(rng, shp, dt):
    return arr(rng, shp, dt, -1.0, 1.0)


def _fwd_samples(kind):
    def gen(rng, dt):
        pick = _cycle(rng)
        for k in range(n_samples()):
            d, geo, xs, ws, _ = _draw(kind, rng, k, pick)
            yield Sample([_vals(rng, xs, dt), _vals(rng, ws, dt)], {"desc": d, "geo": geo},
                         desc=f"{d.paddingStyle.name}")
    return gen


FORMS = ("list", "const", "fed", "fed-kw")


def _grad_samples(kind, which):
    def gen(rng, dt):
        pick = _cycle(rng)
        for k in range(n_samples()):
            form = pick(k, "forms", FORMS) if kind == "c3" else "list"
            fed = form.startswith("fed")
            side = ("x" if which == "data" else "w") if fed else None
            d, geo, xs, ws, ys = _draw(kind, rng, k, pick, small=which == "weights", fed=side)
            dy = _vals(rng, ys, dt)
            if which == "data":
                shape, inputs = xs, [dy, _vals(rng, ws, dt)]
            else:
                shape, inputs = ws, [dy, _vals(rng, xs, dt)]
            if fed:
                inputs.append(np.asarray(shape, np.int32))
            yield Sample(inputs, {"desc": d, "geo": geo, "shape": shape, "form": form},
                         diff=() if fed else None, desc=f"{d.paddingStyle.name} {form}")
    return gen


# ---------------------------------------------------------------------------- builders
_METHOD = {"c3": "convolution3D", "d2": "depthwiseConvolution2D",
           "dw3": "depthwiseConvolution3D"}


def _shape_kw(g, rest, form, shape):
    if form == "list":
        return {"outputShape": list(shape)}
    if form == "const":
        return {"outputShapeTensor": g.constant(np.asarray(shape, np.int64),
                                                dataType=DT.int64)}
    (t,) = rest
    return {"outputShapeTensor" if form == "fed-kw" else "outputShape": t}


def _build_fwd(kind):
    def build(g, x, w, *, desc, **_):
        return getattr(g, _METHOD[kind])(x, weights=w, descriptor=desc)
    return build


def _build_grad(kind, which):
    name = _METHOD[kind] + ("DataGradient" if which == "data" else "WeightsGradient")
    dkw = "forwardConvolutionDescriptor" if kind == "c3" else "descriptor"
    other = "weights" if which == "data" else "source"

    def build(g, dy, b, *rest, desc, shape, form, **_):
        y = getattr(g, name)(dy, **{other: b, dkw: desc}, **_shape_kw(g, rest, form, shape))
        if form.startswith("fed"):
            assert y.shape == [-1] * len(shape), y.shape
            y = g.reshape(y, shape=list(shape))
        return y
    return build


# ---------------------------------------------------------------------------- errors
def _f32(*s):
    return np.ones(s, np.float32)


def _errors(kind, which):
    def gen(rng):
        E = mg
        if kind == "c3":
            d = mg.Convolution3DOpDescriptor
            x, w, dy = _f32(1, 2, 4, 4, 4), _f32(3, 2, 3, 3, 3), _f32(1, 3, 2, 2, 2)
            bad_desc = [("strideInZ", 0), ("groups", 0), ("paddingFront", -1),
                        ("paddingStyle", P.explicitOffset), ("dataLayout", L.NCHW),
                        ("weightsLayout", L.OIHW)]
            dkw = "forwardConvolutionDescriptor"
        elif kind == "d2":
            d = mg.DepthwiseConvolution2DOpDescriptor
            x, w, dy = _f32(1, 2, 4, 4), _f32(3, 2, 3, 3), _f32(1, 6, 2, 2)
            bad_desc = [("strideInY", 0), ("dilationRateInX", 0), ("paddingLeft", -1),
                        ("paddingStyle", P.explicitOffset), ("dataLayout", L.NCDHW),
                        ("weightsLayout", L.NCHW)]
            dkw = "descriptor"
        else:
            d = mg.DepthwiseConvolution3DOpDescriptor
            x, w, dy = _f32(1, 2, 4, 4, 4), _f32(2, 3, 3, 3), _f32(1, 2, 2, 2, 2)
            bad_desc = [("strides", [1, 1]), ("dilationRates", [0, 1, 1]),
                        ("paddingValues", [0] * 4), ("paddingStyle", P.explicitOffset),
                        ("channelDimensionIndex", -5), ("channelDimensionIndex", 0)]
            dkw = "descriptor"
        if which == "fwd":
            def s(a, b, desc=None):
                return Sample([a, b], {"desc": desc or d(), "geo": None})
            yield ErrorInput(s(x, w.astype(np.float16)), E.DataTypeError, "weights")
            yield ErrorInput(s(x.astype(np.int32), w.astype(np.int32)), E.DataTypeError,
                             "source")
            yield ErrorInput(s(x[0] if kind != "dw3" else x[0, 0], w), E.ShapeError, "source")
            yield ErrorInput(s(x, w[0]), E.ShapeError, "weights")
            wz = np.ones((*w.shape[:-1], 0), np.float32)
            yield ErrorInput(s(x, wz), E.ShapeError, "weights")  # an empty kernel
            if kind == "c3":
                yield ErrorInput(s(x, _f32(3, 3, 3, 3, 3)), E.ShapeError, "weights")
                yield ErrorInput(s(x, _f32(3, 1, 3, 3, 3), d(groups=2)), E.ShapeError,
                                 "weights")
            elif kind == "d2":
                yield ErrorInput(s(x, _f32(3, 3, 3, 3)), E.ShapeError, "weights")
            else:
                yield ErrorInput(s(x, _f32(3, 3, 3, 3)), E.ShapeError, "weights")
            yield ErrorInput(s(_f32(*x.shape[:-1], 1), w, d(paddingStyle=P.TF_VALID)),
                             E.ShapeError, "source")
            for prop, val in bad_desc:
                yield ErrorInput(s(x, w, d(**{prop: val})), E.DescriptorError,
                                 f"descriptor.{prop}")
            return
        good = list(x.shape) if which == "data" else list(w.shape)
        b = w if which == "data" else x

        def s(dy_, shape, desc=None, form="list"):
            return Sample([dy_, b], {"desc": desc or d(), "geo": None, "shape": shape,
                                     "form": form})
        bad = list(good)
        bad[-1] += 3 if which == "data" else -1  # a kernel one smaller: a larger output
        yield ErrorInput(s(dy, bad), E.ShapeError, "outputShape")
        yield ErrorInput(s(dy, good[:-1]), E.ShapeError, "outputShape")
        yield ErrorInput(s(dy, [*good[:-1], -1]), E.ShapeError, "outputShape")
        yield ErrorInput(s(dy.astype(np.float16), good), E.DataTypeError,
                         "weights" if which == "data" else "source")
        yield ErrorInput(s(dy[0] if kind != "dw3" else dy[0, 0], good), E.ShapeError,
                         "incomingGradient")
        if kind == "c3":
            yield ErrorInput(s(dy, bad, form="const"), E.ShapeError, "outputShape")
        yield ErrorInput(s(dy, good, d(paddingStyle=P.explicitOffset)), E.DescriptorError,
                         f"{dkw}.paddingStyle")
    return gen



# ---------------------------------------------------------------------------- transposed
def _tr_draw(rng, k, pick, which, fed=False):
    side = None
    if fed:
        side = "x" if which == "fwd" else "w"
    return C2._draw(rng, k, pick, small_out=which == "weights", fed_side=side)


def _tr_samples(which):
    def gen(rng, dt):
        pick = _cycle(rng)
        for k in range(n_samples()):
            form = pick(k, "forms", FORMS if which != "data" else ("list", "const"))
            fed = form.startswith("fed")
            d, xs, ws, ys = _tr_draw(rng, k, pick, which, fed)
            xu, wu = C2._shape_u(xs, d.dataLayout), C2._shape_u(ws, d.weightsLayout, True)
            yu = C2._shape_u(ys, d.dataLayout)
            if which == "fwd":  # transposed source = forward result; outputShape = x
                inputs, shape = [_vals(rng, yu, dt), _vals(rng, wu, dt)], xu
            elif which == "data":  # incomingGradient = x-shaped; outputShape = y
                inputs, shape = [_vals(rng, xu, dt), _vals(rng, wu, dt)], yu
            else:  # incomingGradient x-shaped, source y-shaped, outputShape = weights
                inputs, shape = [_vals(rng, xu, dt), _vals(rng, yu, dt)], wu
            if fed:
                inputs.append(np.asarray(shape, np.int32))
            yield Sample(inputs, {"desc": d, "shape": shape, "form": form},
                         diff=() if fed else None, desc=f"{d.paddingStyle.name} {form}")
    return gen


def _tr_build(which):
    def build(g, a, b, *rest, desc, shape, form, **_):
        kw = C2._shape_arg(g, rest, form, shape, DT.int32)
        if which == "fwd":
            y = g.convolutionTranspose2D(a, weights=b, descriptor=desc, **kw)
        elif which == "data":
            y = g.convolutionTranspose2DDataGradient(a, weights=b,
                                                     forwardConvolutionDescriptor=desc, **kw)
        elif form == "list":  # Swift's label weights= (it is the source); source= as well
            y = g.convolutionTranspose2DWeightsGradient(a, weights=b,
                                                        forwardConvolutionDescriptor=desc, **kw)
        else:
            y = g.convolutionTranspose2DWeightsGradient(a, source=b,
                                                        forwardConvolutionDescriptor=desc, **kw)
        return C2._static(g, y, form, shape)
    return build


def _tr_ref(which, torch_=False):
    def ref(a, b, *rest, desc, shape, **_):
        if which == "fwd":
            fn = C2._data_grad_torch if torch_ else C2._data_grad_ref
            return fn(a, b, desc=desc, shape=shape)
        if which == "data":
            fn = C2._conv_torch if torch_ else C2._conv_ref
            return fn(a, b, desc=desc)
        fn = C2._weights_grad_torch if torch_ else C2._weights_grad_ref
        return fn(b, a, desc=desc, shape=shape)
    return ref


def _tr_errors(which):
    def gen(rng):
        E = mg
        d = mg.Convolution2DOpDescriptor
        # forward conv: x [1, 2, 5, 5], w [3, 2, 3, 3] -> y [1, 3, 3, 3]
        x, w, y = _f32(1, 2, 5, 5), _f32(3, 2, 3, 3), _f32(1, 3, 3, 3)
        if which == "fwd":
            a, b, good, bad = y, w, [1, 2, 5, 5], [1, 2, 8, 5]
            desc_arg = "descriptor"
        elif which == "data":
            a, b, good, bad = x, w, [1, 3, 3, 3], [1, 3, 2, 3]
            desc_arg = "forwardConvolutionDescriptor"
        else:
            a, b, good, bad = x, y, [3, 2, 3, 3], [3, 2, 2, 3]
            desc_arg = "forwardConvolutionDescriptor"

        def s(a_, b_, shape, desc=None, form="list"):
            return Sample([a_, b_], {"desc": desc or d(), "shape": shape, "form": form})
        yield ErrorInput(s(a, b, bad), E.ShapeError, "outputShape")
        yield ErrorInput(s(a, b, bad, form="const"), E.ShapeError, "outputShape")
        yield ErrorInput(s(a, b, good[:3]), E.ShapeError, "outputShape")
        if which == "weights":  # (checked in the order of the 2-D op: source first)
            yield ErrorInput(s(a.astype(np.float16), b, good), E.DataTypeError,
                             "incomingGradient")
        else:
            yield ErrorInput(s(a, b.astype(np.float16), good), E.DataTypeError, "weights")
        yield ErrorInput(s(a[0], b, good), E.ShapeError,
                         "source" if which == "fwd" else "incomingGradient")
        yield ErrorInput(s(a, b, good, d(groups=0)), E.DescriptorError, f"{desc_arg}.groups")
        yield ErrorInput(s(a, b, good, d(paddingStyle=P.explicitOffset)), E.DescriptorError,
                         f"{desc_arg}.paddingStyle")
    return gen


# ---------------------------------------------------------------------------- entries
_NOTES = ("torch float64 conv2d / conv3d on the zero-padded source (paddings by the "
          "conv_f64 oracle), gradients by torch autograd; every padding style, layout, "
          "channel index and option; shapes with 0 and 1 on every axis")

for _kind in ("c3", "d2", "dw3"):
    _m = _METHOD[_kind]
    add(OpInfo(_m, build=_build_fwd(_kind), ref=_np_ref(_fwd_t), samples=_fwd_samples(_kind),
               dtypes=FLOAT, differentiable=(0, 1), torch_ref=_t_ref(_fwd_t),
               errors=_errors(_kind, "fwd"), tol=TOL, nan_inputs=(0,), notes=_NOTES))
    add(OpInfo(_m + "DataGradient", build=_build_grad(_kind, "data"), ref=_np_ref(_dgrad_t),
               samples=_grad_samples(_kind, "data"), dtypes=FLOAT, differentiable=(0, 1),
               torch_ref=_t_ref(_dgrad_t), errors=_errors(_kind, "data"), tol=TOL,
               nan_inputs=(0,), notes=_NOTES))
    add(OpInfo(_m + "WeightsGradient", build=_build_grad(_kind, "weights"),
               ref=_np_ref(_wgrad_t), samples=_grad_samples(_kind, "weights"), dtypes=FLOAT,
               differentiable=(0, 1), torch_ref=_t_ref(_wgrad_t),
               errors=_errors(_kind, "weights"), tol=TOL, nan_inputs=(1,), notes=_NOTES))

_TR = {"fwd": ("convolutionTranspose2D", (0,)), "data": ("convolutionTranspose2DDataGradient",
                                                         (0,)),
       "weights": ("convolutionTranspose2DWeightsGradient", (0,))}
for _which, (_name, _nan) in _TR.items():
    add(OpInfo(_name, build=_tr_build(_which), ref=_tr_ref(_which), samples=_tr_samples(_which),
               dtypes=FLOAT, differentiable=(0, 1), torch_ref=_tr_ref(_which, torch_=True),
               errors=_tr_errors(_which), tol=TOL, nan_inputs=_nan,
               notes="the 2-D entries' float64 loops and torch references with the roles "
                     "renamed (SPEC 2.9); outputShape as a list, a constant and a fed tensor"))
