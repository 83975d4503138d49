"""Entry of sampleGrid (ops/sample_grid.py) and, through its gradient, of sampleGridGradient.

The reference is torch.nn.functional.grid_sample in float64 (an independent implementation):
the op's coordinates are first converted to grid_sample's normalized absolute (x, y) form
(pixels and relative coordinates by the op's documented formulas), constant padding with a
value c is grid_sample(x) + c (1 - grid_sample(ones)), and symmetric / reflect are grid_sample's
reflection without / with align_corners. Samples: NHWC and NCHW, normalized or pixel and
absolute or relative coordinates, alignCorners, constant (with a value), clampToEdge, reflect
and symmetric padding, bilinear and nearest (roundPreferCeil / roundPreferFloor; random
coordinates never tie), sizes 0 and 1."""

from __future__ import annotations

import numpy as np

from opdb import FLOAT, ErrorInput, OpInfo, Sample, add, arr, n_samples

from ._common import cycle
from ._common import mg_module as _mg

mg = _mg()
P, L = mg.PaddingMode, mg.TensorNamedDataLayout
R = mg.ResizeNearestRoundingMode


def _torch_ref(x, c, **kw):
    import torch
    import torch.nn.functional as F

    xs = x if kw["layout"] == L.NCHW else x.permute(0, 3, 1, 2)
    n, ch, h, w = xs.shape
    c = c.to(torch.float64)
    ho, wo = c.shape[1], c.shape[2]
    al = kw["align"]

    def to_norm(p, size):  # pixels -> grid_sample's normalized
        return (2 * p / (size - 1) - 1) if al else ((2 * p + 1) / size - 1)

    def to_pix(q, size):
        return (q + 1) * (size - 1) / 2 if al else ((q + 1) * size - 1) / 2

    gx, gy = c[..., 0], c[..., 1]
    if kw["relative"]:
        if kw["normalize"]:
            gx = gx * ((w - 1) / 2 if al else w / 2)
            gy = gy * ((h - 1) / 2 if al else h / 2)
        bx = (torch.arange(wo, dtype=torch.float64) + 0.5) * w / max(wo, 1) - 0.5
        by = (torch.arange(ho, dtype=torch.float64) + 0.5) * h / max(ho, 1) - 0.5
        gx, gy = gx + bx.reshape(1, 1, -1), gy + by.reshape(1, -1, 1)
    elif kw["normalize"]:
        gx, gy = to_pix(gx, w), to_pix(gy, h)
    grid = torch.stack([to_norm(gx, w), to_norm(gy, h)], dim=-1)
    pad = {P.constant: "zeros", P.clampToEdge: "border", P.reflect: "reflection",
           P.symmetric: "reflection"}[kw["padding"]]
    mode = "nearest" if kw["nearest"] else "bilinear"
    if n * ch * ho * wo == 0:
        out = torch.zeros((n, ch, ho, wo), dtype=torch.float64) + xs.sum() * 0
    elif h * w == 0:
        out = torch.full((n, ch, ho, wo), kw["constant"], dtype=torch.float64) + xs.sum() * 0
    else:
        out = F.grid_sample(xs, grid, mode=mode, padding_mode=pad, align_corners=al)
        if kw["padding"] == P.constant and kw["constant"] != 0:
            ones = torch.ones_like(xs)
            out = out + kw["constant"] * (1 - F.grid_sample(ones, grid, mode=mode,
                                                            padding_mode=pad, align_corners=al))
    return out if kw["layout"] == L.NCHW else out.permute(0, 2, 3, 1)


def _ref(x, c, **kw):
    import torch

    return _torch_ref(torch.from_numpy(np.asarray(x, np.float64)),
                      torch.from_numpy(np.asarray(c, np.float64)), **kw).numpy()


def _build(g, x, c, **kw):
    args = dict(layout=kw["layout"], normalizeCoordinates=kw["normalize"],
                relativeCoordinates=kw["relative"], alignCorners=kw["align"],
                paddingMode=kw["padding"], constantValue=kw["constant"])
    if kw["nearest"] and kw["rounding"] is not None:
        args["nearestRoundingMode"] = kw["rounding"]
    else:
        args["samplingMode"] = mg.ResizeMode.nearest if kw["nearest"] else mg.ResizeMode.bilinear
    return g.sampleGrid(x, c, **args)


def _samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 3):
        padding = pick(k, "pad", [P.constant, P.clampToEdge, P.reflect, P.symmetric])
        align = pick(k, "align", [False, True])
        if padding == P.reflect:
            align = True  # grid_sample's reflection about the edge centres
        if padding == P.symmetric:
            align = False  # ... and about the outer edges
        kw = dict(layout=pick(k, "layout", [L.NHWC, L.NCHW]), normalize=pick(k, "norm",
                                                                            [True, False]),
                  relative=pick(k, "rel", [False, True]), align=align, padding=padding,
                  nearest=pick(k, "near", [False, True]), constant=float(rng.uniform(-2, 2)),
                  rounding=pick(k, "round", [None, R.roundPreferCeil, R.roundPreferFloor]))
        n = int(rng.choice([0, 1, 2])) if rng.random() < 0.3 else 2
        h, w, ch = (int(rng.integers(1, 5)) for _ in range(3))
        if align:  # (grid_sample cannot express pixel coordinates of a size-1 axis then)
            h, w = max(h, 2), max(w, 2)
        ho, wo = int(rng.integers(0, 4)), int(rng.integers(1, 5))
        xs = (n, h, w, ch) if kw["layout"] == L.NHWC else (n, ch, h, w)
        lim = 1.3 if kw["normalize"] else 1.3 * max(h, w)
        if kw["relative"]:
            lim = 0.6 if kw["normalize"] else 1.5
        c = rng.uniform(-lim, lim, (n, ho, wo, 2))
        if kw["nearest"]:  # in-range pixels a margin away from rounding ties (half types)
            kw["relative"] = False
            sh = (n, ho, wo)
            py = np.floor(rng.uniform(0, h, sh)) + rng.choice([0.2, 0.3, -0.2], sh)
            px = np.floor(rng.uniform(0, w, sh)) + rng.choice([0.2, 0.3, -0.2], sh)
            py = np.clip(py, 0.2, h - 1.2 if h > 1 else 0.2)
            px = np.clip(px, 0.2, w - 1.2 if w > 1 else 0.2)
            if kw["normalize"]:
                py = 2 * py / (h - 1) - 1 if align else (2 * py + 1) / h - 1
                px = 2 * px / (w - 1) - 1 if align else (2 * px + 1) / w - 1
            c = np.stack([px, py], axis=-1)
        yield Sample([arr(rng, xs, dt), c.astype(dt.numpy_dtype)], kw, diff=(0,),
                     nan_inputs=(), desc=f"{padding.name} nearest={kw['nearest']}")


def _errors(rng):
    x, c = np.ones((1, 3, 3, 2), np.float32), np.zeros((1, 2, 2, 2), np.float32)
    kw = dict(layout=L.NHWC, normalize=True, relative=False, align=False, padding=P.constant,
              nearest=False, constant=0.0, rounding=None)
    yield ErrorInput(Sample([x, np.zeros((1, 2, 2, 3), np.float32)], kw), mg.ShapeError,
                     "coordinates")
    yield ErrorInput(Sample([x, np.zeros((2, 2, 2, 2), np.float32)], kw), mg.ShapeError,
                     "coordinates")
    yield ErrorInput(Sample([x[0], c], kw), mg.ShapeError, "source")
    yield ErrorInput(Sample([x, c.astype(np.float16)], kw), mg.DataTypeError, "coordinates")
    yield ErrorInput(Sample([x, c], dict(kw, padding=P.periodic)), mg.GraphError, "paddingMode")
    yield ErrorInput(Sample([x, c], dict(kw, nearest=True, rounding=R.roundToEven)),
                     mg.GraphError, "nearestRoundingMode")


add(OpInfo("sampleGrid", build=_build, ref=_ref, samples=_samples, dtypes=FLOAT,
           differentiable=(0,), torch_ref=_torch_ref, errors=_errors, nan_inputs=(),
           kinds=("sampleGridGradient",),
           tol={mg.float32: (1e-5, 1e-5), mg.float16: (4e-3, 4e-3), mg.bFloat16: (3e-2, 3e-2)},
           notes="nearest vs grid_sample: no ties in random coordinates"))
