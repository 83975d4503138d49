"""`python -m mpsgraph check`: a built-in sweep that lets a user trust an install.

Every option of every op runs on the chosen device and is compared with a float64 reference
written as plain loops over the definitions (below, independent of the kernels), and the
gradient ops are compared with central finite differences of the forward op. Prints a table
(op, options covered, max relative error, PASS/FAIL).

Suites: convolution, lstm, gru (option sweeps); ops (forward vs float64 NumPy, gradient rules
through gradientForPrimaryTensor vs finite differences); exact (integer, index and bool
results: equal to NumPy's); gradient-ops (the explicit gradient ops called directly, vs
element-by-element finite differences of the forward reference); forward (FFT vs numpy.fft,
stencil, optimizers, control flow and variables); random (moments within 5 standard errors,
bounds, seeds and the Philox state, dropout's mask and gradient).
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from .descriptors import Convolution2DOpDescriptor
from .graph import Graph
from .runtime.device import Device
from .types import (
    DataType,
    LossReductionType,
    PaddingMode,
    PaddingStyle,
    RNNActivation,
    ScatterMode,
    ShapedType,
)
from .types import TensorNamedDataLayout as L

# ----------------------------------------------------------------------------- f64 references
# Plain loops over the definitions (docs/semantics.md), NCHW data and OIHW weights, float64.


def _pads_1d(style: PaddingStyle, size: int, k: int, s: int, r: int, before: int, after: int):
    k_eff = r * (k - 1) + 1
    if style in (PaddingStyle.explicit, PaddingStyle.TF_VALID):
        if style == PaddingStyle.TF_VALID:
            before = after = 0
        return (size + before + after - k_eff) // s + 1, before
    out = (size + s - 1) // s
    total = max((out - 1) * s + k_eff - size, 0)
    small = total // 2
    return out, (small if style == PaddingStyle.TF_SAME else total - small)


def ref_conv(x, w, sy, sx, ry, rx, pt, pl, groups, ho, wo):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    y = np.zeros((n, o, ho, wo))
    for oc in range(o):
        c0 = (oc // og) * cg
        for i in range(ho):
            for j in range(wo):
                for p in range(kh):
                    for q in range(kw):
                        hh, ww = i * sy - pt + p * ry, j * sx - pl + q * rx
                        if 0 <= hh < h and 0 <= ww < wd:
                            y[:, oc, i, j] += x[:, c0:c0 + cg, hh, ww] @ w[oc, :, p, q]
    return y


def ref_conv_data_grad(dy, w, x_shape, sy, sx, ry, rx, pt, pl, groups):
    n, c, h, wd = x_shape
    o, cg, kh, kw = w.shape
    og = o // groups
    dx = np.zeros(x_shape)
    for oc in range(o):
        c0 = (oc // og) * cg
        for i in range(dy.shape[2]):
            for j in range(dy.shape[3]):
                for p in range(kh):
                    for q in range(kw):
                        hh, ww = i * sy - pt + p * ry, j * sx - pl + q * rx
                        if 0 <= hh < h and 0 <= ww < wd:
                            dx[:, c0:c0 + cg, hh, ww] += np.outer(dy[:, oc, i, j], w[oc, :, p, q])
    return dx


def ref_conv_weights_grad(dy, x, w_shape, sy, sx, ry, rx, pt, pl, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w_shape
    og = o // groups
    dw = np.zeros(w_shape)
    for oc in range(o):
        c0 = (oc // og) * cg
        for i in range(dy.shape[2]):
            for j in range(dy.shape[3]):
                for p in range(kh):
                    for q in range(kw):
                        hh, ww = i * sy - pt + p * ry, j * sx - pl + q * rx
                        if 0 <= hh < h and 0 <= ww < wd:
                            dw[oc, :, p, q] += dy[:, oc, i, j] @ x[:, c0:c0 + cg, hh, ww]
    return dw


# ----------------------------------------------------------------------------- sweep machinery
@dataclass
class Row:
    op: str
    options: str
    cases: int = 0
    max_err: float = 0.0
    tol: float = 0.0
    failures: list[str] = field(default_factory=list)

    def add(self, err: float, label: str) -> None:
        self.cases += 1
        if not np.isfinite(err) or err > self.tol:
            self.failures.append(f"{label}: {err:.2e}")
        self.max_err = max(self.max_err, err) if np.isfinite(err) else float("inf")

    @property
    def ok(self) -> bool:
        return self.cases > 0 and not self.failures


def _rel_err(got: np.ndarray, want: np.ndarray) -> float:
    if want.size == 0:
        return 0.0 if got.shape == want.shape else float("inf")
    scale = max(1.0, float(np.max(np.abs(want))))
    return float(np.max(np.abs(got.astype(np.float64) - want))) / scale


_TOL = {DataType.float32: 1e-5, DataType.float16: 4e-3, DataType.bFloat16: 3e-2}


class _ConvCase:
    def __init__(self, rng, style, dl, wl, s, r, groups, c, o, dtype=DataType.float32):
        self.d = Convolution2DOpDescriptor(
            strideInX=s, strideInY=s, dilationRateInX=r, dilationRateInY=r, groups=groups,
            paddingLeft=2, paddingRight=1, paddingTop=1, paddingBottom=0, paddingStyle=style,
            dataLayout=dl, weightsLayout=wl)
        self.dtype, self.groups = dtype, groups
        h, wd, kh, kw = 7, 6, 3, 2
        npdt = dtype.numpy_dtype
        rnd = lambda *s_: rng.standard_normal(s_).astype(npdt).astype(np.float64)  # noqa: E731
        self.x, self.w = rnd(2, c, h, wd), rnd(o, c // groups, kh, kw)
        self.ho, self.pt = _pads_1d(style, h, kh, s, r, 1, 0)
        self.wo, self.pl = _pads_1d(style, wd, kw, s, r, 2, 1)
        self.dy = rnd(2, o, self.ho, self.wo)
        self.geo = (s, s, r, r, self.pt, self.pl, groups)

    def data(self, a):
        return a.transpose(0, 2, 3, 1) if self.d.dataLayout == L.NHWC else a

    def undata(self, a):
        return a.transpose(0, 3, 1, 2) if self.d.dataLayout == L.NHWC else a

    def weights(self, a):
        return a.transpose(2, 3, 1, 0) if self.d.weightsLayout == L.HWIO else a

    def unweights(self, a):
        return a.transpose(3, 2, 0, 1) if self.d.weightsLayout == L.HWIO else a

    def compile(self, device):
        g = Graph()
        dt, npdt = self.dtype, self.dtype.numpy_dtype
        xs, ws, dys = self.data(self.x), self.weights(self.w), self.data(self.dy)
        x, w, dy = (g.placeholder(list(a.shape), dt) for a in (xs, ws, dys))
        outs = [g.convolution2D(x, w, self.d),
                g.convolution2DDataGradient(dy, w, list(xs.shape), self.d),
                g.convolution2DWeightsGradient(dy, x, list(ws.shape), self.d)]
        feeds = {t: ShapedType(list(a.shape), dt) for t, a in ((x, xs), (w, ws), (dy, dys))}
        exe = g.compile(feeds, outs, device=device)

        def run(xc, wc, dyc):
            r = exe.run([self.data(xc).astype(npdt), self.weights(wc).astype(npdt),
                         self.data(dyc).astype(npdt)])
            return (self.undata(r[0].numpy().astype(np.float64)),
                    self.undata(r[1].numpy().astype(np.float64)),
                    self.unweights(r[2].numpy().astype(np.float64)))

        return run


def conv_sweep(device: Device, rng: np.random.Generator) -> Iterator[Row]:
    """Every padding style x data layout x weights layout x stride x dilation x groups."""
    styles = [PaddingStyle.explicit, PaddingStyle.TF_VALID, PaddingStyle.TF_SAME,
              PaddingStyle.ONNX_SAME_LOWER]
    groups = [(1, 4, 6), (2, 4, 6), (4, 4, 8)]  # (groups, C, O): plain, grouped, depthwise x2
    combos = "NCHW/NHWC x OIHW/HWIO x stride 1,2 x dilation 1,2 x groups 1,2,depthwise"
    names = ("convolution2D", "convolution2DDataGradient", "convolution2DWeightsGradient")
    for style in styles:
        rows = [Row(n, f"{style.name}: {combos}", tol=_TOL[DataType.float32]) for n in names]
        fd = [Row(n, f"{style.name}: finite differences of convolution2D", tol=1e-4)
              for n in names[1:]]
        for dl, wl, s, r, (gr, c, o) in itertools.product(
                (L.NCHW, L.NHWC), (L.OIHW, L.HWIO), (1, 2), (1, 2), groups):
            case = _ConvCase(rng, style, dl, wl, s, r, gr, c, o)
            label = f"{dl.name}/{wl.name} s{s} r{r} g{gr}"
            run = case.compile(device)
            got = run(case.x, case.w, case.dy)
            want = (ref_conv(case.x, case.w, *case.geo, case.ho, case.wo),
                    ref_conv_data_grad(case.dy, case.w, case.x.shape, *case.geo),
                    ref_conv_weights_grad(case.dy, case.x, case.w.shape, *case.geo))
            for row, a, b in zip(rows, got, want):
                row.add(_rel_err(a, b), label)
            # <dy, J v> by central differences of the forward (linear: step 1 is exact)
            for row, arg in zip(fd, (0, 1)):
                v = rng.standard_normal(case.x.shape if arg == 0 else case.w.shape)
                xp, wp = (case.x + v, case.w) if arg == 0 else (case.x, case.w + v)
                xm, wm = (case.x - v, case.w) if arg == 0 else (case.x, case.w - v)
                num = np.vdot(case.dy, (run(xp, wp, case.dy)[0] - run(xm, wm, case.dy)[0]) / 2)
                ana = np.vdot(got[1] if arg == 0 else got[2], v)
                scale = float(np.vdot(np.abs(case.dy), np.abs(run(np.abs(xp), np.abs(wp),
                                                                   case.dy)[0]))) + 1.0
                row.add(abs(num - ana) / scale, label)
        yield from rows
        yield from fd
    for dt in (DataType.float16, DataType.bFloat16):
        rows = [Row(n, f"{dt.name}: TF_SAME, NCHW/NHWC, stride 1,2, groups 1,2,depthwise "
                    "(f32 accumulate, rounded once)", tol=_TOL[dt]) for n in names]
        for dl, s, (gr, c, o) in itertools.product((L.NCHW, L.NHWC), (1, 2), groups):
            case = _ConvCase(rng, PaddingStyle.TF_SAME, dl, L.OIHW, s, 1, gr, c, o, dt)
            got = case.compile(device)(case.x, case.w, case.dy)
            want = (ref_conv(case.x, case.w, *case.geo, case.ho, case.wo),
                    ref_conv_data_grad(case.dy, case.w, case.x.shape, *case.geo),
                    ref_conv_weights_grad(case.dy, case.x, case.w.shape, *case.geo))
            for row, a, b in zip(rows, got, want):
                row.add(_rel_err(a, b), f"{dl.name} s{s} g{gr}")
        yield from rows


# ----------------------------------------------------------------------------- LSTM
def _act(kind: int, a: np.ndarray) -> np.ndarray:
    return [lambda v: v, lambda v: np.maximum(v, 0.0), np.tanh,
            lambda v: 1.0 / (1.0 + np.exp(-v)),
            lambda v: np.clip(0.2 * v + 0.5, 0.0, 1.0)][kind](a)


def ref_lstm(x, R, W, b, h0, c0, mask, peep, d):
    """Plain float64 loop of the LSTM equations (canonical forms: R [D,4H,H], h0/c0 [N,D*H],
    mask None/[N,D*H]/[T,N,D*H], peep [D,4H]). Returns (state, cell)."""
    T, N = x.shape[:2]
    D, H = R.shape[0], R.shape[2]
    order = ("i", "z", "f", "o") if d.forgetGateLast else ("i", "f", "z", "o")
    acts = {"i": d.inputGateActivation, "f": d.forgetGateActivation,
            "z": d.cellGateActivation, "o": d.outputGateActivation}
    state, cell = np.zeros((T, N, D * H)), np.zeros((T, N, D * H))
    for k in range(D):
        sl = slice(k * H, (k + 1) * H)
        h = np.zeros((N, H)) if h0 is None else h0[:, sl]
        c = np.zeros((N, H)) if c0 is None else c0[:, sl]
        rev = k == 1 if d.bidirectional else d.reverse
        for t in (range(T - 1, -1, -1) if rev else range(T)):
            if W is not None:
                a = x[t] @ W[k * 4 * H:(k + 1) * 4 * H].T
            else:
                a = x[t][:, k * 4 * H:(k + 1) * 4 * H].copy()
            if b is not None:
                a = a + b[k * 4 * H:(k + 1) * 4 * H]
            m = 1.0 if mask is None else (mask[t] if mask.ndim == 3 else mask)[:, sl]
            a = a + (h * m) @ R[k].T
            gate = {}
            for j, name in enumerate(order):
                pj = 0.0 if peep is None else peep[k, j * H:(j + 1) * H] * c
                gate[name] = _act(int(acts[name]), a[:, j * H:(j + 1) * H] + pj)
            c = gate["f"] * c + gate["i"] * gate["z"]
            h = gate["o"] * _act(int(d.activation), c)
            state[t, :, sl], cell[t, :, sl] = h, c
    return state, cell


def _lstm_case(rng, device, opts: dict) -> tuple[float, float]:
    """One configuration: (forward max rel err vs ref_lstm, gradient rel err vs central finite
    differences of ref_lstm along a random direction)."""
    from .descriptors import LSTMDescriptor

    acts = opts.pop("acts", {})
    d = LSTMDescriptor(training=True, **{k: v for k, v in opts.items() if hasattr(
        LSTMDescriptor, k)}, **acts)
    T, N, I, H = 3, 2, 3, 3
    D = 2 if d.bidirectional else 1
    has_w = not opts.get("no_inputWeight", False)
    r = lambda *s_: rng.uniform(-0.9, 0.9, s_)  # noqa: E731
    vals = {"x": r(T, N, I if has_w else D * 4 * H), "R": r(D, 4 * H, H)}
    if has_w:
        vals["W"] = r(D * 4 * H, I)
    if not opts.get("no_bias", False):
        vals["b"] = r(D * 4 * H)
    if opts.get("init", False):
        vals["h0"], vals["c0"] = r(N, D * H), r(N, D * H)
    if opts.get("peephole", False):
        vals["p"] = r(D, 4 * H)
    mask = None
    if opts.get("mask") == "state":
        mask = (rng.uniform(size=(N, D * H)) > 0.3) * 1.0
    elif opts.get("mask") == "seq":
        mask = (rng.uniform(size=(T, N, D * H)) > 0.3) * 1.0
    g = Graph()
    names = {"x": "source", "R": "recurrentWeight", "W": "inputWeight", "b": "bias",
             "h0": "initState", "c0": "initCell", "p": "peephole"}
    user = {k: (v[0] if k in ("R", "p") and not d.bidirectional else v)
            for k, v in vals.items()}
    ph = {k: g.placeholder(list(v.shape)) for k, v in user.items()}
    kw = {names[k]: ph[k] for k in ph if k not in ("x", "R")}
    mk = g.constant(mask.astype(np.float32)) if mask is not None else None
    state, cell, z = g.LSTM(ph["x"], ph["R"], mask=mk, descriptor=d, **kw)
    dstate_v = rng.standard_normal((T, N, D * H))
    dstate = g.constant(dstate_v.astype(np.float32))
    extra = {}
    cg = opts.get("cellGradient")
    if cg == "final":
        dcf = rng.standard_normal((N, D * H))
        extra["cellGradient"] = g.constant(dcf.astype(np.float32))
    elif cg == "seq":
        dcs = rng.standard_normal((T, N, D * H))
        extra["cellGradient"] = g.constant(dcs.astype(np.float32))
    if opts.get("stateGradient", False):
        dsf = rng.standard_normal((1, N, D * H))
        extra["stateGradient"] = g.constant(dsf.astype(np.float32))
    grads = g.LSTMGradients(ph["x"], ph["R"], dstate, z, cell, mask=mk, descriptor=d,
                            **extra, **kw)
    feeds = {ph[k]: v.astype(np.float32) for k, v in user.items()}
    out = g.run(feeds, [state, cell, *grads], device=device)
    canon = dict(vals)
    f = lambda cv: ref_lstm(cv["x"], cv["R"], cv.get("W"), cv.get("b"), cv.get("h0"),  # noqa
                            cv.get("c0"), mask, cv.get("p"), d)
    s_ref, c_ref = f(canon)
    fwd_err = max(_rel_err(out[state].numpy(), s_ref), _rel_err(out[cell].numpy(), c_ref))

    def loss(cv):
        s_, c_ = f(cv)
        total = np.vdot(dstate_v, s_)
        fin = (lambda a: np.concatenate([a[T - 1, :, :H], a[0, :, H:]], -1)) if D == 2 else (
            (lambda a: a[0]) if d.reverse else (lambda a: a[T - 1]))
        if cg == "final":
            total += np.vdot(dcf, fin(c_))
        elif cg == "seq":
            total += np.vdot(dcs, c_)
        if opts.get("stateGradient", False):
            total += np.vdot(dsf[0], fin(s_))
        return total

    order = [k for k in ("x", "R", "W", "b", "p", "h0", "c0") if k in vals]
    return fwd_err, _directional_error(loss, canon, vals, order, grads, out, rng)


def _directional_error(loss, point: dict, shapes: dict, order: list[str], grads, out,
                       rng: np.random.Generator) -> float:
    """|central difference of `loss` at `point` along a random direction v (over the arrays
    named in `order`, shaped as in `shapes`) - <our gradients `out[grads]`, v>|, relative to
    sum |g v| (at least 1)."""
    v = {k: rng.standard_normal(shapes[k].shape) for k in order}
    eps = 1e-6
    num = (loss({k: p + eps * v[k] if k in v else p for k, p in point.items()})
           - loss({k: p - eps * v[k] if k in v else p for k, p in point.items()})) / (2 * eps)
    ana, scale = 0.0, 0.0
    for k, t in zip(order, grads):
        gk = out[t].numpy().astype(np.float64).reshape(v[k].shape)
        ana += np.vdot(gk, v[k])
        scale += np.vdot(np.abs(gk), np.abs(v[k]))
    return abs(num - ana) / max(scale, 1.0)


def lstm_sweep(device: Device, rng: np.random.Generator) -> Iterator[Row]:
    """Each LSTM option alone, then pairs of options."""
    A = RNNActivation
    single: list[tuple[str, dict]] = [("default", {})]
    for flag in ("reverse", "bidirectional", "forgetGateLast", "peephole", "init",
                 "no_inputWeight", "no_bias", "stateGradient"):
        single.append((flag, {flag: True}))
    single += [("mask state-shaped", {"mask": "state"}), ("mask per step", {"mask": "seq"}),
               ("cellGradient final", {"cellGradient": "final"}),
               ("cellGradient per step", {"cellGradient": "seq"})]
    gates = ("inputGateActivation", "forgetGateActivation", "cellGateActivation",
             "outputGateActivation", "activation")
    for gname in gates:
        for a in A:
            single.append((f"{gname}={a.name}", {"acts": {gname: a}}))
    fwd = Row("LSTM", "each option alone: flags, 5 activations x 5 positions, peephole, "
              "mask forms, optional inputs", tol=1e-5)
    bwd = Row("LSTMGradients", "each option alone, vs finite differences of the f64 loop "
              "(stateGradient, cellGradient forms)", tol=1e-4)
    for label, opts in single:
        e1, e2 = _lstm_case(rng, device, dict(opts))
        fwd.add(e1, label)
        bwd.add(e2, label)
    yield fwd
    yield bwd
    flags = [("reverse", {"reverse": True}), ("bidirectional", {"bidirectional": True}),
             ("forgetGateLast", {"forgetGateLast": True}), ("peephole", {"peephole": True}),
             ("mask", {"mask": "seq"}), ("init", {"init": True}),
             ("no_inputWeight", {"no_inputWeight": True}),
             ("cellGradient", {"cellGradient": "final", "stateGradient": True}),
             ("hardSigmoid/relu", {"acts": {"inputGateActivation": A.hardSigmoid,
                                            "activation": A.relu}})]
    fwd = Row("LSTM", "every pair of: reverse, bidirectional, forgetGateLast, peephole, mask, "
              "init state, no inputWeight, state/cell gradients, activations", tol=1e-5)
    bwd = Row("LSTMGradients", "every pair of the same options, vs finite differences",
              tol=1e-4)
    for (l1, o1), (l2, o2) in itertools.combinations(flags, 2):
        opts = {**o1, **o2}
        e1, e2 = _lstm_case(rng, device, opts)
        fwd.add(e1, f"{l1}+{l2}")
        bwd.add(e2, f"{l1}+{l2}")
    yield fwd
    yield bwd


# ----------------------------------------------------------------------------- GRU, RNN
def ref_gated(x, R, W, b, h0, mask, b2, d):
    """Plain float64 loop of the GRU (d a GRUDescriptor) or single-gate RNN equations
    (SPEC 4; canonical forms: R [D,G,H], h0 [N,D*H], mask None/[N,D*H]/[T,N,D*H], b2 [D*H]).
    Returns the state [T, N, D*H]."""
    T, N = x.shape[:2]
    D, G, H = R.shape
    gru = G == 3 * H
    state = np.zeros((T, N, D * H))
    order = ("r", "z", "o") if gru and d.resetGateFirst else ("z", "r", "o")
    for k in range(D):
        sl = slice(k * H, (k + 1) * H)
        h = np.zeros((N, H)) if h0 is None else h0[:, sl]
        rev = k == 1 if d.bidirectional else d.reverse
        for t in (range(T - 1, -1, -1) if rev else range(T)):
            a = (x[t] @ W[k * G:(k + 1) * G].T if W is not None
                 else x[t][:, k * G:(k + 1) * G].copy())
            if b is not None:
                a = a + b[k * G:(k + 1) * G]
            m = 1.0 if mask is None else (mask[t] if mask.ndim == 3 else mask)[:, sl]
            hm = h * m
            if not gru:
                h = _act(int(d.activation), a + hm @ R[k].T)
                state[t, :, sl] = h
                continue
            xg = {n: a[:, j * H:(j + 1) * H] for j, n in enumerate(order)}
            Rg = {n: R[k][j * H:(j + 1) * H] for j, n in enumerate(order)}
            z = _act(int(d.updateGateActivation), xg["z"] + hm @ Rg["z"].T)
            r = _act(int(d.resetGateActivation), xg["r"] + hm @ Rg["r"].T)
            if d.resetAfter:
                c = (hm @ Rg["o"].T + (0.0 if b2 is None else b2[sl])) * r
            else:
                c = (h * r * m) @ Rg["o"].T
            o = _act(int(d.outputGateActivation), xg["o"] + c)
            h = (1 - z) * h + z * o if d.flipZ else z * h + (1 - z) * o
            state[t, :, sl] = h
    return state


def _gated_case(rng, device, gru: bool, opts: dict) -> tuple[float, float]:
    """One GRU / single-gate configuration: (forward max rel err vs ref_gated, gradient op's
    rel err vs central finite differences of ref_gated along a random direction)."""
    from .descriptors import GRUDescriptor, SingleGateRNNDescriptor

    Desc = GRUDescriptor if gru else SingleGateRNNDescriptor
    d = Desc(training=True, **{k: v for k, v in opts.items() if hasattr(Desc, k)})
    T, N, I, H = 3, 2, 3, 3
    D = 2 if d.bidirectional else 1
    G = (3 if gru else 1) * H
    has_w = not opts.get("no_inputWeight", False)
    r = lambda *s_: rng.uniform(-0.9, 0.9, s_)  # noqa: E731
    vals = {"x": r(T, N, I if has_w else D * G), "R": r(D, G, H)}
    if has_w:
        vals["W"] = r(D * G, I)
    if not opts.get("no_bias", False):
        vals["b"] = r(D * G)
    if opts.get("init", False):
        vals["h0"] = r(N, D * H)
    if gru and opts.get("secondaryBias", False):
        vals["b2"] = r(D * H)
    mask = None
    if opts.get("mask") == "state":
        mask = (rng.uniform(size=(N, D * H)) > 0.3) * 1.0
    elif opts.get("mask") == "seq":
        mask = (rng.uniform(size=(T, N, D * H)) > 0.3) * 1.0
    g = Graph()
    names = {"x": "source", "R": "recurrentWeight", "W": "inputWeight", "b": "bias",
             "h0": "initState", "b2": "secondaryBias"}
    user = {k: (v[0] if k == "R" and not d.bidirectional else v) for k, v in vals.items()}
    ph = {k: g.placeholder(list(v.shape)) for k, v in user.items()}
    kw = {names[k]: ph[k] for k in ph if k not in ("x", "R")}
    if mask is not None:
        kw["mask"] = g.constant(mask.astype(np.float32))
    dstate_v = rng.standard_normal((T, N, D * H))
    dstate = g.constant(dstate_v.astype(np.float32))
    if opts.get("stateGradient", False):
        dsf = rng.standard_normal((1, N, D * H))
        kw_g = {"stateGradient": g.constant(dsf.astype(np.float32))}
    else:
        kw_g = {}
    if gru:
        state, z = g.GRU(ph["x"], ph["R"], descriptor=d, **kw)
        grads = g.GRUGradients(ph["x"], ph["R"], dstate, z, state, descriptor=d, **kw_g, **kw)
    else:
        state, z = g.singleGateRNN(ph["x"], ph["R"], descriptor=d, **kw)
        grads = g.singleGateRNNGradients(ph["x"], ph["R"], dstate, z, descriptor=d, **kw_g,
                                         **kw)
    feeds = {ph[k]: v.astype(np.float32) for k, v in user.items()}
    out = g.run(feeds, [state, *grads], device=device)
    f = lambda cv: ref_gated(cv["x"], cv["R"], cv.get("W"), cv.get("b"), cv.get("h0"),  # noqa
                             mask, cv.get("b2"), d)
    fwd_err = _rel_err(out[state].numpy(), f(vals))

    def loss(cv):
        s_ = f(cv)
        total = np.vdot(dstate_v, s_)
        if kw_g:
            fin = (np.concatenate([s_[T - 1, :, :H], s_[0, :, H:]], -1) if D == 2
                   else (s_[0] if d.reverse else s_[T - 1]))
            total += np.vdot(dsf[0], fin)
        return total

    order = [k for k in ("x", "R", "W", "b", "h0", "b2") if k in vals]
    return fwd_err, _directional_error(loss, vals, vals, order, grads, out, rng)


def gru_sweep(device: Device, rng: np.random.Generator) -> Iterator[Row]:
    """GRU and singleGateRNN: each option alone, then pairs of options."""
    A = RNNActivation
    common = [("reverse", {"reverse": True}), ("bidirectional", {"bidirectional": True}),
              ("mask state-shaped", {"mask": "state"}), ("mask per step", {"mask": "seq"}),
              ("init", {"init": True}), ("no_inputWeight", {"no_inputWeight": True}),
              ("no_bias", {"no_bias": True}), ("stateGradient", {"stateGradient": True})]
    gru_only = [("resetGateFirst", {"resetGateFirst": True}),
                ("resetAfter+secondaryBias", {"resetAfter": True, "secondaryBias": True}),
                ("flipZ", {"flipZ": True})]
    gru_acts = [(f"{p}={a.name}", {p: a}) for p in ("updateGateActivation",
                                                     "resetGateActivation",
                                                     "outputGateActivation") for a in A]
    sg_acts = [(f"activation={a.name}", {"activation": a}) for a in A]
    for gru, extra, acts in ((True, gru_only, gru_acts), (False, [], sg_acts)):
        op = "GRU" if gru else "singleGateRNN"
        single = [("default", {})] + common + extra + acts
        fwd = Row(op, "each option alone: flags, every activation per gate, mask forms, "
                  "optional inputs", tol=1e-5)
        bwd = Row(op + "Gradients", "each option alone, vs finite differences of the f64 "
                  "loop", tol=1e-4)
        for label, opts in single:
            e1, e2 = _gated_case(rng, device, gru, dict(opts))
            fwd.add(e1, label)
            bwd.add(e2, label)
        yield fwd
        yield bwd
        pairs = common + extra + [acts[1] if gru else sg_acts[2]]
        fwd = Row(op, f"every pair of {len(pairs)} options: flags, mask, optional inputs, "
                  "stateGradient, an activation", tol=1e-5)
        bwd = Row(op + "Gradients", "every pair of the same options, vs finite differences",
                  tol=1e-4)
        for (l1, o1), (l2, o2) in itertools.combinations(pairs, 2):
            e1, e2 = _gated_case(rng, device, gru, {**o1, **o2})
            fwd.add(e1, f"{l1}+{l2}")
            bwd.add(e2, f"{l1}+{l2}")
        yield fwd
        yield bwd


# ----------------------------------------------------------------------------- model ops
def _ops_table():
    """(family, op, build(g, *tensors), f64 reference(*arrays), input shapes, input domain)."""
    from .descriptors import Pooling2DOpDescriptor

    def pool_ref(x, kind):  # 2x2 windows, stride 2, NCHW
        n, c, h, w = x.shape
        v = x.reshape(n, c, h // 2, 2, w // 2, 2)
        return v.max(axis=(3, 5)) if kind == "max" else v.mean(axis=(3, 5))

    def ce_ref(logits, labels):
        z = logits - logits.max(-1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        return np.array([-(labels * logp).sum() / logits.shape[0]])

    pool = Pooling2DOpDescriptor(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2)
    idx = np.array([2, -1, 2, 0], np.int32)  # gather / scatter indices: duplicates, negative
    sm = lambda a: np.exp(a - a.max(-1, keepdims=True)) / np.exp(  # noqa: E731
        a - a.max(-1, keepdims=True)).sum(-1, keepdims=True)
    return [
        ("arithmetic", "addition", lambda g, a, b: g.addition(a, b), np.add,
         [(2, 3), (3,)], "any"),
        ("arithmetic", "subtraction", lambda g, a, b: g.subtraction(a, b), np.subtract,
         [(2, 1, 3), (4, 1)], "any"),
        ("arithmetic", "multiplication", lambda g, a, b: g.multiplication(a, b), np.multiply,
         [(2, 3), (2, 3)], "any"),
        ("arithmetic", "division", lambda g, a, b: g.division(a, b), np.divide,
         [(3, 2), (2,)], "positive"),
        ("arithmetic", "negative", lambda g, a: g.negative(a), np.negative, [(5,)], "any"),
        ("arithmetic", "exponent", lambda g, a: g.exponent(a), np.exp, [(2, 3)], "any"),
        ("arithmetic", "logarithm", lambda g, a: g.logarithm(a), np.log, [(2, 3)], "positive"),
        ("arithmetic", "square", lambda g, a: g.square(a), np.square, [(4,)], "any"),
        ("arithmetic", "squareRoot", lambda g, a: g.squareRoot(a), np.sqrt, [(4,)],
         "positive"),
        ("activation", "sigmoid", lambda g, a: g.sigmoid(a), lambda a: 1 / (1 + np.exp(-a)),
         [(2, 4)], "any"),
        ("activation", "tanh", lambda g, a: g.tanh(a), np.tanh, [(2, 4)], "any"),
        ("activation", "reLU", lambda g, a: g.reLU(a), lambda a: np.maximum(a, 0), [(2, 4)],
         "away0"),
        ("activation", "softMax", lambda g, a: g.softMax(a, -1), sm, [(3, 5)], "any"),
        ("matrix", "matrixMultiplication", lambda g, a, b: g.matrixMultiplication(a, b),
         np.matmul, [(2, 3, 4), (4, 5)], "any"),
        ("reduction", "reductionSum", lambda g, a: g.reductionSum(a, axes=[0, 2]),
         lambda a: a.sum(axis=(0, 2), keepdims=True), [(2, 3, 4)], "any"),
        ("reduction", "reductionMean", lambda g, a: g.reductionMean(a, axis=1),
         lambda a: a.mean(axis=1, keepdims=True), [(2, 3, 4)], "any"),
        ("reduction", "reductionMaximum", lambda g, a: g.reductionMaximum(a, axis=-1),
         lambda a: a.max(axis=-1, keepdims=True), [(3, 4)], "any"),
        ("reduction", "reductionMinimum", lambda g, a: g.reductionMinimum(a, axes=[0, -1]),
         lambda a: a.min(axis=(0, -1), keepdims=True), [(3, 2, 4)], "any"),
        ("reduction", "reductionProduct", lambda g, a: g.reductionProduct(a, axis=1),
         lambda a: a.prod(axis=1, keepdims=True), [(2, 3, 4)], "any"),
        ("reduction", "reductionMaximumPropagateNaN",
         lambda g, a: g.reductionMaximumPropagateNaN(a, axis=0),
         lambda a: a.max(axis=0, keepdims=True), [(3, 4)], "any"),
        ("reduction", "reductionMinimumPropagateNaN",
         lambda g, a: g.reductionMinimumPropagateNaN(a, axis=1),
         lambda a: a.min(axis=1, keepdims=True), [(3, 4)], "any"),
        ("cumulative", "cumulativeSum", lambda g, a: g.cumulativeSum(a, axis=1),
         lambda a: np.cumsum(a, axis=1), [(2, 5)], "any"),
        ("cumulative", "cumulativeSum exclusive reverse",
         lambda g, a: g.cumulativeSum(a, axis=0, exclusive=True, reverse=True),
         lambda a: np.flip(np.cumsum(np.flip(a, 0), 0), 0) - a, [(4, 3)], "any"),
        ("cumulative", "cumulativeProduct", lambda g, a: g.cumulativeProduct(a, axis=-1),
         lambda a: np.cumprod(a, axis=-1), [(3, 4)], "any"),
        ("cumulative", "cumulativeMaximum", lambda g, a: g.cumulativeMaximum(a, axis=1),
         lambda a: np.maximum.accumulate(a, axis=1), [(2, 6)], "any"),
        ("cumulative", "cumulativeMinimum", lambda g, a: g.cumulativeMinimum(a, axis=0,
                                                                           reverse=True),
         lambda a: np.flip(np.minimum.accumulate(np.flip(a, 0), 0), 0), [(5, 2)], "any"),
        ("shape", "reshape", lambda g, a: g.reshape(a, shape=[3, -1]),
         lambda a: a.reshape(3, -1), [(2, 3, 2)], "any"),
        ("shape", "transpose", lambda g, a: g.transpose(a, permutation=[2, 0, 1]),
         lambda a: a.transpose(2, 0, 1), [(2, 3, 4)], "any"),
        ("shape", "sliceTensor", lambda g, a: g.sliceTensor(a, dimension=1, start=1, length=2),
         lambda a: a[:, 1:3], [(2, 4)], "any"),
        ("shape", "concatTensors", lambda g, a, b: g.concatTensors([a, b], 0),
         lambda a, b: np.concatenate([a, b], 0), [(2, 3), (1, 3)], "any"),
        ("shape", "padTensor reflect",
         lambda g, a: g.padTensor(a, PaddingMode.reflect, [1, 2], [2, 1]),
         lambda a: np.pad(a, [(1, 2), (2, 1)], mode="reflect"), [(3, 4)], "any"),
        ("shape", "tileTensor", lambda g, a: g.tileTensor(a, [2, 3]),
         lambda a: np.tile(a, (2, 3)), [(2, 3)], "any"),
        ("shape", "reverse", lambda g, a: g.reverse(a, axes=[0, -1]),
         lambda a: a[::-1, :, ::-1], [(2, 3, 4)], "any"),
        ("shape", "spaceToDepth2D",
         lambda g, a: g.spaceToDepth2D(a, widthAxis=3, heightAxis=2, depthAxis=1, blockSize=2,
                                       usePixelShuffleOrder=True),
         lambda a: a.reshape(2, 3, 2, 2, 2, 2).transpose(0, 1, 3, 5, 2, 4).reshape(2, 12, 2, 2),
         [(2, 3, 4, 4)], "any"),
        ("loss", "softMaxCrossEntropy",
         lambda g, a, lab: g.softMaxCrossEntropy(a, lab, -1,
                                                 reductionType=LossReductionType.mean),
         lambda a, lab: ce_ref(a, lab).reshape(1, 1), [(4, 5), (4, 5)], "labels"),
        ("pooling", "maxPooling2D", lambda g, a: g.maxPooling2D(a, pool),
         lambda a: pool_ref(a, "max"), [(2, 2, 4, 4)], "any"),
        ("pooling", "avgPooling2D", lambda g, a: g.avgPooling2D(a, pool),
         lambda a: pool_ref(a, "avg"), [(2, 2, 4, 4)], "any"),
        ("gather", "gather (duplicate, negative indices)",
         lambda g, a: g.gather(a, indicesTensor=g.constant(idx), axis=1),
         lambda a: a[:, idx % a.shape[1]], [(2, 4, 3)], "any"),
        ("gather", "scatterWithData add", lambda g, a, b: g.scatterWithData(
            a, updates=b, indices=g.constant(idx), axis=0, mode=ScatterMode.add),
         lambda a, b: a + np.stack([b[idx % 4 == r].sum(0) for r in range(4)]),
         [(4, 3), (4, 3)], "any"),
        ("sort", "sort descending", lambda g, a: g.sort(a, axis=1, descending=True),
         lambda a: -np.sort(-a, axis=1), [(3, 5)], "any"),
        ("sort", "topK", lambda g, a: g.topK(a, k=2)[0],
         lambda a: -np.sort(-a, axis=-1)[..., :2], [(3, 5)], "any"),
        ("linalg", "bandPart", lambda g, a: g.bandPart(a, numLower=1, numUpper=0),
         lambda a: np.tril(np.triu(a, -1)), [(2, 4, 4)], "any"),
        ("linalg", "inverse", lambda g, a: g.inverse(g.addition(a, g.constant(
            3 * np.eye(3, dtype=np.float32)))), lambda a: np.linalg.inv(a + 3 * np.eye(3)),
         [(2, 3, 3)], "any"),
        ("normalization", "variance", lambda g, a: g.variance(a, axes=[0, 2]),
         lambda a: a.var(axis=(0, 2), keepdims=True), [(3, 2, 4)], "any"),
        ("normalization", "normalize (batch statistics; its gradient: normalizationGradients)",
         lambda g, a, s: g.normalize(a, g.mean(a, [0, 2, 3]), g.variance(a, axes=[0, 2, 3]),
                                     gamma=s, epsilon=1e-3),
         lambda a, s: (a - a.mean(axis=(0, 2, 3), keepdims=True)) / np.sqrt(
             a.var(axis=(0, 2, 3), keepdims=True) + np.float64(np.float32(1e-3))) * s,
         [(3, 2, 2, 3), (1, 2, 1, 1)], "any"),
        ("resize", "resizeBilinear (alignCorners)", lambda g, a: g.resizeBilinear(
            a, [5, 4], layout=L.NCHW, alignCorners=True),
         lambda a: np.einsum("oh,nchw,pw->ncop", _align_corners(3, 5), a,
                             _align_corners(3, 4)), [(2, 2, 3, 3)], "any"),
        ("attention", "scaledDotProductAttention (scaledDotProductAttentionGradient)",
         lambda g, q, k, v: g.scaledDotProductAttention(
            q, k, v), _sdpa_ref, [(2, 3, 4), (2, 5, 4), (2, 5, 3)], "any"),
    ] + _math_ops_table() + _conv_pool_extra_table(pool_ref) + _more_ops_table()


def _align_corners(n_in: int, n_out: int) -> np.ndarray:
    """[n_out, n_in] linear interpolation weights with corners on corners."""
    w = np.zeros((n_out, n_in))
    for o in range(n_out):
        c = o * (n_in - 1) / (n_out - 1)
        i = min(int(np.floor(c)), n_in - 2)
        w[o, i], w[o, i + 1] = 1 - (c - i), c - i
    return w


def _sdpa_ref(q, k, v):
    """softmax(q k^T / sqrt(d)) v over the last two axes."""
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def _conv_pool_extra_table(pool_ref):
    """Rows of issue 18's ops (3-D / depthwise / transposed convolution, 4-D pooling,
    imToCol), with float64 references built from ref_conv's loops or plain reshapes."""
    from .descriptors import (
        Convolution2DOpDescriptor,
        Convolution3DOpDescriptor,
        DepthwiseConvolution2DOpDescriptor,
        DepthwiseConvolution3DOpDescriptor,
        ImToColOpDescriptor,
        Pooling4DOpDescriptor,
    )

    def blocks(x):  # [n, c, 4, 4] -> [n, c, 2 (i), 2 (j), 4 (the 2x2 window, row-major)]
        n, c = x.shape[:2]
        return x.reshape(n, c, 2, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, 2, 2, 4)

    def conv3d_ref(x, w):  # stride 1, unpadded, groups 1: a sum over the taps
        kd, kh, kw = w.shape[2:]
        do, ho, wo = (s - k + 1 for s, k in zip(x.shape[2:], w.shape[2:]))
        y = 0.0
        for a in range(kd):
            for b in range(kh):
                for e in range(kw):
                    y = y + np.einsum("ncdhw,oc->nodhw",
                                      x[:, :, a:a + do, b:b + ho, e:e + wo], w[:, :, a, b, e])
        return y

    def dw_ref(x, w):  # depthwise: w [M, C, 3, 3] -> [C*M, 1, 3, 3], groups C, pad 1
        m, c = w.shape[:2]
        return ref_conv(x, w.transpose(1, 0, 2, 3).reshape(c * m, 1, 3, 3), 1, 1, 1, 1, 1, 1,
                        c, x.shape[2], x.shape[3])

    p4 = Pooling4DOpDescriptor(kernelSizes=[1, 1, 2, 2], strides=[1, 1, 2, 2])
    tr = Convolution2DOpDescriptor(strideInX=2, strideInY=2, paddingTop=1, paddingLeft=1,
                                   paddingBottom=1, paddingRight=1)
    d3 = DepthwiseConvolution3DOpDescriptor(paddingValues=[0, 0, 1, 1, 1, 1],
                                            channelDimensionIndex=-3)
    im = ImToColOpDescriptor(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2)
    return [
        ("convolution", "convolution3D", lambda g, a, b: g.convolution3D(
            a, b, Convolution3DOpDescriptor()), conv3d_ref, [(2, 3, 4, 4, 3), (2, 3, 2, 2, 2)],
         "any"),
        ("convolution", "depthwiseConvolution2D", lambda g, a, b: g.depthwiseConvolution2D(
            a, b, DepthwiseConvolution2DOpDescriptor(paddingLeft=1, paddingRight=1,
                                                     paddingTop=1, paddingBottom=1)),
         dw_ref, [(2, 3, 4, 5), (2, 3, 3, 3)], "any"),
        ("convolution", "depthwiseConvolution3D", lambda g, a, b: g.depthwiseConvolution3D(
            a, b, d3), dw_ref,  # channel axis -3: the batch axis is a depth of kernel 1
         [(2, 3, 4, 5), (1, 3, 3, 3)], "any"),
        ("convolution", "convolutionTranspose2D", lambda g, a, b: g.convolutionTranspose2D(
            a, b, [2, 2, 6, 6], tr), lambda a, b: ref_conv_data_grad(
                a, b, (2, 2, 6, 6), 2, 2, 1, 1, 1, 1, 1), [(2, 3, 3, 3), (3, 2, 3, 3)], "any"),
        ("pooling", "maxPooling4D", lambda g, a: g.maxPooling4D(a, p4),
         lambda a: pool_ref(a, "max"), [(2, 2, 4, 4)], "any"),
        ("pooling", "avgPooling4D", lambda g, a: g.avgPooling4D(a, p4),
         lambda a: pool_ref(a, "avg"), [(2, 2, 4, 4)], "any"),
        ("pooling", "L2NormPooling4D", lambda g, a: g.L2NormPooling4D(a, p4),
         lambda a: np.sqrt((blocks(a) ** 2).sum(-1)), [(2, 2, 4, 4)], "away0"),
        ("pooling", "imToCol", lambda g, a: g.imToCol(a, im),
         lambda a: blocks(a).transpose(0, 1, 4, 2, 3).reshape(2, 8, 4), [(2, 2, 4, 4)], "any"),
    ]


def _math_ops_table():
    """The differentiable ops of the arithmetic table beyond the basic ones: each applied to
    N(0, 1) inputs mapped into its domain by an expression written on both sides (a tanh for
    the (-1, 1) ones, 1.5 + x^2 for acosh)."""
    import math

    erf = np.vectorize(math.erf)

    def c(g, v):
        return g.constant(v, dataType=DataType.float32)

    def unary(name, ref, inside=None, ref_inside=None):
        if inside is None:
            return (name, lambda g, a: getattr(g, name)(a), ref)
        return (name, lambda g, a: getattr(g, name)(inside(g, a)),
                lambda a: ref(ref_inside(a)))

    th = (lambda g, a: g.tanh(a), np.tanh)
    sq = (lambda g, a: g.addition(g.square(a), c(g, 1.5)), lambda a: a * a + 1.5)
    ab = (lambda g, a: g.addition(g.absolute(a), c(g, 0.5)), lambda a: np.abs(a) + 0.5)
    fams = {
        "arithmetic: trigonometric": [
            unary("sin", np.sin), unary("cos", np.cos), unary("tan", np.tan, *th),
            unary("asin", np.arcsin, *th), unary("acos", np.arccos, *th),
            unary("atan", np.arctan), unary("sinh", np.sinh), unary("cosh", np.cosh),
            unary("asinh", np.arcsinh), unary("acosh", np.arccosh, *sq),
            unary("atanh", np.arctanh, *th)],
        "arithmetic: exponent, logarithm": [
            unary("exponentBase2", np.exp2), unary("exponentBase10", lambda a: 10.0 ** a),
            unary("logarithmBase2", np.log2, *ab), unary("logarithmBase10", np.log10, *ab)],
        "arithmetic: erf, reciprocals, absolute": [
            unary("reciprocalSquareRoot", lambda a: 1 / np.sqrt(a), *ab),
            unary("reciprocal", lambda a: 1 / a, *ab), unary("erf", erf),
            unary("reverseSquareRoot", lambda a: 1 / np.sqrt(a), *ab),
            unary("identity", lambda a: a),
            unary("absoluteSquare", np.square), unary("absolute", np.abs)],
        "arithmetic: rounding, sign": [
            unary("floor", np.floor), unary("round", lambda a: np.trunc(a + np.copysign(
                0.5, a))), unary("rint", np.rint), unary("truncate", np.trunc),
            unary("sign", np.sign), unary("ceil", np.ceil)],
        "arithmetic: binary, clamp": [
            ("atan2", lambda g, a, b: g.atan2(a, b), np.arctan2),
            ("divisionNoNaN", lambda g, a, b: g.divisionNoNaN(a, b), lambda a, b: a / b),
            ("maximum", lambda g, a, b: g.maximum(a, b), np.fmax),
            ("minimum", lambda g, a, b: g.minimum(a, b), np.fmin),
            ("power", lambda g, a, b: g.power(g.addition(g.absolute(a), c(g, 0.5)), b),
             lambda a, b: (np.abs(a) + 0.5) ** b),
            ("select", lambda g, a, b: g.select(g.greaterThan(a, c(g, 0.0)), a, b),
             lambda a, b: np.where(a > 0, a, b)),
            ("modulo", lambda g, a, b: g.modulo(a, b), np.fmod),
            ("floorModulo", lambda g, a, b: g.floorModulo(a, b), np.mod),
            ("maximumWithNaNPropagation", lambda g, a, b: g.maximumWithNaNPropagation(a, b),
             np.maximum),
            ("minimumWithNaNPropagation", lambda g, a, b: g.minimumWithNaNPropagation(a, b),
             np.minimum),
            ("clamp", lambda g, a, lo, hi: g.clamp(a, min=lo, max=hi),
             lambda a, lo, hi: np.minimum(np.maximum(a, lo), hi))],
    }
    out = []
    for fam, ops in fams.items():
        for name, build, ref in ops:
            n = build.__code__.co_argcount - 1
            shapes = [(2, 3), (3,), (2, 1)][:n]
            out.append((fam, name, build, ref, shapes, "any"))
    return out


def ops_sweep(device: Device, rng: np.random.Generator) -> Iterator[Row]:
    """The model ops: forward vs a float64 NumPy expression, and the gradient that
    gradientForPrimaryTensor builds (from each op's gradient rule) vs central finite
    differences of that expression, along a random direction, for sum(u * op(inputs))."""
    rows: dict[str, tuple[Row, Row]] = {}
    for fam, op, build, ref, shapes, domain in _ops_table():
        if fam not in rows:
            names = [o for f, o, *_ in _ops_table() if f == fam]
            rows[fam] = (Row(fam, "forward: " + ", ".join(names), tol=1e-5),
                         Row(fam, "gradient rules via gradientForPrimaryTensor vs finite "
                             "differences", tol=1e-4))
        args = []
        for i, sh in enumerate(shapes):
            a = rng.standard_normal(sh)
            if domain == "positive":
                a = np.abs(a) + 0.5
            elif domain == "away0":
                a = np.sign(a) * (np.abs(a) + 0.1)
            elif domain == "labels" and i == 1:
                a = np.eye(sh[-1])[rng.integers(0, sh[-1], sh[0])]
            args.append(a)
        g = Graph()
        ph = [g.placeholder(list(a.shape)) for a in args]
        y = build(g, *ph)
        want = ref(*args)
        u = rng.standard_normal(want.shape)
        primary = g.reductionSum(g.multiplication(y, g.constant(u.astype(np.float32))),
                                 axes=list(range(len(want.shape))))
        diff = [t for t, a in zip(ph, args) if not (domain == "labels" and a is args[-1])]
        grads = g.gradientForPrimaryTensor(primary, diff)
        out = g.run({t: a.astype(np.float32) for t, a in zip(ph, args)},
                    [y, *[grads[t] for t in diff]], device=device)
        rows[fam][0].add(_rel_err(out[y].numpy(), want), op)
        eps, num, ana, scale = 1e-6, 0.0, 0.0, 0.0
        vs = [rng.standard_normal(a.shape) for a in args[:len(diff)]]
        plus = [a + eps * v for a, v in zip(args, vs)] + args[len(diff):]
        minus = [a - eps * v for a, v in zip(args, vs)] + args[len(diff):]
        num = (np.vdot(u, ref(*plus)) - np.vdot(u, ref(*minus))) / (2 * eps)
        for t, v in zip(diff, vs):
            gt = out[grads[t]].numpy().astype(np.float64)
            ana += np.vdot(gt, v)
            scale += np.vdot(np.abs(gt), np.abs(v))
        rows[fam][1].add(abs(num - ana) / max(scale, 1.0), op)
    for fwd, bwd in rows.values():
        yield fwd
        yield bwd


def _exact_table():
    """(family, op, build(g, *tensors), NumPy reference, inputs maker(rng)): the ops without a
    gradient (comparisons, logical, bitwise, classification, arg and truth reductions), whose
    results must equal NumPy's exactly, on inputs with ties, NaN, infinities and -0."""
    def floats(rng):
        a = rng.standard_normal((3, 4)).astype(np.float32)
        a.reshape(-1)[:4] = [np.nan, np.inf, -np.inf, -0.0]
        b = a.copy()
        b.reshape(-1)[4:8] = rng.standard_normal(4)  # ties elsewhere
        return [a, b]

    def ints(rng):
        return [rng.integers(-100, 100, (3, 4)).astype(np.int32),
                rng.integers(0, 40, (3, 4)).astype(np.int32)]

    def shift(fn):
        def ref(a, b):
            out = fn(a.astype(np.int64), b.astype(np.int64))
            return np.where(b >= 32, np.where((a < 0) & (fn is np.right_shift), -1, 0),
                            out).astype(np.int32)
        return ref

    cmp_ = [("equal", np.equal), ("notEqual", np.not_equal), ("greaterThan", np.greater),
            ("greaterThanOrEqualTo", np.greater_equal), ("lessThan", np.less),
            ("lessThanOrEqualTo", np.less_equal)]
    logic = [("logicalAND", np.logical_and), ("logicalOR", np.logical_or),
             ("logicalXOR", np.logical_xor),
             ("logicalNAND", lambda a, b: ~np.logical_and(a, b)),
             ("logicalNOR", lambda a, b: ~np.logical_or(a, b)),
             ("logicalXNOR", lambda a, b: ~np.logical_xor(a, b))]
    bits = [("bitwiseAND", np.bitwise_and), ("bitwiseOR", np.bitwise_or),
            ("bitwiseXOR", np.bitwise_xor), ("bitwiseLeftShift", shift(np.left_shift)),
            ("bitwiseRightShift", shift(np.right_shift))]
    out = []
    for name, ref in cmp_ + logic:
        out.append(("arithmetic: comparisons, logical (exact)", name,
                    (lambda n: lambda g, a, b: getattr(g, n)(a, b))(name), ref, floats))
    for name, ref in bits:
        out.append(("arithmetic: bitwise (exact)", name,
                    (lambda n: lambda g, a, b: getattr(g, n)(a, b))(name), ref, ints))
    out += [
        ("arithmetic: bitwise (exact)", "bitwiseNOT", lambda g, a, b: g.bitwiseNOT(a),
         lambda a, b: np.invert(a), ints),
        ("arithmetic: bitwise (exact)", "bitwisePopulationCount",
         lambda g, a, b: g.bitwisePopulationCount(a),
         lambda a, b: np.array([bin(v & 0xFFFFFFFF).count("1") for v in a.reshape(-1).tolist()],
                               np.int32).reshape(a.shape), ints),
        ("arithmetic: classification (exact)", "isNaN", lambda g, a, b: g.isNaN(a),
         lambda a, b: np.isnan(a), floats),
        ("arithmetic: classification (exact)", "isInfinite", lambda g, a, b: g.isInfinite(a),
         lambda a, b: np.isinf(a), floats),
        ("arithmetic: classification (exact)", "isFinite", lambda g, a, b: g.isFinite(a),
         lambda a, b: np.isfinite(a), floats),
        ("arithmetic: classification (exact)", "signbit", lambda g, a, b: g.signbit(a),
         lambda a, b: np.signbit(a), floats),
        ("arithmetic: classification (exact)", "not", lambda g, a, b: g.not_(a),
         lambda a, b: a == 0, floats),
        ("arithmetic: complex parts (exact)", "complexTensor, realPartOfTensor",
         lambda g, a, b: g.realPartOfTensor(g.complexTensor(a, imaginaryTensor=b)),
         lambda a, b: a, floats),
        ("arithmetic: complex parts (exact)", "imaginaryPartOfTensor",
         lambda g, a, b: g.imaginaryPartOfTensor(g.complexTensor(a, imaginaryTensor=b)),
         lambda a, b: b, floats),
        ("arithmetic: complex parts (exact)", "conjugate",
         lambda g, a, b: g.imaginaryPartOfTensor(g.conjugate(g.complexTensor(
             a, imaginaryTensor=b))), lambda a, b: -b, floats),
        ("arithmetic: complex parts (exact)", "planarTensor",
         lambda g, a, b: g.planarTensor(g.complexTensor(a, imaginaryTensor=b)),
         lambda a, b: np.concatenate([a, b], axis=-1), floats),
        ("reduction: arg, truth (exact)", "reductionArgMaximum",
         lambda g, a, b: g.reductionArgMaximum(b, axis=1),
         lambda a, b: np.argmax(np.where(np.isnan(b), np.inf, b), axis=1)[:, None], floats),
        ("reduction: arg, truth (exact)", "reductionArgMinimum",
         lambda g, a, b: g.reductionArgMinimum(a, axis=0),
         lambda a, b: np.argmin(np.where(np.isnan(a), -np.inf, a), axis=0)[None], floats),
        ("reduction: arg, truth (exact)", "reductionAnd",
         lambda g, a, b: g.reductionAnd(a, axis=1),
         lambda a, b: np.all(a != 0, axis=1, keepdims=True), ints),
        ("reduction: arg, truth (exact)", "reductionOr",
         lambda g, a, b: g.reductionOr(b, axes=[0, 1]),
         lambda a, b: np.any(b != 0, keepdims=True), ints),
    ]
    return out + _more_exact_table()


def exact_sweep(device: Device, rng: np.random.Generator) -> Iterator[Row]:
    """The ops without a gradient: results equal to NumPy's, exactly (0 mismatches)."""
    rows: dict[str, Row] = {}
    for fam, op, build, ref, make in _exact_table():
        if fam not in rows:
            names = [o for f, o, *_ in _exact_table() if f == fam]
            rows[fam] = Row(fam, "exact: " + ", ".join(names), tol=0.0)
        args = make(rng)
        g = Graph()
        ph = [g.placeholder(list(a.shape), DataType.from_numpy(a.dtype)) for a in args]
        y = build(g, *ph)
        got = g.run(dict(zip(ph, args)), [y], device=device)[y].numpy()
        want = np.asarray(ref(*args))
        same = got.shape == want.shape and np.array_equal(  # NaN where NumPy has NaN
            got.astype(np.float64), want.astype(np.float64), equal_nan=True)
        rows[fam].add(0.0 if same else float(np.sum(got != want) if got.shape == want.shape
                                             else np.inf), op)
    yield from rows.values()


# ----------------------------------------------------------------------------- more model ops
def _more_ops_table():
    """Differentiable ops of the shape, gather / scatter, activation, sort, sample-grid and
    control-flow families beyond the basic rows (same columns as `_ops_table`); integer
    operands (indices, predicates) are constants inside the graph."""
    from .descriptors import ImToColOpDescriptor
    from .types import ResizeMode

    c = lambda g, v: g.constant(np.asarray(v))  # noqa: E731
    nd_idx = np.array([[0, 1], [2, 3], [0, 1]], np.int32)  # a duplicate row
    ax_idx = np.array([[3, 0], [1, 1], [0, 2]], np.int32)  # along axis 1 of [3, 4]

    def scatter_nd(upd, base):
        out = base.copy()
        np.add.at(out, (nd_idx[:, 0], nd_idx[:, 1]), upd)
        return out

    def scatter_axis(upd, base):
        out = base.copy()
        np.add.at(out, (np.arange(3)[:, None].repeat(2, 1), ax_idx), upd)
        return out

    def s2b(a):  # [N, C, H, W] -> [(hy, wx, n), C, H/2, W/2], the interleaved order
        n, ch, h, w = a.shape
        return a.reshape(n, ch, h // 2, 2, w // 2, 2).transpose(3, 5, 0, 1, 2, 4).reshape(
            4 * n, ch, h // 2, w // 2)

    def b2s(a):  # [(n, hy, wx), C, H, W] -> [n, C, 2H, 2W], the pixel-shuffle order
        b, ch, h, w = a.shape
        return a.reshape(b // 4, 2, 2, ch, h, w).transpose(0, 3, 4, 1, 5, 2).reshape(
            b // 4, ch, 2 * h, 2 * w)

    def d2s(a):  # [N, (hy, wx, c), H, W] -> [N, c, 2H, 2W], the interleaved order
        n, d, h, w = a.shape
        return a.reshape(n, 2, 2, d // 4, h, w).transpose(0, 3, 4, 1, 5, 2).reshape(
            n, d // 4, 2 * h, 2 * w)

    coords = np.array([[[[-0.9, -0.7], [0.1, 0.35], [1.2, 0.6]],
                        [[0.45, -1.3], [-0.3, 0.8], [0.7, 0.05]]]])  # [1, 2, 3, (x, y)]

    def sample_ref(a):  # NHWC, normalized, alignCorners False, bilinear, zero padding
        n, h, w, ch = a.shape
        px = ((coords[..., 0] + 1) * w - 1) / 2
        py = ((coords[..., 1] + 1) * h - 1) / 2
        x0, y0 = np.floor(px).astype(int), np.floor(py).astype(int)
        out = np.zeros(coords.shape[:3] + (ch,))
        for dy_ in (0, 1):
            for dx_ in (0, 1):
                yy, xx = y0 + dy_, x0 + dx_
                wgt = (1 - np.abs(py - yy)) * (1 - np.abs(px - xx))
                ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
                val = a[0][np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]
                out += (wgt * ok)[..., None] * val
        return out

    def sample_near_ref(a):  # NCHW, alignCorners, nearest (roundPreferCeil), clampToEdge
        n, ch, h, w = a.shape
        ix = np.clip(np.floor((coords[..., 0] + 1) * (w - 1) / 2 + 0.5), 0, w - 1).astype(int)
        iy = np.clip(np.floor((coords[..., 1] + 1) * (h - 1) / 2 + 0.5), 0, h - 1).astype(int)
        return a[0][:, iy[0], ix[0]][None]

    im = ImToColOpDescriptor(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2)

    def col_to_im(a):  # [n, c * 4 (window), 4 (positions)] -> [n, c, 4, 4], windows disjoint
        return a.reshape(2, 2, 2, 2, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 4)

    T = lambda: True  # noqa: E731
    F = lambda: False  # noqa: E731
    return [
        ("shape: broadcast, dims, split", "broadcast", lambda g, a: g.broadcast(a, [2, 3, 4]),
         lambda a: np.broadcast_to(a, (2, 3, 4)), [(3, 1)], "any"),
        ("shape: broadcast, dims, split", "expandDims", lambda g, a: g.expandDims(a, axis=1),
         lambda a: a[:, None], [(2, 3)], "any"),
        ("shape: broadcast, dims, split", "squeeze", lambda g, a: g.squeeze(a, axis=1),
         lambda a: a[:, 0], [(2, 1, 3)], "any"),
        ("shape: broadcast, dims, split", "flatten2D", lambda g, a: g.flatten2D(a, 1),
         lambda a: a.reshape(2, 12), [(2, 3, 4)], "any"),
        ("shape: broadcast, dims, split", "split", lambda g, a: g.split(a, [1, 2], axis=1)[1],
         lambda a: a[:, 1:3], [(2, 3)], "any"),
        ("shape: broadcast, dims, split", "transposeTensor",
         lambda g, a: g.transposeTensor(a, 0, 2), lambda a: np.swapaxes(a, 0, 2),
         [(2, 3, 4)], "any"),
        ("shape: broadcast, dims, split", "sliceUpdateDataTensor",
         lambda g, a, b: g.sliceUpdateDataTensor(a, b, [1, 0], [3, 3], [1, 1]),
         lambda a, b: np.concatenate([a[:1], b, a[3:]]), [(4, 3), (2, 3)], "any"),
        ("shape: space, batch, depth", "spaceToBatch", lambda g, a: g.spaceToBatch(
            a, spatialAxes=[2, 3], batchAxis=0, blockDimensions=[2, 2],
            usePixelShuffleOrder=False), s2b, [(2, 2, 4, 2)], "any"),
        ("shape: space, batch, depth", "batchToSpace", lambda g, a: g.batchToSpace(
            a, spatialAxes=[2, 3], batchAxis=0, blockDimensions=[2, 2],
            usePixelShuffleOrder=True), b2s, [(8, 2, 2, 1)], "any"),
        ("shape: space, batch, depth", "spaceToBatch pixel-shuffle order, axes [3, 1]",
         lambda g, a: g.spaceToBatch(a, spatialAxes=[3, 1], batchAxis=2,
                                     blockDimensions=[2, 1], usePixelShuffleOrder=True),
         lambda a: a.reshape(2, 3, 2, 2, 2).transpose(0, 1, 2, 4, 3).reshape(2, 3, 4, 2),
         [(2, 3, 2, 4)], "any"),
        ("shape: space, batch, depth", "depthToSpace2D", lambda g, a: g.depthToSpace2D(
            a, widthAxis=3, heightAxis=2, depthAxis=1, blockSize=2,
            usePixelShuffleOrder=False), d2s, [(2, 8, 2, 3)], "any"),
        ("gather: ND, along axis", "gatherND",
         lambda g, a: g.gatherND(a, indicesTensor=c(g, nd_idx)),
         lambda a: a[nd_idx[:, 0], nd_idx[:, 1]], [(3, 4, 2)], "any"),
        ("gather: ND, along axis", "gatherAlongAxis",
         lambda g, a: g.gatherAlongAxis(1, updates=a, indices=c(g, ax_idx)),
         lambda a: np.take_along_axis(a, ax_idx, 1), [(3, 4)], "any"),
        ("gather: ND, along axis", "gatherAlongAxisTensor",
         lambda g, a: g.gatherAlongAxisTensor(c(g, np.int32(1)), updates=a,
                                              indices=c(g, ax_idx)),
         lambda a: np.take_along_axis(a, ax_idx, 1), [(3, 4)], "any"),
        ("scatter: ND, along axis (add, duplicates)", "scatterND",
         lambda g, u: g.scatterND(u, indicesTensor=c(g, nd_idx), shape=[3, 4, 2]),
         lambda u: scatter_nd(u, np.zeros((3, 4, 2))), [(3, 2)], "any"),
        ("scatter: ND, along axis (add, duplicates)", "scatterNDWithData",
         lambda g, d, u: g.scatterNDWithData(d, updates=u, indices=c(g, nd_idx)),
         lambda d, u: scatter_nd(u, d), [(3, 4, 2), (3, 2)], "any"),
        ("scatter: ND, along axis (add, duplicates)", "scatterAlongAxis",
         lambda g, d, u: g.scatterAlongAxis(1, data=d, updates=u, indices=c(g, ax_idx),
                                            mode=ScatterMode.add),
         lambda d, u: scatter_axis(u, d), [(3, 4), (3, 2)], "any"),
        ("scatter: ND, along axis (add, duplicates)", "scatterAlongAxisTensor",
         lambda g, u: g.scatterAlongAxisTensor(c(g, np.int32(-1)), updates=u,
                                               indices=c(g, ax_idx), shape=[3, 4],
                                               mode=ScatterMode.add),
         lambda u: scatter_axis(u, np.zeros((3, 4))), [(3, 2)], "any"),
        ("activation, sort, sampleGrid, colToIm (more)", "leakyReLU",
         lambda g, a: g.leakyReLU(a, 0.2), lambda a: np.where(a > 0, a, 0.2 * a), [(3, 4)],
         "away0"),
        ("activation, sort, sampleGrid, colToIm (more)", "bottomK (bottomKGradient)",
         lambda g, a: g.bottomK(a, k=2)[0], lambda a: np.sort(a, axis=-1)[..., :2], [(3, 5)],
         "any"),
        ("activation, sort, sampleGrid, colToIm (more)",
         "sampleGrid bilinear (sampleGridGradient)",
         lambda g, a: g.sampleGrid(a, g.constant(coords.astype(np.float32))), sample_ref,
         [(1, 3, 4, 2)], "any"),
        ("activation, sort, sampleGrid, colToIm (more)",
         "sampleGrid nearest, alignCorners, clampToEdge, NCHW",
         lambda g, a: g.sampleGrid(a, g.constant(coords.astype(np.float32)), layout=L.NCHW,
                                   alignCorners=True, paddingMode=PaddingMode.clampToEdge,
                                   samplingMode=ResizeMode.nearest), sample_near_ref,
         [(1, 2, 3, 4)], "any"),
        ("activation, sort, sampleGrid, colToIm (more)", "colToIm",
         lambda g, a: g.colToIm(a, [2, 2, 4, 4], im), col_to_im, [(2, 8, 4)], "any"),
        ("control flow: if_", "if_ (then taken)", lambda g, a, b: g.if_(
            g.constant(np.array(T())), then=lambda: [g.multiplication(a, g.exponent(b))],
            elseBlock=lambda: [g.square(b)])[0], lambda a, b: a * np.exp(b), [(2, 3), (2, 3)],
         "any"),
        ("control flow: if_", "if_ (else taken)", lambda g, a, b: g.if_(
            g.constant(np.array(F())), then=lambda: [g.multiplication(a, g.exponent(b))],
            elseBlock=lambda: [g.multiplication(g.square(b), a)])[0],
         lambda a, b: b * b * a, [(2, 3), (2, 3)], "any"),
    ]


def _num_vjp(f, args, wrt, dy, eps=1e-6):
    """d <dy, f(args)> / d args[wrt], element by element by central differences (float64)."""
    x = args[wrt]
    out = np.zeros(x.shape)
    for i in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[i] = eps
        plus = list(args)
        plus[wrt] = x + e
        minus = list(args)
        minus[wrt] = x - e
        out[i] = (np.vdot(dy, f(*plus)) - np.vdot(dy, f(*minus))) / (2 * eps)
    return out


def _gradient_ops_table():
    """(family, op, build(g, dy, *tensors), forward f64 reference f(*arrays), index of the
    argument differentiated, input shapes, input domain): the explicit gradient ops, called
    directly; each must equal d <dy, f> / d args[wrt], computed element by element by
    central differences of the forward reference."""
    from .descriptors import (
        Convolution2DOpDescriptor,
        Convolution3DOpDescriptor,
        DepthwiseConvolution2DOpDescriptor,
        DepthwiseConvolution3DOpDescriptor,
        Pooling2DOpDescriptor,
        Pooling4DOpDescriptor,
    )

    pool = Pooling2DOpDescriptor(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2)
    p4 = Pooling4DOpDescriptor(kernelSizes=[1, 1, 2, 2], strides=[1, 1, 2, 2])

    def win(a):  # [n, c, 4, 4] -> [n, c, 2, 2, 4]: the 2x2 windows of stride 2
        n, ch = a.shape[:2]
        return a.reshape(n, ch, 2, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, ch, 2, 2, 4)

    def sm(a):
        e = np.exp(a - a.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def ce(a, lab):
        z = a - a.max(-1, keepdims=True)
        return np.array([[-(lab * (z - np.log(np.exp(z).sum(-1, keepdims=True)))).sum()
                          / a.shape[0]]])

    def xhat(x):
        m, v = x.mean(axis=(0, 2), keepdims=True), x.var(axis=(0, 2), keepdims=True)
        return (x - m) / np.sqrt(v + np.float64(np.float32(1e-3)))

    def stats(g, x):
        return g.mean(x, [0, 2]), g.variance(x, axes=[0, 2])

    def norm_grad(g, dy, x, gm):
        m, v = stats(g, x)
        gg = g.normalizationGammaGradient(dy, x, m, v, [0, 2], 1e-3)
        bg = g.normalizationBetaGradient(dy, x, [0, 2])
        return g.normalizationGradient(dy, x, m, v, gm, gg, bg, [0, 2], 1e-3)

    def conv3d(x, w):  # stride 1, unpadded
        kd, kh, kw = w.shape[2:]
        do, ho, wo = (s - k + 1 for s, k in zip(x.shape[2:], w.shape[2:]))
        y = 0.0
        for a in range(kd):
            for b in range(kh):
                for e in range(kw):
                    y = y + np.einsum("ncdhw,oc->nodhw",
                                      x[:, :, a:a + do, b:b + ho, e:e + wo], w[:, :, a, b, e])
        return y

    def dw(x, w):  # depthwise, w [M, C, 3, 3], pad 1
        m, ch = w.shape[:2]
        return ref_conv(x, w.transpose(1, 0, 2, 3).reshape(ch * m, 1, 3, 3), 1, 1, 1, 1, 1, 1,
                        ch, x.shape[2], x.shape[3])

    d3 = Convolution3DOpDescriptor()
    dw2 = DepthwiseConvolution2DOpDescriptor(paddingLeft=1, paddingRight=1, paddingTop=1,
                                             paddingBottom=1)
    dw3 = DepthwiseConvolution3DOpDescriptor(paddingValues=[0, 0, 1, 1, 1, 1],
                                             channelDimensionIndex=-3)
    tr = Convolution2DOpDescriptor(strideInX=2, strideInY=2, paddingTop=1, paddingLeft=1,
                                   paddingBottom=1, paddingRight=1)
    tconv = lambda x, w: ref_conv_data_grad(x, w, (1, 2, 5, 5), 2, 2, 1, 1, 1, 1, 1)  # noqa
    pix = Pooling2DOpDescriptor(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2,
                                returnIndicesMode=2)  # globalFlatten2D
    p4x = Pooling4DOpDescriptor(kernelSizes=[1, 1, 2, 2], strides=[1, 1, 2, 2],
                                returnIndicesMode=4)  # globalFlatten4D

    def sgrad(g, dy, x, lab):
        y = g.softMaxCrossEntropy(x, lab, -1, reductionType=LossReductionType.mean)
        p = g.reductionSum(g.multiplication(y, dy), axes=[0, 1])
        return g.gradientForPrimaryTensor(p, [lab])[lab]

    A = "activation gradient ops"
    P = "pooling gradient ops"
    S = "shape, sort gradient ops"
    C = "convolution gradient ops"
    N = "normalization, loss, resize gradient ops"
    return [
        (A, "reLUGradient", lambda g, dy, x: g.reLUGradient(dy, x),
         lambda x: np.maximum(x, 0), 0, [(3, 4)], "away0"),
        (A, "sigmoidGradient", lambda g, dy, x: g.sigmoidGradient(dy, x),
         lambda x: 1 / (1 + np.exp(-x)), 0, [(3, 4)], "any"),
        (A, "softMaxGradient", lambda g, dy, x: g.softMaxGradient(dy, x, -1), sm, 0,
         [(3, 4)], "any"),
        (A, "leakyReLUGradient", lambda g, dy, x: g.leakyReLUGradient(
            dy, x, g.constant(0.3, dataType=DataType.float32)),
         lambda x: np.where(x > 0, x, 0.3 * x), 0, [(3, 4)], "away0"),
        (P, "maxPooling2DGradient", lambda g, dy, x: g.maxPooling2DGradient(dy, x, pool),
         lambda x: win(x).max(-1), 0, [(2, 2, 4, 4)], "any"),
        (P, "avgPooling2DGradient", lambda g, dy, x: g.avgPooling2DGradient(dy, x, pool),
         lambda x: win(x).mean(-1), 0, [(2, 2, 4, 4)], "any"),
        (P, "maxPooling4DGradient", lambda g, dy, x: g.maxPooling4DGradient(dy, x, p4),
         lambda x: win(x).max(-1), 0, [(2, 2, 4, 4)], "any"),
        (P, "avgPooling4DGradient", lambda g, dy, x: g.avgPooling4DGradient(dy, x, p4),
         lambda x: win(x).mean(-1), 0, [(2, 2, 4, 4)], "any"),
        (P, "L2NormPooling4DGradient", lambda g, dy, x: g.L2NormPooling4DGradient(dy, x, p4),
         lambda x: np.sqrt((win(x) ** 2).sum(-1)), 0, [(2, 2, 4, 4)], "any"),
        (P, "maxPooling2DGradient from maxPooling2DReturnIndices "
         "(maxPooling2DGradientIndices)", lambda g, dy, x: g.maxPooling2DGradient(
             dy, indicesTensor=g.maxPooling2DReturnIndices(x, pix)[1], outputShape=[2, 2, 4, 4],
             descriptor=pix), lambda x: win(x).max(-1), 0, [(2, 2, 4, 4)], "any"),
        (P, "maxPooling4DGradient from maxPooling4DReturnIndices "
         "(maxPooling4DGradientIndices)", lambda g, dy, x: g.maxPooling4DGradient(
             dy, indicesTensor=g.maxPooling4DReturnIndices(x, p4x)[1], outputShape=[2, 2, 4, 4],
             descriptor=p4x), lambda x: win(x).max(-1), 0, [(2, 2, 4, 4)], "any"),
        (S, "padGradient", lambda g, dy, x: g.padGradient(dy, x, PaddingMode.reflect, [1, 2],
                                                          [2, 1]),
         lambda x: np.pad(x, [(1, 2), (2, 1)], mode="reflect"), 0, [(3, 4)], "any"),
        (S, "tileGradient", lambda g, dy, x: g.tileGradient(dy, x, [2, 3]),
         lambda x: np.tile(x, (2, 3)), 0, [(2, 3)], "any"),
        (S, "sliceGradientTensor", lambda g, dy, x: g.sliceGradientTensor(
            dy, [3, 5], [0, 4], [3, 0], [2, -2]), lambda x: x[0:3:2, 4:0:-2], 0, [(3, 5)],
         "any"),
        (S, "topKGradient", lambda g, dy, x: g.topKGradient(dy, source=x, k=2),
         lambda x: -np.sort(-x, axis=-1)[..., :2], 0, [(3, 5)], "any"),
        (S, "bottomKGradient", lambda g, dy, x: g.bottomKGradient(dy, source=x, k=3, axis=0),
         lambda x: np.sort(x, axis=0)[:3], 0, [(4, 3)], "any"),
        (C, "convolution3DDataGradient", lambda g, dy, x, w: g.convolution3DDataGradient(
            dy, w, [1, 2, 3, 3, 3], d3), conv3d, 0, [(1, 2, 3, 3, 3), (2, 2, 2, 2, 2)], "any"),
        (C, "convolution3DWeightsGradient", lambda g, dy, x, w:
         g.convolution3DWeightsGradient(dy, x, [2, 2, 2, 2, 2], d3), conv3d, 1,
         [(1, 2, 3, 3, 3), (2, 2, 2, 2, 2)], "any"),
        (C, "depthwiseConvolution2DDataGradient", lambda g, dy, x, w:
         g.depthwiseConvolution2DDataGradient(dy, w, [1, 2, 3, 3], dw2), dw, 0,
         [(1, 2, 3, 3), (2, 2, 3, 3)], "any"),
        (C, "depthwiseConvolution2DWeightsGradient", lambda g, dy, x, w:
         g.depthwiseConvolution2DWeightsGradient(dy, x, [2, 2, 3, 3], dw2), dw, 1,
         [(1, 2, 3, 3), (2, 2, 3, 3)], "any"),
        (C, "depthwiseConvolution3DDataGradient", lambda g, dy, x, w:
         g.depthwiseConvolution3DDataGradient(dy, w, [2, 2, 3, 3], dw3), dw, 0,
         [(2, 2, 3, 3), (1, 2, 3, 3)], "any"),
        (C, "depthwiseConvolution3DWeightsGradient", lambda g, dy, x, w:
         g.depthwiseConvolution3DWeightsGradient(dy, x, [1, 2, 3, 3], dw3), dw, 1,
         [(2, 2, 3, 3), (1, 2, 3, 3)], "any"),
        (C, "convolutionTranspose2DDataGradient", lambda g, dy, x, w:
         g.convolutionTranspose2DDataGradient(dy, w, [1, 3, 3, 3], tr), tconv, 0,
         [(1, 3, 3, 3), (3, 2, 3, 3)], "any"),
        (C, "convolutionTranspose2DWeightsGradient", lambda g, dy, x, w:
         g.convolutionTranspose2DWeightsGradient(dy, source=x, outputShape=[3, 2, 3, 3],
                                                 forwardConvolutionDescriptor=tr), tconv, 1,
         [(1, 3, 3, 3), (3, 2, 3, 3)], "any"),
        (N, "normalizationGradient (with normalizationGammaGradient, "
         "normalizationBetaGradient)", norm_grad, lambda x, gm: xhat(x) * gm, 0,
         [(3, 2, 4), (1, 2, 1)], "any"),
        (N, "normalizationGammaGradient", lambda g, dy, x, gm: g.normalizationGammaGradient(
            dy, x, *stats(g, x), [0, 2], 1e-3), lambda x, gm: xhat(x) * gm, 1,
         [(3, 2, 4), (1, 2, 1)], "any"),
        (N, "normalizationBetaGradient", lambda g, dy, x, b: g.normalizationBetaGradient(
            dy, x, [0, 2]), lambda x, b: xhat(x) + b, 1, [(3, 2, 4), (1, 2, 1)], "any"),
        (N, "softMaxCrossEntropyGradient", lambda g, dy, x, lab: g.softMaxCrossEntropyGradient(
            dy, x, lab, -1, reductionType=LossReductionType.mean), ce, 0, [(3, 4), (3, 4)],
         "labels"),
        (N, "softMaxCrossEntropyLabelsGradient (via gradientForPrimaryTensor)", sgrad, ce, 1,
         [(3, 4), (3, 4)], "labels"),
        (N, "resizeBilinear gradient form (resizeWithGradient)",
         lambda g, dy, x: g.resizeBilinear(dy, input=x, layout=L.NCHW, alignCorners=True),
         lambda x: np.einsum("oh,nchw,pw->ncop", _align_corners(3, 5), x,
                             _align_corners(3, 4)), 0, [(1, 2, 3, 3)], "any"),
    ]


def _moved(f, args, wrt, u, vs, s, t, w) -> float:
    """<w, f(args + s u (in argument wrt) + t vs (in the first len(vs) arguments))>."""
    moved = [a + t * v for a, v in zip(args, vs)] + list(args[len(vs):])
    moved[wrt] = moved[wrt] + s * u
    return float(np.vdot(w, f(*moved)))


def gradient_ops_sweep(device: Device, rng: np.random.Generator) -> Iterator[Row]:
    """The gradient ops called directly (not through gradientForPrimaryTensor): each vs the
    element-by-element central differences of its forward's float64 reference. Those with a
    gradient rule also get it checked: P = sum(u * op(dy, x..)) = <dy, J u> (J the forward's
    Jacobian in the argument differentiated), so dP/d dy is the forward's derivative along u
    and dP/dx a mixed second difference of <dy, f>, both by central differences of f."""
    from .ops._registry import OPS

    rows: dict[str, tuple[Row, Row]] = {}
    for fam, op, build, f, wrt, shapes, domain in _gradient_ops_table():
        if fam not in rows:
            names = [o for fa, o, *_ in _gradient_ops_table() if fa == fam]
            rows[fam] = (Row(fam, "vs finite differences of the forward: " + ", ".join(names),
                             tol=1e-5),
                         Row(fam, "gradient rules of those with one, via "
                             "gradientForPrimaryTensor vs finite differences", tol=1e-4))
        args = []
        for i, sh in enumerate(shapes):
            a = rng.standard_normal(sh)
            if domain == "away0":
                a = np.sign(a) * (np.abs(a) + 0.1)
            elif domain == "labels" and i == 1:
                a = np.eye(sh[-1])[rng.integers(0, sh[-1], sh[0])] * 0.8 + 0.05
            args.append(a.astype(np.float32).astype(np.float64))
        dy = rng.standard_normal(np.shape(f(*args))).astype(np.float32).astype(np.float64)
        g = Graph()
        ph = [g.placeholder(list(a.shape)) for a in args]
        dyt = g.placeholder(list(dy.shape))
        y = build(g, dyt, *ph)
        feeds = {t: a.astype(np.float32) for t, a in zip(ph, args)}
        feeds[dyt] = dy.astype(np.float32)
        has_rule = OPS[y.operation.kind].grad is not None
        fetch = [y]
        if has_rule:
            u = rng.standard_normal(args[wrt].shape)
            primary = g.reductionSum(g.multiplication(y, g.constant(u.astype(np.float32))),
                                     axes=list(range(len(u.shape))))
            diff = [dyt] + [t for t, a in zip(ph, args) if not (domain == "labels"
                                                                 and a is args[-1])]
            grads = g.gradientForPrimaryTensor(primary, diff)
            fetch += [grads[t] for t in diff]
        out = g.run(feeds, fetch, device=device)
        want = _num_vjp(f, args, wrt, dy)
        rows[fam][0].add(_rel_err(out[y].numpy(), want), op)
        if not has_rule:
            continue
        vs = [rng.standard_normal(a.shape) for a in [dy] + args[:len(diff) - 1]]
        e, h = 1e-6, 1e-4
        m = [_moved(f, args, wrt, u, vs[1:], s_, t_, w) for s_, t_, w in (
            (e, 0, vs[0]), (-e, 0, vs[0]), (h, h, dy), (h, -h, dy), (-h, h, dy), (-h, -h, dy))]
        num = (m[0] - m[1]) / (2 * e) + (m[2] - m[3] - m[4] + m[5]) / (4 * h * h)
        ana = scale = 0.0
        for t, v in zip(diff, vs):
            gt = out[grads[t]].numpy().astype(np.float64)
            ana += np.vdot(gt, v)
            scale += np.vdot(np.abs(gt), np.abs(v))
        rows[fam][1].add(abs(num - ana) / max(scale, 1.0), op)
    for fwd, bwd in rows.values():
        yield fwd
        if bwd.cases:
            yield bwd


def _more_exact_table():
    """Rows of `_exact_table` for the integer / index results of the gather, shape, sort,
    quantization, sparse, NMS and pooling-index ops (references: plain NumPy)."""
    from .descriptors import Pooling2DOpDescriptor, Pooling4DOpDescriptor, StencilOpDescriptor
    from .types import ReductionMode, SparseStorageType

    def hamming(a, b):  # popcount(a[.., m, :] ^ b[.., n, :]) summed over k
        x = (a[..., :, None, :] ^ b[..., None, :, :]).astype(np.uint32)
        return sum(((x >> k) & 1).sum(-1) for k in range(32)).astype(np.uint32)

    def nms(boxes, scores, cls=None, iou_t=0.4, score_t=-np.inf):
        y1, x1, y2, x2 = (boxes[0][:, i] for i in range(4))
        lo_y, hi_y, lo_x, hi_x = np.minimum(y1, y2), np.maximum(y1, y2), np.minimum(
            x1, x2), np.maximum(x1, x2)
        s = scores[0][:, 0]
        kept = []
        for b in sorted((i for i in range(len(s)) if s[i] > score_t), key=lambda i: (-s[i], i)):
            ok = True
            for k in kept:
                if cls is not None and cls[0, b] != cls[0, k]:
                    continue  # perClassSuppression: only boxes of one class suppress
                ih = max(0.0, min(hi_y[b], hi_y[k]) - max(lo_y[b], lo_y[k]))
                iw = max(0.0, min(hi_x[b], hi_x[k]) - max(lo_x[b], lo_x[k]))
                inter = ih * iw
                union = ((hi_y[b] - lo_y[b]) * (hi_x[b] - lo_x[b])
                         + (hi_y[k] - lo_y[k]) * (hi_x[k] - lo_x[k]) - inter)
                ok &= (inter / union if union > 0 else 0.0) <= iou_t
            if ok:
                kept.append(b)
        return np.array([kept + [-1] * (len(s) - len(kept))], np.int32)

    def boxes(rng):
        cen, size = rng.uniform(0, 1.5, (1, 6, 2)), rng.uniform(0.5, 2, (1, 6, 2))
        b = np.concatenate([cen - size / 2, cen + size / 2], -1)
        b[0, 2] = b[0, 2, [2, 3, 0, 1]]  # corners in the other order
        return [b.astype(np.float32),
                (rng.permutation(6).reshape(1, 6, 1) / 5).astype(np.float32)]

    def pool_idx(rng):
        return [rng.permutation(2 * 2 * 4 * 4).reshape(2, 2, 4, 4).astype(np.float32)]

    def flat_argmax(a):  # h * 4 + w of each 2x2 window's maximum
        n, ch = a.shape[:2]
        v = a.reshape(n, ch, 2, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, ch, 2, 2, 4)
        k = v.argmax(-1)
        i, j = np.arange(2)[:, None], np.arange(2)[None]
        return ((2 * i + k // 2) * 4 + 2 * j + k % 2).astype(np.int32)

    pix = Pooling2DOpDescriptor(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2,
                                returnIndicesMode=2)  # globalFlatten2D: h * W + w
    p4x = Pooling4DOpDescriptor(kernelSizes=[1, 1, 2, 2], strides=[1, 1, 2, 2],
                                returnIndicesMode=2)  # globalFlatten2D
    quarters = lambda rng: [(rng.integers(-300, 300, (3, 4)) / 4).astype(np.float32)]  # noqa
    ints = lambda lo, hi, sh, dt=np.int32: lambda rng: [  # noqa: E731
        rng.integers(lo, hi, sh).astype(dt)]

    def sparse_in(rng):
        return [rng.integers(-8, 8, 7).astype(np.float32),
                rng.integers(0, 4, 7).astype(np.int32), rng.integers(0, 3, 7).astype(np.int32)]

    def sparse_ref(v, col, row):
        out = np.zeros((3, 4))
        np.add.at(out, (row, col), v)
        return out

    def special(rng):
        a = rng.uniform(-60, 60, (3, 4)).astype(np.float32)
        a.reshape(-1)[:4] = [np.nan, np.inf, -np.inf, 3e9]
        return [a]

    G = "gather, shape, sort (exact)"
    Q = "quantization, sparse, NMS, pooling indices (exact)"
    return [
        (G, "oneHot", lambda g, a: g.oneHot(a, 4, axis=0, onValue=2.0, offValue=-1.0),
         lambda a: np.where(np.arange(4)[:, None] == a[None], 2.0, -1.0), ints(0, 4, (5,))),
        (G, "coordinate", lambda g: g.coordinate(1, [2, 3, 2]),
         lambda: np.indices((2, 3, 2))[1], lambda rng: []),
        (G, "nonZeroIndices", lambda g, a: g.nonZeroIndices(a),
         lambda a: np.argwhere(a), ints(-1, 2, (3, 4))),
        (G, "HammingDistance", lambda g, a, b: g.HammingDistance(a, b), hamming,
         lambda rng: [rng.integers(-2**31, 2**31, (2, 3, 2)).astype(np.int32),
                      rng.integers(-2**31, 2**31, (2, 4, 2)).astype(np.int32)]),
        (G, "argSort descending (stable, ties)",
         lambda g, a: g.argSort(a, axis=1, descending=True),
         lambda a: np.argsort(-a, axis=1, kind="stable"), ints(0, 4, (3, 6))),
        (G, "shapeOf", lambda g, a: g.shapeOf(a), lambda a: np.array(a.shape),
         ints(0, 4, (3, 1, 2))),
        (G, "reinterpretCast float32 -> uInt8",
         lambda g, a: g.reinterpretCast(a, DataType.uInt8), lambda a: a.view(np.uint8),
         quarters),
        (G, "reinterpretCast int32 -> float32 (shape kept)",
         lambda g, a: g.reinterpretCast(a, DataType.float32), lambda a: a.view(np.float32),
         ints(-2**31, 2**31, (3, 4))),
        (G, "cast float32 -> int32 (truncate, saturate, NaN -> 0)",
         lambda g, a: g.cast(a, DataType.int32),
         lambda a: np.where(np.isnan(a), 0, np.clip(np.trunc(np.nan_to_num(a.astype(
             np.float64), posinf=3e9, neginf=-3e9)), -2**31, 2**31 - 1)), special),
        (G, "cast int32 -> float16", lambda g, a: g.cast(a, DataType.float16),
         lambda a: a.astype(np.float16), ints(-2048, 2048, (3, 4))),
        (Q, "quantize int8 (scale, zeroPoint, ties to even, saturate)",
         lambda g, a: g.quantize(a, 0.5, 3.0, dataType=DataType.int8),
         lambda a: np.clip(np.rint(a / 0.5 + 3), -128, 127), quarters),
        (Q, "quantize uInt8 per axis (scale, zeroPoint tensors)",
         lambda g, a: g.quantize(a, g.constant(np.float32([0.5, 0.25, 1, 2])), g.constant(
             np.float32([3, 0, 250, 1])), dataType=DataType.uInt8, axis=1),
         lambda a: np.clip(np.rint(a / np.array([0.5, 0.25, 1, 2]) + [3, 0, 250, 1]), 0, 255),
         quarters),
        (Q, "stencil argumentMax (first of ties)", lambda g, x: g.stencil(
            x, g.constant(np.float32([[[[1, -1], [2, 1]]]])), descriptor=StencilOpDescriptor(
                reductionMode=ReductionMode.argumentMax)),
         lambda x: np.stack([x[:, :, p:p + 3, q:q + 4] * wv for p, q, wv in (
             (0, 0, 1), (0, 1, -1), (1, 0, 2), (1, 1, 1))]).argmax(0),
         lambda rng: [rng.integers(-2, 3, (1, 2, 4, 5)).astype(np.float32)]),
        (Q, "dequantize int8", lambda g, a: g.dequantize(a, 0.25, 2.0,
                                                         dataType=DataType.float32),
         lambda a: 0.25 * (a.astype(np.float64) - 2), ints(-128, 128, (3, 4), np.int8)),
        (Q, "dequantize LUTTensor (dequantizeLUT)",
         lambda g, a: g.dequantize(a, LUTTensor=g.constant(
             np.linspace(-2, 2, 256).astype(np.float32))),
         lambda a: np.linspace(-2, 2, 256).astype(np.float32)[a], ints(0, 256, (3, 4),
                                                                       np.uint8)),
        (Q, "sparseTensor COO (duplicates summed)", lambda g, v, col, row: g.sparseTensor(
            SparseStorageType.COO, tensors=[v, col, row], shape=[3, 4],
            dataType=DataType.float32), sparse_ref, sparse_in),
        (Q, "nonMaximumSuppression", lambda g, b, s: g.nonMaximumSuppression(
            b, s, iouThreshold=0.4), nms, boxes),
        (Q, "nonMaximumSuppression classIndices, perClassSuppression, scoreThreshold",
         lambda g, b, s, k: g.nonMaximumSuppression(
             b, s, classIndicesTensor=k, iouThreshold=0.1, scoreThreshold=0.5,
             perClassSuppression=True),
         lambda b, s, k: nms(b, s, k, 0.1, 0.5), lambda rng: boxes(rng) + [
             rng.integers(0, 2, (1, 6)).astype(np.int32)]),
        (Q, "maxPooling2DReturnIndices (globalFlatten2D)",
         lambda g, a: g.maxPooling2DReturnIndices(a, pix)[1], flat_argmax, pool_idx),
        (Q, "maxPooling4DReturnIndices (globalFlatten2D)",
         lambda g, a: g.maxPooling4DReturnIndices(a, p4x)[1], flat_argmax, pool_idx),
    ]


# ----------------------------------------------------------------------------- forward-only
def _run_outs(device, build, args, **run_kw):
    g = Graph()
    ph = [g.placeholder(list(a.shape), DataType.from_numpy(a.dtype)) for a in args]
    outs = build(g, *ph)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    res = g.run(dict(zip(ph, args)), list(outs), device=device, **run_kw)
    return [res[t].numpy() for t in outs]


def _forward_table():
    """(family, op, run(device, *arrays) -> results, float64 reference(*arrays) -> results,
    inputs maker(rng)): the float ops without a gradient (FFT, stencil, optimizers) and the
    control-flow and memory ops, which run several graphs or read variables back."""
    from .descriptors import FFTDescriptor, StencilOpDescriptor
    from .types import FFTScalingMode, ReductionMode, ShapedType

    def f32(*shapes):
        return lambda rng: [rng.standard_normal(s).astype(np.float32) for s in shapes]

    def run(build, **kw):
        return lambda device, *a: _run_outs(device, build, list(a), **kw)

    def cplx(g, a, b):
        return g.complexTensor(a, imaginaryTensor=b)

    def stencil_ref(x, w, mode, pad, stride):
        xp = np.pad(x, [(0, 0), (0, 0), pad[0], pad[1]], mode=mode)
        kh, kw = w.shape[2:]
        ho, wo = (xp.shape[2] - kh) // stride + 1, (xp.shape[3] - kw) // stride + 1
        taps = np.stack([xp[:, :, p:p + stride * (ho - 1) + 1:stride,
                            q:q + stride * (wo - 1) + 1:stride] * w[0, 0, p, q]
                         for p in range(kh) for q in range(kw)])
        return taps

    st_sum = StencilOpDescriptor(explicitPadding=(0, 0, 0, 0, 1, 1, 0, 1))
    st_max = StencilOpDescriptor(reductionMode=ReductionMode.max, strides=(1, 1, 2, 2),
                                 explicitPadding=(0, 0, 0, 0, 1, 0, 2, 1),
                                 boundaryMode=PaddingMode.clampToEdge)

    def while_run(device, x):
        g = Graph()
        xt = g.placeholder(list(x.shape))
        one, half = g.constant(1, [], DataType.int32), g.constant(0.5, [], DataType.float32)

        def before(ins, results):
            results.extend(ins)
            return g.lessThan(ins[0], g.constant(3, [], DataType.int32))

        i, s = g.while_([g.constant(0, [], DataType.int32), xt], before=before,
                        after=lambda a: [g.addition(a[0], one),
                                         g.addition(g.multiplication(a[1], half), g.sin(a[1]))])
        out = g.run({xt: x}, [i, s], device=device)
        return [out[i].numpy(), out[s].numpy()]

    def while_ref(x):
        s = x.astype(np.float64)
        for _ in range(3):
            s = s * 0.5 + np.sin(s)
        return [np.array(3), s]

    def for_run(device, x):
        g = Graph()
        xt = g.placeholder(list(x.shape))
        third = g.constant(1.0 / 3.0, [], DataType.float32)
        r = g.for_(lowerBound=g.constant(5, [], DataType.int32),
                   upperBound=g.constant(-2, [], DataType.int32),
                   step=g.constant(-2, [], DataType.int32), initialBodyArguments=[xt],
                   body=lambda i, a: [g.addition(g.multiplication(a[0], third),
                                                 g.cast(i, DataType.float32))])[0]
        return [g.run({xt: x}, [r], device=device)[r].numpy()]

    def for_ref(x):
        s = x.astype(np.float64)
        for i in range(5, -2, -2):
            s = s / 3 + i
        return [s]

    def call_run(device, x, y):
        from .runtime.execution_descriptors import CompilationDescriptor, ExecutionDescriptor

        h = Graph()
        a, b = h.placeholder(list(x.shape)), h.placeholder(list(x.shape))
        t = ShapedType(list(x.shape), DataType.float32)
        callee = h.compile({a: t, b: t}, [h.multiplication(h.exponent(a), b), h.exponent(b)],
                           device=device)
        ed = ExecutionDescriptor(compilationDescriptor=CompilationDescriptor(
            callables={"f": callee}))
        return run(lambda g, p, q: g.call("f", inputTensors=[p, q], outputTypes=[t, t]),
                   executionDescriptor=ed)(device, x, y)

    def memory_run(device, init, x):
        g = Graph()
        v = g.variable(init, dataType=DataType.float32)
        xt = g.placeholder(list(x.shape))
        r, q = g.controlDependency([g.assign(v, g.addition(v, xt))], dependentBlock=lambda: [
            g.read(v), g.multiplication(v, g.constant(2.0, [], DataType.float32))])
        first = g.run({xt: x}, [r, q], device=device)
        after = g.run({}, [v], device=device)[v].numpy()
        # variableFromTensor: initialised once, from the first run's value
        w = g.variableFromTensor(g.negative(xt))
        rw = g.read(w)
        one = g.run({xt: x}, [rw], device=device)[rw].numpy()
        two = g.run({xt: init}, [rw], device=device)[rw].numpy()
        return [first[r].numpy(), first[q].numpy(), after, one, two]

    def memory_ref(init, x):
        new = init.astype(np.float64) + x
        return [new, 2 * new, new, -x.astype(np.float64), -x.astype(np.float64)]

    def sgd_apply(device, lr, x, gr):
        g = Graph()
        v = g.variable(x, dataType=DataType.float32)
        lt, gt = g.placeholder([]), g.placeholder(list(gr.shape))
        op = g.applyStochasticGradientDescent(lt, v, gt)
        g.run({lt: lr, gt: gr}, [], [op], device=device)
        return [g.run({}, [v], device=device)[v].numpy()]

    def adam_ref(lr, b1, b2, eps, p1, p2, v, m, s, vmax, gr):
        m2 = b1 * m + (1 - b1) * gr
        s2 = b2 * s + (1 - b2) * gr * gr
        vm2 = np.maximum(vmax, s2)
        lr_t = lr * np.sqrt(1 - p2) / (1 - p1)
        return [v - lr_t * m2 / (np.sqrt(vm2) + eps), m2, s2, vm2]

    def adam_in(rng):
        sc = [np.float32(x) for x in (0.1, 0.9, 0.999, 1e-3, 0.9 ** 3, 0.999 ** 3)]
        return [np.array(x, np.float32) for x in sc] + [
            rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(
                np.float32), rng.uniform(0, 1, 5).astype(np.float32),
            rng.uniform(0, 1, 5).astype(np.float32), rng.standard_normal(5).astype(np.float32)]

    def adam_build(g, lr, b1, b2, eps, p1, p2, v, m, s, vmax, gr):
        return g.adam(learningRate=lr, beta1=b1, beta2=b2, epsilon=eps, beta1Power=p1,
                      beta2Power=p2, values=v, momentum=m, velocity=s, maximumVelocity=vmax,
                      gradient=gr)

    inv = FFTDescriptor(inverse=True, scalingMode=FFTScalingMode.size)
    F = "fft (vs numpy.fft)"
    M = "stencil, optimizers"
    CF = "control flow, memory"
    return [
        (F, "fastFourierTransform real input", run(
            lambda g, a: g.fastFourierTransform(a, [1])), lambda a: [np.fft.fft(a, axis=1)],
         f32((3, 8))),
        (F, "fastFourierTransform inverse, size scaling, 2 axes", run(
            lambda g, a, b: g.fastFourierTransform(cplx(g, a, b), [0, -1], descriptor=inv)),
         lambda a, b: [np.fft.ifftn(a + 1j * b.astype(np.float64), axes=(0, 2))],
         f32((4, 2, 6), (4, 2, 6))),
        (F, "fastFourierTransform unitary scaling, axis -2", run(
            lambda g, a, b: g.fastFourierTransform(cplx(g, a, b), [-2], descriptor=FFTDescriptor(
                scalingMode=FFTScalingMode.unitary))),
         lambda a, b: [np.fft.fft(a + 1j * b.astype(np.float64), axis=-2, norm="ortho")],
         f32((5, 3), (5, 3))),
        (F, "realToHermiteanFFT", run(lambda g, a: g.realToHermiteanFFT(a, [0, 1])),
         lambda a: [np.fft.rfftn(a, axes=(0, 1))], f32((4, 6))),
        (F, "HermiteanToRealFFT (inverse, size scaling)", run(
            lambda g, a: g.HermiteanToRealFFT(g.realToHermiteanFFT(a, [1]), [1],
                                              descriptor=inv)),
         lambda a: [np.fft.irfft(np.fft.rfft(a, axis=1), n=8, axis=1)], f32((3, 8))),
        (F, "HermiteanToRealFFT (roundToOddHermitean, unscaled)", run(
            lambda g, a, b: g.HermiteanToRealFFT(cplx(g, a, b), [1], descriptor=FFTDescriptor(
                inverse=True, roundToOddHermitean=True))),
         lambda a, b: [7 * np.fft.irfft(a + 1j * b.astype(np.float64), n=7, axis=1)],
         f32((2, 4), (2, 4))),
        (M, "stencil sum, zero padding", run(
            lambda g, x, w: g.stencil(x, w, descriptor=st_sum)),
         lambda x, w: [stencil_ref(x, w, "constant", [(1, 1), (0, 1)], 1).sum(0)],
         f32((1, 2, 4, 5), (1, 1, 3, 2))),
        (M, "stencil maximum, clampToEdge, stride 2", run(
            lambda g, x, w: g.stencil(x, w, descriptor=st_max)),
         lambda x, w: [stencil_ref(x, w, "edge", [(1, 0), (2, 1)], 2).max(0)],
         f32((1, 2, 5, 6), (1, 1, 2, 3))),
        (M, "stochasticGradientDescent", run(
            lambda g, lr, v, gr: g.stochasticGradientDescent(lr, v, gr)),
         lambda lr, v, gr: [v - lr * gr.astype(np.float64)],
         lambda rng: [np.array(0.3, np.float32)] + f32((3, 4), (3, 4))(rng)),
        (M, "applyStochasticGradientDescent (the variable read back)", sgd_apply,
         lambda lr, v, gr: [v - lr * gr.astype(np.float64)],
         lambda rng: [np.array(0.3, np.float32)] + f32((3, 4), (3, 4))(rng)),
        (M, "adam (bias correction, maximumVelocity)", run(adam_build),
         lambda *a: adam_ref(*[x.astype(np.float64) for x in a]), adam_in),
        (CF, "while_ (counter, x / 2 + sin x)", while_run, while_ref, f32((2, 3))),
        (CF, "for_ (range 5 .. -2 step -2, index used)", for_run, for_ref, f32((2, 3))),
        (CF, "call (an Executable through callables)", call_run,
         lambda x, y: [np.exp(x.astype(np.float64)) * y, np.exp(y.astype(np.float64))],
         f32((2, 3), (2, 3))),
        (CF, "controlDependency: assign then read of a variable; variableFromTensor",
         memory_run, memory_ref, f32((2, 3), (2, 3))),
    ]


def forward_sweep(device: Device, rng: np.random.Generator) -> Iterator[Row]:
    """The forward-only float ops and the control-flow / memory ops vs float64 NumPy."""
    rows: dict[str, Row] = {}
    for fam, op, fn, ref, make in _forward_table():
        if fam not in rows:
            names = [o for f, o, *_ in _forward_table() if f == fam]
            rows[fam] = Row(fam, "forward: " + ", ".join(names), tol=1e-5)
        args = make(rng)
        got = fn(device, *args)
        want = ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in args])
        err = 0.0
        for a, b in zip(got, want):
            b = np.asarray(b)
            if a.shape != b.shape:
                err = float("inf")
                continue
            scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
            err = max(err, float(np.max(np.abs(a.astype(np.complex128) - b), initial=0.0))
                      / scale)
        rows[fam].add(err if len(got) == len(want) else float("inf"), op)
    yield from rows.values()


# ----------------------------------------------------------------------------- random
def random_sweep(device: Device, rng: np.random.Generator) -> Iterator[Row]:
    """The random ops: sample moments vs the distribution's, in units of 5 standard errors
    of the estimate (a row passes below 1), bounds, same-seed determinism, the Philox state,
    and dropout's mask, scale and gradient."""
    import math

    from .descriptors import RandomOpDescriptor
    from .types import RandomDistribution as RD
    from .types import RandomNormalSamplingMethod as SM

    n = 20000
    stats = Row("randomTensor, randomUniformTensor", "|sample mean, variance - exact| / "
                "(5 standard errors): uniform float / int32, normal invCDF / Box-Muller, "
                "truncatedNormal", tol=1.0)
    exact = Row("randomTensor, randomPhiloxStateTensor", "exact: bounds, same seed same "
                "values, state = seed's, stream continues, counter advanced", tol=0.0)

    def moments(row, x, mean, var, mu4, label):
        """mean and variance of the sample vs the exact ones, with their standard errors
        sqrt(var / n) and sqrt((mu4 - var^2) / n)."""
        x = x.astype(np.float64).reshape(-1)
        row.add(abs(x.mean() - mean) / (5 * math.sqrt(var / x.size)), label + " mean")
        row.add(abs(x.var() - var) / (5 * math.sqrt((mu4 - var * var) / x.size)),
                label + " variance")

    def draw(desc, seed=7):
        g = Graph()
        t = g.randomTensor([n], desc, seed=seed)
        return g.run({}, [t], device=device)[t].numpy()

    def normal_trunc(mu, sd, lo, hi):  # mean, variance, 4th central moment (numerically)
        z = np.linspace(lo, hi, 200001)
        p = np.exp(-0.5 * ((z - mu) / sd) ** 2)
        p /= np.trapezoid(p, z) if hasattr(np, "trapezoid") else np.trapz(p, z)
        integ = np.trapezoid if hasattr(np, "trapezoid") else np.trapz
        m = integ(z * p, z)
        return m, integ((z - m) ** 2 * p, z), integ((z - m) ** 4 * p, z)

    u = draw(RandomOpDescriptor(distribution=RD.uniform, dataType=DataType.float32, min=-1.0,
                                max=3.0))
    w = 4.0
    moments(stats, u, 1.0, w * w / 12, w ** 4 / 80, "uniform [-1, 3)")
    exact.add(float(np.sum((u < -1) | (u >= 3))), "uniform bounds")
    exact.add(float(np.sum(u != draw(RandomOpDescriptor(
        distribution=RD.uniform, dataType=DataType.float32, min=-1.0, max=3.0)))),
        "same seed")
    h = draw(RandomOpDescriptor(distribution=RD.uniform, dataType=DataType.float16))
    exact.add(float(np.sum((h < 0) | (h >= 1))), "float16 uniform [0, 1) after rounding")
    g = Graph()
    t = g.randomUniformTensor([n], seed=3)
    uu = g.run({}, [t], device=device)[t].numpy()
    moments(stats, uu, 0.5, 1 / 12, 1 / 80, "randomUniformTensor")
    exact.add(float(np.sum((uu < 0) | (uu >= 1))), "randomUniformTensor bounds")
    k = draw(RandomOpDescriptor(distribution=RD.uniform, dataType=DataType.int32,
                                minInteger=-3, maxInteger=4))
    exact.add(float(np.sum((k < -3) | (k > 4))), "int32 bounds")
    vals = np.arange(-3, 5)
    moments(stats, k, vals.mean(), vals.var(), ((vals - vals.mean()) ** 4).mean(),
            "int32 [-3, 4]")
    for label, sm in (("invCDF", SM.invCDF), ("Box-Muller", SM.boxMuller)):
        d = RandomOpDescriptor(distribution=RD.normal, dataType=DataType.float32, mean=0.5,
                               standardDeviation=2.0, samplingMethod=sm)
        moments(stats, draw(d), 0.5, 4.0, 3 * 16.0, f"normal {label}")
        d = RandomOpDescriptor(distribution=RD.truncatedNormal, dataType=DataType.float32,
                               mean=0.5, standardDeviation=2.0, min=-1.0, max=2.0,
                               samplingMethod=sm)
        x = draw(d)
        moments(stats, x, *normal_trunc(0.5, 2.0, -1.0, 2.0), f"truncatedNormal {label}")
        exact.add(float(np.sum((x < -1) | (x >= 2))), f"truncatedNormal {label} bounds")
    # the state: randomPhiloxStateTensor(seed) is the seed form's state, and it advances
    g = Graph()
    st = g.randomPhiloxStateTensor(11)
    v1, st1 = g.randomTensor([10], RandomOpDescriptor(), stateTensor=st)
    v2, st2 = g.randomTensor([10], RandomOpDescriptor(), stateTensor=st1)
    same = g.randomTensor([10], RandomOpDescriptor(), seed=11)
    out = g.run({}, [st, v1, st1, v2, st2, same], device=device)
    exact.add(float(np.sum(out[st].numpy() != np.array([1, 0, 0, 0, 0, 11, 0]))), "state")
    exact.add(float(np.sum(out[v1].numpy() != out[same].numpy())), "state = seed form")
    exact.add(float(np.sum(out[st1].numpy()[1:] != [3, 0, 0, 0, 11, 0])
                    + np.sum(out[st2].numpy()[1:] != [6, 0, 0, 0, 11, 0])),
              "counter advanced by ceil(10 / 4)")
    exact.add(float(np.all(out[v1].numpy() == out[v2].numpy())), "stream continues")
    yield stats
    yield exact
    # dropout: kept fraction 1 - rate, kept values x / (1 - rate), the gradient's mask
    rate = 0.25
    frac = Row("dropout", f"rate {rate}: |kept fraction - (1 - rate)| / (5 standard errors)",
               tol=1.0)
    row = Row("dropout", f"rate {rate}: kept = x / (1 - rate), dropped = 0, gradient = u * "
              "the same mask / (1 - rate)", tol=1e-6)
    x = rng.standard_normal((100, 200)) + 3.0
    uu = rng.standard_normal(x.shape)
    g = Graph()
    xt = g.placeholder(list(x.shape))
    y = g.dropout(xt, rate)
    p = g.reductionSum(g.multiplication(y, g.constant(uu.astype(np.float32))), axes=[0, 1])
    gr = g.gradientForPrimaryTensor(p, [xt])[xt]
    out = g.run({xt: x.astype(np.float32)}, [y, gr], device=device)
    yv, gv = out[y].numpy().astype(np.float64), out[gr].numpy().astype(np.float64)
    kept = yv != 0
    x32 = x.astype(np.float32).astype(np.float64)
    frac.add(abs(kept.mean() - (1 - rate)) / (5 * math.sqrt(rate * (1 - rate) / x.size)),
             "kept fraction")
    row.add(_rel_err(yv, np.where(kept, x32 / (1 - rate), 0.0)), "kept values")
    row.add(_rel_err(gv, np.where(kept, uu / (1 - rate), 0.0)), "gradient mask")
    yield frac
    yield row


SUITES: dict[str, Callable[[Device, np.random.Generator], Iterator[Row]]] = {
    "convolution": conv_sweep,
    "lstm": lstm_sweep,
    "gru": gru_sweep,
    "ops": ops_sweep,
    "exact": exact_sweep,
    "gradient-ops": gradient_ops_sweep,
    "forward": forward_sweep,
    "random": random_sweep,
}


def run_check(device: Device, suites: list[str] | None = None, seed: int = 0,
              verbose: bool = False, out=print) -> int:
    """Run the sweeps, print the table; returns the process exit status (1 on any FAIL)."""
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    # CUDA path choice by measurement (backends/torch/autotune.py) would time every candidate
    # path at each of the sweeps' many small shapes: the check runs the hand rules' paths
    # unless MPSGRAPH_AUTOTUNE is set (each candidate is verified by tests/backends/test_autotune)
    given = os.environ.get("MPSGRAPH_AUTOTUNE")
    tune = given if given is not None else "0"
    out(f"mpsgraph check on Device({device.key!r}) (seed {seed})\n")
    if device.key.startswith("cuda"):
        out(f"CUDA paths: {'tuned by measurement' if tune == '1' else 'the hand rules'} "
            f"(MPSGRAPH_AUTOTUNE={tune})\n")
    rows: list[Row] = []
    os.environ["MPSGRAPH_AUTOTUNE"] = tune
    try:
        for name in suites or list(SUITES):
            ts = time.perf_counter()
            new = list(SUITES[name](device, rng))
            rows.extend(new)
            print(f"  {name}: {len(new)} rows, {sum(r.cases for r in new)} cases, "
                  f"{time.perf_counter() - ts:.1f} s", file=sys.stderr, flush=True)
    finally:  # the caller's process keeps its own setting
        if given is None:
            del os.environ["MPSGRAPH_AUTOTUNE"]
    wo = max(len(r.op) for r in rows)
    wd = max(len(r.options) for r in rows)
    out(f"| {'op':<{wo}} | {'options covered':<{wd}} | cases | max rel err |     tol | result |")
    out(f"|{'-' * (wo + 2)}|{'-' * (wd + 2)}|-------|-------------|---------|--------|")
    failed = 0
    for row in rows:
        res = "PASS" if row.ok else "FAIL"
        failed += not row.ok
        out(f"| {row.op:<{wo}} | {row.options:<{wd}} | {row.cases:>5} | {row.max_err:>11.2e} | "
            f"{row.tol:>7.0e} | {res:<6} |")
        if row.failures:
            shown = row.failures if verbose else row.failures[:1]
            for f in shown:
                out(f"    FAIL {f}")
            if not verbose and len(row.failures) > 1:
                out(f"    (and {len(row.failures) - 1} more; -v lists them)")
    out(f"\n{'all PASS' if not failed else f'{failed} rows FAIL'} "
        f"({sum(r.cases for r in rows)} cases, {time.perf_counter() - t0:.1f} s)")
    return 1 if failed else 0
