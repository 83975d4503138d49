"""Entries of ops/pool_extra.py (issue 18): maxPooling4D, avgPooling4D, L2NormPooling4D and
their gradients, maxPooling2D/4DReturnIndices, the max-pooling gradients from indices
(registry kinds maxPooling2DGradientIndices / maxPooling4DGradientIndices: the indices
overloads of maxPooling2DGradient / maxPooling4DGradient), imToCol and colToIm.

The float64 references are direct loops written here from the definitions (never our
kernels): every output position of the source's own layout, every tap of its window in
row-major order (window size 1 on the axes a descriptor does not pool; a 4-D descriptor pools
the last four axes, a 2-D one H and W of its dataLayout), per-axis sizes and paddings by
opdb_entries/pooling.py's `_axis` (the conv_f64 oracle plus ceilMode):

- max: the first maximum of the taps inside the source in tap order (the first NaN if any),
  -inf and index -1 for a window with no tap inside; its index per PoolingReturnIndicesMode:
  global kD = the maximum's coordinates in the source, row-major over the k innermost axes;
  local kD = its tap, row-major over the window's k innermost axes;
- avg: the sum of the taps inside over their count (includeZeroPadToAverage: the count inside
  the padded source), 0 for a count of 0; L2: sqrt of the sum of squares of the taps inside;
- gradients: max to the first maximum; avg spread over the count; L2 dy * x / norm (0 for a
  zero norm); the gradient from indices equals the max gradient (the indices of
  ReturnIndices, fed back with the same descriptor: its own build composes the two);
- imToCol: col[n, (c*kH + p)*kW + q, i*Wo + j] = x[n, c, i*sy - pt + p*ry, j*sx - pl + q*rx]
  (NHWC: col[n, i*Wo + j, (p*kW + q)*C + c]), zero outside; colToIm its adjoint.
"""

from __future__ import annotations

import itertools

import numpy as np

import mpsgraph as mg
from opdb import DT, FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples

from . import pooling as P2
from ._common import cycle as _cycle
from ._common import size as _size

P = mg.PaddingStyle
L = mg.TensorNamedDataLayout
M = mg.PoolingReturnIndicesMode
STYLES = (P.explicit, P.TF_VALID, P.TF_SAME, P.ONNX_SAME_LOWER)


# ---------------------------------------------------------------------------- geometry
def _axes(d, rank):
    """Per axis (k, s, r, pb, pe, pooled) of a source of `rank`."""
    out = [(1, 1, 1, 0, 0, False)] * rank
    if isinstance(d, mg.Pooling2DOpDescriptor):
        hy, wx = (2, 3) if d.dataLayout == L.NCHW else (1, 2)
        out[hy] = (d.kernelHeight, d.strideInY, d.dilationRateInY, d.paddingTop,
                   d.paddingBottom, True)
        out[wx] = (d.kernelWidth, d.strideInX, d.dilationRateInX, d.paddingLeft,
                   d.paddingRight, True)
        return out
    pv = list(d.paddingValues)
    for i in range(4):
        out[rank - 4 + i] = (d.kernelSizes[i], d.strides[i], d.dilationRates[i], pv[2 * i],
                             pv[2 * i + 1], True)
    return out


def _geometry(d, shape):
    """(out shape, [(k, s, r, pb, pe)] resolved per axis); ValueError if too small."""
    out, params = [], []
    for n, (k, s, r, pb, pe, pooled) in zip(shape, _axes(d, len(shape))):
        if pooled:
            o, pb, pe = P2._axis(d.paddingStyle, n, k, s, r, pb, pe, d.ceilMode)
        else:
            o = n
        out.append(o)
        params.append((k, s, r, pb, pe))
    return out, params


def _windows(d, shape):
    """[(output index, [(tap, source coordinate or None)], count)] in row-major order."""
    out, params = _geometry(d, shape)
    res = []
    taps = list(itertools.product(*(range(k) for k, *_ in params)))
    for o in itertools.product(*(range(v) for v in out)):
        entries, count = [], 0
        for t in taps:
            coord = tuple(oi * s - pb + ti * r for oi, ti, (k, s, r, pb, pe)
                          in zip(o, t, params))
            inside = all(0 <= c < n for c, n in zip(coord, shape))
            padded = all(-pb <= c < n + pe for c, n, (k, s, r, pb, pe)
                         in zip(coord, shape, params))
            entries.append((t, coord if inside else None))
            if (padded if d.includeZeroPadToAverage else inside):
                count += 1
        res.append((o, entries, count))
    return out, params, res


def _first_max(vals):
    best = None
    for k, v in enumerate(vals):
        if best is None or v > vals[best] or (np.isnan(v) and not np.isnan(vals[best])):
            best = k
    return best


def _encode(mode, shape, params, tap, coord):
    rank = len(shape)
    depth = (mode - 1) % 4 + 1
    idx = 0
    for ax in range(rank - depth, rank):
        if mode <= 4:
            idx = idx * shape[ax] + coord[ax]
        else:
            idx = idx * params[ax][0] + tap[ax]
    return idx


# ---------------------------------------------------------------------------- references
def _max_ref(x, d, want_index=False):
    x = f64(x)
    out, params, wins = _windows(d, x.shape)
    y = np.full(out, -np.inf)
    idx = np.full(out, -1, np.int64)
    for o, entries, _ in wins:
        inside = [(t, c) for t, c in entries if c is not None]
        if not inside:
            continue
        k = _first_max([x[c] for _, c in inside])
        t, c = inside[k]
        y[o] = x[c]
        idx[o] = _encode(int(d.returnIndicesMode), x.shape, params, t, c)
    return (y, idx) if want_index else y


def _sum_ref(x, d, kind):
    x = f64(x)
    out, _, wins = _windows(d, x.shape)
    y = np.zeros(out)
    with np.errstate(invalid="ignore"):  # inf + -inf: NaN
        for o, entries, count in wins:
            vals = [x[c] for _, c in entries if c is not None]
            if kind == "avg":
                y[o] = sum(vals) / count if count else 0.0
            else:
                y[o] = np.sqrt(sum(v * v for v in vals))
    return y


def _fwd_ref(kind):
    def ref(x, *, desc, **_):
        if kind == "max":
            return _max_ref(x, desc)
        return _sum_ref(x, desc, kind)
    return ref


def _indices_ref(x, *, desc, **_):
    y, idx = _max_ref(x, desc, True)
    if int(desc.returnIndicesMode) == 0:
        return y
    return [y, idx.astype(desc.returnIndicesDataType.numpy_dtype)]


def _grad_ref(kind):
    def ref(dy, x, *rest, desc, **_):
        dy, x = f64(dy), f64(x)
        _, _, wins = _windows(desc, x.shape)
        dx = np.zeros(x.shape)
        for o, entries, count in wins:
            inside = [c for _, c in entries if c is not None]
            if not inside:
                continue
            if kind == "max":
                dx[inside[_first_max([x[c] for c in inside])]] += dy[o]
            elif kind == "avg":
                for c in inside:
                    dx[c] += dy[o] / count
            else:
                norm = np.sqrt(sum(x[c] * x[c] for c in inside))
                for c in inside:
                    dx[c] += dy[o] * x[c] / norm if norm > 0 else (np.nan if np.isnan(norm)
                                                                   else 0.0)
        return dx
    return ref


# ---------------------------------------------------------------------------- samples
def _draw4(rng, k, pick):
    style = pick(k, "styles", STYLES)
    ceil = pick(k, "ceil", (False, True, True, False))
    include = pick(k, "zero_pad", (False, True))
    rank = pick(k, "rank", (4, 5, 4))
    for _ in range(1000):
        ks = [_size(rng, 1, 3) for _ in range(4)]
        st = [int(v) for v in rng.choice([1, 1, 2, 3], 4)]
        dl = [int(v) for v in rng.choice([1, 1, 1, 2], 4)]
        pads = [int(v) for v in rng.integers(0, 3, 8)]
        if np.prod(ks) > 24:
            continue
        d = mg.Pooling4DOpDescriptor(kernelSizes=ks, strides=st, dilationRates=dl,
                                     paddingValues=pads, paddingStyle=style, ceilMode=ceil,
                                     includeZeroPadToAverage=include)
        shape = [_size(rng, 0, 2) for _ in range(rank - 4)] + [_size(rng, 0, 4)
                                                               for _ in range(4)]
        try:
            out, _, wins = _windows(d, shape)
        except ValueError:
            continue
        if np.prod(shape) > 200 or np.prod(out) > 200:
            continue
        empty = any(all(c is None for _, c in e) for _, e, _ in wins)
        return d, shape, out, empty
    raise RuntimeError("no configuration drawn")


def _draw2(rng, k, pick):
    d, xs, _, _ = P2._draw(rng, k, pick)
    shape = P2._shape_u(xs, d)
    out, _, wins = _windows(d, shape)
    empty = any(all(c is None for _, c in e) for _, e, _ in wins)
    return d, shape, out, empty


def _special(rng, x, k):
    if k % 4 == 3 and x.size:
        P2._infinities(rng, x)
        return True
    return False


def _fwd_samples(kind):
    def gen(rng, dt):
        pick = _cycle(rng)
        for k in range(n_samples()):
            d, shape, _, empty = _draw4(rng, k, pick)
            x = arr(rng, shape, dt)
            special = kind != "l2" and _special(rng, x, k)
            nodiff = special or (kind == "max" and empty)
            yield Sample([x], {"desc": d}, diff=() if nodiff else None,
                         desc=f"{d.paddingStyle.name} ceil={d.ceilMode}")
    return gen


def _grad_samples(kind):
    def gen(rng, dt):
        pick = _cycle(rng)
        for k in range(n_samples()):
            d, shape, out, empty = _draw4(rng, k, pick)
            x = arr(rng, shape, dt)
            if kind == "max" and k % 3 == 2 and x.size:  # ties: the first maximum wins
                x = rng.choice(np.array([-1.0, 0.5, 2.0]), x.shape).astype(x.dtype)
            if kind == "l2" and x.size:  # keep norms away from 0
                x = (np.sign(x.astype(np.float64)) * (0.5 + np.abs(x.astype(np.float64)))
                     ).astype(x.dtype)
            dy = arr(rng, out, dt)
            yield Sample([dy, x], {"desc": d}, desc=f"{d.paddingStyle.name}")
    return gen


def _decodable(d, shape):
    """The modes whose indices identify every pooled coordinate (for the gradient)."""
    rank = len(shape)
    moving = [ax for ax, (k, *_rest) in enumerate(_axes(d, rank)) if k > 1]
    need = rank - min(moving) if moving else 1
    return [m for m in range(1, 9) if (m - 1) % 4 + 1 >= need]


def _indices_samples(which, for_gradient=False):
    def gen(rng, dt):
        pick = _cycle(rng)
        for k in range(max(n_samples(), 9)):
            d, shape, out, empty = (_draw2 if which == 2 else _draw4)(rng, k, pick)
            modes = _decodable(d, shape) if for_gradient else list(range(9))
            d.returnIndicesMode = M(modes[k % len(modes)])
            d.returnIndicesDataType = pick(k, "idt", (DT.int32, DT.int64))
            x = arr(rng, shape, dt)
            ties = k % 3 == 2 and x.size
            if ties:  # the first maximum wins (not differentiable there)
                x = rng.choice(np.array([-1.0, 0.5, 2.0]), x.shape).astype(x.dtype)
            if for_gradient:
                form = pick(k, "form", ("list", "const"))
                yield Sample([arr(rng, out, dt), x], {"desc": d, "form": form},
                             diff=(), desc=f"{d.returnIndicesMode!r} {form}")
            else:
                yield Sample([x], {"desc": d}, diff=() if empty or ties else None,
                             desc=f"{d.returnIndicesMode!r}")
    return gen


# ---------------------------------------------------------------------------- builders
def _build(method):
    def build(g, *ts, desc, **_):
        return getattr(g, method)(*ts, descriptor=desc)
    return build


def _build_indices(method):
    def build(g, x, *, desc, **_):
        v, i = getattr(g, method)(x, descriptor=desc)
        return v if i is None else [v, i]
    return build


def _build_from_indices(which):
    fwd = f"maxPooling{which}DReturnIndices"
    grad = f"maxPooling{which}DGradient"

    def build(g, dy, b, *rest, desc, form="list", shape=None, direct=False, **_):
        if direct:  # error samples: b is the indices tensor itself
            idx, shape = b, shape
        else:
            _, idx = getattr(g, fwd)(b, descriptor=desc)
            shape = list(b.shape)
        kw = {"outputShape": list(shape)} if form == "list" else {
            "outputShapeTensor": g.constant(np.asarray(shape, np.int32), dataType=DT.int32)}
        return getattr(g, grad)(dy, indicesTensor=idx, descriptor=desc, **kw)
    return build


def _from_indices_ref(dy, x, *rest, desc, **_):
    return _grad_ref("max")(dy, x, desc=desc)


# ---------------------------------------------------------------------------- imToCol
def _im2col_ref(x, *, desc, **_):
    d = desc
    xc = np.asarray(x).transpose(0, 3, 1, 2) if d.dataLayout == L.NHWC else np.asarray(x)
    n, c, h, w = xc.shape
    kh, kw = d.kernelHeight, d.kernelWidth
    ho = (h + d.paddingTop + d.paddingBottom - (d.dilationRateInY * (kh - 1) + 1)) \
        // d.strideInY + 1
    wo = (w + d.paddingLeft + d.paddingRight - (d.dilationRateInX * (kw - 1) + 1)) \
        // d.strideInX + 1
    col = np.zeros((n, c, kh, kw, ho, wo), f64(xc).dtype if xc.dtype.kind == "f" else xc.dtype)
    for i, j, p, q in itertools.product(range(ho), range(wo), range(kh), range(kw)):
        r = i * d.strideInY - d.paddingTop + p * d.dilationRateInY
        s = j * d.strideInX - d.paddingLeft + q * d.dilationRateInX
        if 0 <= r < h and 0 <= s < w:
            col[:, :, p, q, i, j] = xc[:, :, r, s]
    if d.dataLayout == L.NHWC:
        return col.transpose(0, 4, 5, 2, 3, 1).reshape(n, ho * wo, kh * kw * c)
    return col.reshape(n, c * kh * kw, ho * wo)


def _col2im_ref(col, *, desc, shape, **_):
    d = desc
    n, c, h, w = ([shape[0], shape[3], shape[1], shape[2]] if d.dataLayout == L.NHWC
                  else shape)
    kh, kw = d.kernelHeight, d.kernelWidth
    ho = (h + d.paddingTop + d.paddingBottom - (d.dilationRateInY * (kh - 1) + 1)) \
        // d.strideInY + 1
    wo = (w + d.paddingLeft + d.paddingRight - (d.dilationRateInX * (kw - 1) + 1)) \
        // d.strideInX + 1
    col = f64(col) if np.asarray(col).dtype.kind != "i" else np.asarray(col, np.int64)
    if d.dataLayout == L.NHWC:
        col6 = col.reshape(n, ho, wo, kh, kw, c).transpose(0, 5, 3, 4, 1, 2)
    else:
        col6 = col.reshape(n, c, kh, kw, ho, wo)
    img = np.zeros((n, c, h, w), col.dtype)
    for i, j, p, q in itertools.product(range(ho), range(wo), range(kh), range(kw)):
        r = i * d.strideInY - d.paddingTop + p * d.dilationRateInY
        s = j * d.strideInX - d.paddingLeft + q * d.dilationRateInX
        if 0 <= r < h and 0 <= s < w:
            img[:, :, r, s] += col6[:, :, p, q, i, j]
    return img.transpose(0, 2, 3, 1) if d.dataLayout == L.NHWC else img


def _draw_im2col(rng, k, pick):
    layout = pick(k, "layout", (L.NCHW, L.NHWC))
    for _ in range(1000):
        kh, kw = _size(rng, 1, 3), _size(rng, 1, 3)
        sy, sx = (int(v) for v in rng.choice([1, 1, 2, 3], 2))
        ry, rx = (int(v) for v in rng.choice([1, 1, 2], 2))
        pads = [int(v) for v in rng.integers(0, 3, 4)]
        d = mg.ImToColOpDescriptor(kernelWidth=kw, kernelHeight=kh, strideInX=sx,
                                   strideInY=sy, dilationRateInX=rx, dilationRateInY=ry,
                                   paddingLeft=pads[2], paddingRight=pads[3],
                                   paddingTop=pads[0], paddingBottom=pads[1], dataLayout=layout)
        n, c, h, w = _size(rng, 0, 2), _size(rng, 0, 3), _size(rng, 0, 6), _size(rng, 0, 6)
        if h + pads[0] + pads[1] < ry * (kh - 1) + 1 or w + pads[2] + pads[3] < rx * (kw - 1) + 1:
            continue
        shape = [n, h, w, c] if layout == L.NHWC else [n, c, h, w]
        return d, shape
    raise RuntimeError("no configuration drawn")


_IM_TYPES = FLOAT + (DT.int32, DT.int8, DT.uInt8)


def _im2col_samples(rng, dt):
    pick = _cycle(rng)
    for k in range(n_samples()):
        d, shape = _draw_im2col(rng, k, pick)
        yield Sample([arr(rng, shape, dt)], {"desc": d}, desc=d.dataLayout.name)


def _col2im_samples(rng, dt):
    pick = _cycle(rng)
    for k in range(n_samples()):
        d, shape = _draw_im2col(rng, k, pick)
        cols = _im2col_ref(np.zeros(shape), desc=d).shape
        yield Sample([arr(rng, cols, dt)], {"desc": d, "shape": shape},
                     desc=d.dataLayout.name)


# ---------------------------------------------------------------------------- errors
def _f32(*s):
    return np.ones(s, np.float32)


def _pool4_errors(kind, gradient=False):
    def gen(rng):
        E = mg
        d = mg.Pooling4DOpDescriptor
        ok = d(kernelSizes=[1, 1, 2, 2])
        x = _f32(1, 2, 4, 4)

        def s(*ins, desc=ok):
            return Sample(list(ins), {"desc": desc})
        if gradient:
            yield ErrorInput(s(_f32(1, 2, 2, 2), x), E.ShapeError, "gradient")
            yield ErrorInput(s(_f32(1, 2, 3, 3), x.astype(np.float16)), E.DataTypeError,
                             "source")
            yield ErrorInput(s(_f32(1, 2, 3), _f32(1, 2, 4)), E.ShapeError, "source")
            return
        yield ErrorInput(s(x[0]), E.ShapeError, "source")
        yield ErrorInput(s(x.astype(np.int32)), E.DataTypeError, "source")
        yield ErrorInput(s(x, desc=d(kernelSizes=[1, 1, 5, 1], paddingStyle=P.TF_VALID)),
                         E.ShapeError, "source")
        for prop, val in (("kernelSizes", [2, 2]), ("kernelSizes", [0, 1, 1, 1]),
                          ("strides", [1, 1, 0, 1]), ("dilationRates", [1, 1, 1]),
                          ("paddingValues", [0] * 4), ("paddingValues", [-1] + [0] * 7),
                          ("paddingStyle", P.explicitOffset), ("ceilMode", 2),
                          ("includeZeroPadToAverage", "yes"), ("returnIndicesMode", 9),
                          ("returnIndicesDataType", DT.float32)):
            yield ErrorInput(s(x, desc=d(**{prop: val})), E.DescriptorError,
                             f"descriptor.{prop}")
    return gen


def _indices_errors(which):
    def gen(rng):
        E = mg
        if which == 2:
            d = mg.Pooling2DOpDescriptor(kernelWidth=2, kernelHeight=2,
                                         returnIndicesMode=M.globalFlatten2D)
        else:
            d = mg.Pooling4DOpDescriptor(kernelSizes=[1, 1, 2, 2],
                                         returnIndicesMode=M.globalFlatten2D)
        x = _f32(1, 2, 4, 4)
        yield ErrorInput(Sample([x[0]], {"desc": d}), E.ShapeError, "source")
        yield ErrorInput(Sample([x.astype(np.int32)], {"desc": d}), E.DataTypeError, "source")
        import dataclasses
        yield ErrorInput(Sample([x], {"desc": dataclasses.replace(
            d, returnIndicesDataType=DT.int16)}), E.DescriptorError,
            "descriptor.returnIndicesDataType")
    return gen


def _from_indices_errors(which):
    def gen(rng):
        import dataclasses

        E = mg
        if which == 2:
            d = mg.Pooling2DOpDescriptor(kernelWidth=2, kernelHeight=2, strideInX=2,
                                         strideInY=2, returnIndicesMode=M.globalFlatten2D)
        else:
            d = mg.Pooling4DOpDescriptor(kernelSizes=[1, 1, 2, 2], strides=[1, 1, 2, 2],
                                         returnIndicesMode=M.globalFlatten2D)
        dy, idx, shape = _f32(1, 2, 2, 2), np.zeros((1, 2, 2, 2), np.int32), [1, 2, 4, 4]

        def s(dy_, idx_, shape_=shape, desc=d):
            return Sample([dy_, idx_], {"desc": desc, "shape": shape_, "direct": True})
        yield ErrorInput(s(dy, idx.astype(np.float32)), E.DataTypeError, "indicesTensor")
        yield ErrorInput(s(dy, np.zeros((1, 2, 2, 3), np.int32)), E.ShapeError,
                         "indicesTensor")
        yield ErrorInput(s(dy, idx, [1, 2, 6, 4]), E.ShapeError, "outputShape")
        yield ErrorInput(s(dy, idx, [1, 2, 4]), E.ShapeError, "outputShape")
        yield ErrorInput(s(dy.astype(np.int32), idx), E.DataTypeError, "gradient")
        yield ErrorInput(s(dy, idx, desc=dataclasses.replace(d, returnIndicesMode=M.none)),
                         E.ShapeError, "descriptor.returnIndicesMode")
        yield ErrorInput(s(dy, idx, desc=dataclasses.replace(
            d, returnIndicesMode=M.localFlatten1D)), E.ShapeError,
            "descriptor.returnIndicesMode")
        # values checked at run time: out of range, or naming a padding position
        yield ErrorInput(s(dy, np.full((1, 2, 2, 2), 16, np.int32)), E.GraphError,
                         "indicesTensor")
        yield ErrorInput(s(dy, np.full((1, 2, 2, 2), -2, np.int32)), E.GraphError,
                         "indicesTensor")
    return gen


def _im2col_errors(rng):
    E = mg
    d = mg.ImToColOpDescriptor(kernelWidth=3, kernelHeight=3)
    yield ErrorInput(Sample([_f32(2, 4, 4)], {"desc": d}), E.ShapeError, "source")
    yield ErrorInput(Sample([_f32(1, 2, 2, 4)], {"desc": d}), E.ShapeError, "source")
    yield ErrorInput(Sample([np.ones((1, 2, 4, 4), bool)], {"desc": d}), E.DataTypeError,
                     "source")
    for prop, val in (("kernelWidth", 0), ("strideInY", 0), ("dilationRateInX", 0),
                      ("paddingTop", -1), ("dataLayout", L.NCDHW)):
        yield ErrorInput(Sample([_f32(1, 2, 4, 4)], {"desc": mg.ImToColOpDescriptor(
            **{prop: val})}), E.DescriptorError, f"descriptor.{prop}")


def _col2im_errors(rng):
    E = mg
    d = mg.ImToColOpDescriptor(kernelWidth=3, kernelHeight=3)
    # image [1, 2, 4, 4] -> columns [1, 18, 4]
    yield ErrorInput(Sample([_f32(1, 18, 5)], {"desc": d, "shape": [1, 2, 4, 4]}),
                     E.ShapeError, "source")
    yield ErrorInput(Sample([_f32(1, 18, 4)], {"desc": d, "shape": [1, 2, 4]}),
                     E.ShapeError, "outputShape")
    yield ErrorInput(Sample([_f32(1, 18, 4)], {"desc": d, "shape": [1, 2, 2, 4]}),
                     E.ShapeError, "outputShape")
    yield ErrorInput(Sample([_f32(1, 18, 4)], {"desc": d, "shape": [1, 2, 4, -1]}),
                     E.ShapeError, "outputShape")


def _build_im2col(g, x, *, desc, **_):
    return g.imToCol(x, descriptor=desc)


def _build_col2im(g, c, *, desc, shape, **_):
    return g.colToIm(c, outputShape=list(shape), descriptor=desc)


# ---------------------------------------------------------------------------- entries
_N = "direct float64 loops over every window and tap (module docstring)"
for _kind, _m in (("max", "maxPooling4D"), ("avg", "avgPooling4D"), ("l2", "L2NormPooling4D")):
    add(OpInfo(_m, build=_build(_m), ref=_fwd_ref(_kind), samples=_fwd_samples(_kind),
               dtypes=FLOAT, differentiable=(0,), errors=_pool4_errors(_m), notes=_N))
    add(OpInfo(_m + "Gradient", build=_build(_m + "Gradient"), ref=_grad_ref(_kind),
               samples=_grad_samples(_kind), dtypes=FLOAT,
               differentiable=(0,) if _kind == "avg" else (),
               errors=_pool4_errors(_m, gradient=True), notes=_N,
               nan=_kind != "l2"))  # (L2: a NaN meets the 0 / 0 of a zero norm)
for _w in (2, 4):
    add(OpInfo(f"maxPooling{_w}DReturnIndices", build=_build_indices(
        f"maxPooling{_w}DReturnIndices"), ref=_indices_ref, samples=_indices_samples(_w),
        dtypes=FLOAT, differentiable=(0,), errors=_indices_errors(_w), notes=_N))
    add(OpInfo(f"maxPooling{_w}DGradientIndices", build=_build_from_indices(_w),
               ref=_from_indices_ref, samples=_indices_samples(_w, for_gradient=True),
               dtypes=FLOAT, errors=_from_indices_errors(_w), broadcast_ok=False,
               kinds=(f"maxPooling{_w}DReturnIndices",),
               notes="maxPooling" f"{_w}DGradient(gradient, indicesTensor=, outputShape=) "
                     "of the indices of ReturnIndices: the value-based max gradient"))
add(OpInfo("imToCol", build=_build_im2col, ref=_im2col_ref, samples=_im2col_samples,
           dtypes=_IM_TYPES, differentiable=(0,), errors=_im2col_errors, notes=_N))
add(OpInfo("colToIm", build=_build_col2im, ref=_col2im_ref, samples=_col2im_samples,
           dtypes=_IM_TYPES, differentiable=(0,), errors=_col2im_errors, notes=_N))
