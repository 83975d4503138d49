"""Entries of GRU, GRUGradients, singleGateRNN and singleGateRNNGradients (ops/rnn.py, SPEC 4).

References are the float64 loops of tests/oracles/gru_f64.py (checked against central
differences of their own forwards by tests/ops/test_rnn_gru.py), which never import mpsgraph.
This module only brings the user's shapes to the oracle's canonical ones and back, with the
helpers of the LSTM's entries (opdb_entries/rnn.py): recurrentWeight to [D, k*H, H], a
state-shaped initState / mask / stateGradient to [N, D*H], a mask of exactly [T, N, D*H]
(T != 1) read per step; the gradients go back to the given shapes (bias as [1, 1, D*k*H], a
broadcast initState's summed).

Samples cycle through every descriptor option (reverse, bidirectional, training,
resetGateFirst, resetAfter, flipZ, the three GRU activations and the single-gate activation
over all five RNNActivation values) and draw every optional input present or absent
(inputWeight, bias, initState in the state-shaped forms, mask state-shaped or per step,
secondaryBias, stateGradient). T, N, I, H are 0 and 1 now and then. A forward sample that
returns zState (training, take (0, 1)) is not differentiated (no gradient flows through zState);
the mask is differentiable (the rules derive its gradient, docs/semantics.md). The NaN rules of
docs/semantics.md "NaN and implicit zeros" restrict the poisoned inputs as for the LSTM: a NaN
recurrent weight or mask meets an ABSENT initState (an implicit zero) at the first step. The
gradient ops take a NaN-free run (nan=False): their oracle's relu / hardSigmoid / none
derivatives give 0 or 1 on a NaN output, where the kernels keep the NaN (docs/semantics.md,
"LSTM activations of NaN", which the GRU shares).
"""

from __future__ import annotations

import numpy as np

import mpsgraph as mg
from opdb import FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples
from oracles import gru_f64 as O

from ._common import cycle as _cycle
from ._common import size as _size
from .rnn import (
    CUDA_HALF_FWD_TOL,
    CUDA_HALF_GRAD_TOL,
    STATE_FORMS,
    TOL,
    _per_step,
    _state_shape,
    _to_state,
    _unbroadcast,
)

A = mg.RNNActivation
ACTS = (A.none, A.relu, A.tanh, A.sigmoid, A.hardSigmoid)
GRU_ACTS = ("updateGateActivation", "resetGateActivation", "outputGateActivation")
GRU_FWD_OPT = ("inputWeight", "bias", "initState", "mask", "secondaryBias")
SG_FWD_OPT = ("inputWeight", "bias", "initState", "mask")
GRU_GRAD_OUT = ("source", "recurrentWeight", "inputWeight", "bias", "initState",
                "secondaryBias")
SG_GRAD_OUT = GRU_GRAD_OUT[:5]


def _gru(desc) -> bool:
    return isinstance(desc, mg.GRUDescriptor)


def _flags(desc):
    if _gru(desc):
        return dict(reverse=bool(desc.reverse), bidirectional=bool(desc.bidirectional),
                    reset_gate_first=bool(desc.resetGateFirst),
                    reset_after=bool(desc.resetAfter), flip_z=bool(desc.flipZ),
                    activations=tuple(int(getattr(desc, p)) for p in GRU_ACTS))
    return dict(reverse=bool(desc.reverse), bidirectional=bool(desc.bidirectional),
                activation=int(desc.activation))


def _canonical(x, R, o, desc):
    T, N = x.shape[0], x.shape[1]
    D = 2 if desc.bidirectional else 1
    H = R.shape[-1]
    k = 3 if _gru(desc) else 1
    m = o.get("mask")
    if m is not None:
        m = f64(m) if _per_step(m, T) else _to_state(m, N, D * H)
    c = dict(x=f64(x), R=f64(R).reshape(D, k * H, H), W=_f(o.get("inputWeight")),
             b=_f(o.get("bias")), h0=_to_state(o.get("initState"), N, D * H), mask=m)
    if k == 3:
        c["b2"] = _f(o.get("secondaryBias"))
    return c


def _f(a):
    return None if a is None else f64(a)


def _forward_ref(c, desc):
    if _gru(desc):
        return O.gru_ref(c["x"], c["R"], c["W"], c["b"], c["h0"], c["mask"], c["b2"],
                         **_flags(desc))
    return O.rnn_ref(c["x"], c["R"], c["W"], c["b"], c["h0"], c["mask"], **_flags(desc))


# ---------------------------------------------------------------------------- forward
def _fwd_build(g, x, R, *opt, desc, names, take, **_):
    fn = g.GRU if _gru(desc) else g.singleGateRNN
    outs = fn(x, R, descriptor=desc, **dict(zip(names, opt)))
    return [outs[k] for k in take]


def _fwd_ref(x, R, *opt, desc, names, take, **_):
    outs = _forward_ref(_canonical(x, R, dict(zip(names, opt)), desc), desc)
    return [outs[k] for k in take]


def _draw(rng, k, pick, gru):
    if gru:
        d = mg.GRUDescriptor(
            reverse=pick(k, "rev", (False, True)),
            bidirectional=pick(k, "bi", (False, True, False)),
            training=pick(k, "tr", (True, False)), resetGateFirst=pick(k, "rgf", (False, True)),
            resetAfter=pick(k, "ra", (True, False)), flipZ=pick(k, "fz", (False, True)),
            **{p: pick(k, p, ACTS) for p in GRU_ACTS})
    else:
        d = mg.SingleGateRNNDescriptor(
            reverse=pick(k, "rev", (False, True)),
            bidirectional=pick(k, "bi", (False, True, False)),
            training=pick(k, "tr", (True, False)), activation=pick(k, "act", ACTS))
    D = 2 if d.bidirectional else 1
    G = 3 if gru else 1
    T, N, H = _size(rng, 0, 4), _size(rng, 0, 3), _size(rng, 0, 4)
    opts = GRU_FWD_OPT if gru else SG_FWD_OPT
    names = [n for n in opts if rng.random() < (0.7 if n == "inputWeight" else 0.5)]
    I = _size(rng, 0, 4) if "inputWeight" in names else D * G * H
    return d, (T, N, I, H, D, G), names


def _opt_arrays(rng, names, dims, dt, pick, k):
    T, N, I, H, D, G = dims
    DH = D * H
    out = {}
    for n in names:
        if n == "inputWeight":
            out[n] = arr(rng, (D * G * H, I), dt, -1, 1)
        elif n == "bias":
            out[n] = arr(rng, (D * G * H,), dt, -1, 1)
        elif n == "secondaryBias":
            out[n] = arr(rng, (DH,), dt, -1, 1)
        elif n == "initState":
            out[n] = arr(rng, _state_shape(pick(k, n, STATE_FORMS), N, DH), dt, -1, 1)
        elif n == "mask":
            form = pick(k, n, STATE_FORMS + ("T,N,DH",))
            shp = [T, N, DH] if form == "T,N,DH" else _state_shape(form, N, DH)
            out[n] = arr(rng, shp, dt, 0.0, 1.0)
    return out


def _source_and_R(rng, dims, dt):
    T, N, I, H, D, G = dims
    x = arr(rng, (T, N, I), dt, -1, 1)
    R = arr(rng, (G * H, H) if D == 1 else (2, G * H, H), dt, -1, 1)
    if H > 1:  # keep the recurrence's gain moderate (the tolerance relies on it)
        R = (f64(R) / np.sqrt(H)).astype(R.dtype)
    return x, R


def _fwd_samples(gru):
    def samples(rng, dt):
        pick = _cycle(rng)
        for k in range(n_samples()):
            d, dims, names = _draw(rng, k, pick, gru)
            x, R = _source_and_R(rng, dims, dt)
            opt = _opt_arrays(rng, names, dims, dt, pick, k)
            take = pick(k, "take", ((0, 1), (0,))) if d.training else (0,)
            all_names = ["source", "recurrentWeight", *names]
            diff = () if 1 in take else tuple(range(len(all_names)))
            implicit = {"recurrentWeight": ("initState",), "mask": ("initState",)}
            poison = tuple(i for i, nm in enumerate(all_names)
                           if all(need in names for need in implicit.get(nm, ())))
            yield Sample([x, R, *[opt[nm] for nm in names]],
                         {"desc": d, "names": tuple(names), "take": take}, diff=diff,
                         desc=f"T,N,I,H,D,G={dims} " + ",".join(names), nan_inputs=poison)
    return samples


# ---------------------------------------------------------------------------- gradients
def _grad_build(g, x, R, dstate, z, *rest, desc, names, **_):
    if _gru(desc):
        out_fwd, *opt = rest
        return g.GRUGradients(x, R, dstate, z, out_fwd, descriptor=desc,
                              **dict(zip(names, opt)))
    return g.singleGateRNNGradients(x, R, dstate, z, descriptor=desc, **dict(zip(names, rest)))


def _grad_ref(x, R, dstate, z, *rest, desc, names, **_):
    gru = _gru(desc)
    opt = rest[1:] if gru else rest
    out_fwd = rest[0] if gru else None
    o = dict(zip(names, opt))
    N = x.shape[1]
    D = 2 if desc.bidirectional else 1
    H = R.shape[-1]
    k = 3 if gru else 1
    c = _canonical(x, R, o, desc)
    dhf = _to_state(o.get("stateGradient"), N, D * H)
    if gru:
        res = O.gru_grad_ref(c["x"], c["R"], f64(dstate), c["W"], c["b"], c["h0"], c["mask"],
                             c["b2"], dh_final=dhf, zstate=f64(z), out_fwd=f64(out_fwd),
                             **_flags(desc))
    else:
        res = O.rnn_grad_ref(c["x"], c["R"], f64(dstate), c["W"], c["b"], c["h0"], c["mask"],
                             dh_final=dhf, zstate=f64(z), **_flags(desc))
    given = {"source": x, "recurrentWeight": R, **o}
    out = []
    for n in (GRU_GRAD_OUT if gru else SG_GRAD_OUT):
        if n not in given:
            continue
        v = res[n]
        if n == "bias":
            v = v.reshape(1, 1, D * k * H)
        elif n == "initState":
            v = _unbroadcast(v, given[n].shape)
        else:
            v = v.reshape(given[n].shape)
        out.append(v)
    return out


def _grad_samples(gru):
    def samples(rng, dt):
        pick = _cycle(rng)
        order = ("stateGradient",) + (GRU_FWD_OPT if gru else SG_FWD_OPT)
        for k in range(n_samples()):
            d, dims, names = _draw(rng, k, pick, gru)
            T, N, I, H, D, G = dims
            x, R = _source_and_R(rng, dims, dt)
            opt = _opt_arrays(rng, names, dims, dt, pick, k)
            state, z = _forward_ref(_canonical(x, R, opt, d), d)
            npdt = x.dtype
            dstate = arr(rng, (T, N, D * H), dt, -1, 1)
            if rng.random() < 0.5:
                opt["stateGradient"] = arr(
                    rng, _state_shape(pick(k, "sg", STATE_FORMS), N, D * H), dt, -1, 1)
            gnames = [n for n in order if n in opt]
            fixed = [x, R, dstate, z.astype(npdt)] + ([state.astype(npdt)] if gru else [])
            yield Sample(fixed + [opt[n] for n in gnames], {"desc": d, "names": tuple(gnames)},
                         desc=f"T,N,I,H,D,G={dims} " + ",".join(gnames))
    return samples


# ---------------------------------------------------------------------------- errors
def _f32(*s):
    return np.ones(s, np.float32)


def _errors(gru, grad):
    """T=3, N=2, I=5, H=2; GRU gate width 6, single gate 2."""
    k = 3 if gru else 1
    Desc = mg.GRUDescriptor if gru else mg.SingleGateRNNDescriptor
    fwd_opt = GRU_FWD_OPT if gru else SG_FWD_OPT

    def s(x, R, desc=None, **opt):
        d = desc or Desc()
        D = 2 if d.bidirectional else 1
        if grad:
            T, N, H = x.shape[0], x.shape[1], R.shape[-1]
            fixed = [opt.pop("sourceGradient", _f32(T, N, D * H)),
                     opt.pop("zState", _f32(T, N, D * k * H))]
            if gru:
                fixed.append(opt.pop("outputFwd", _f32(T, N, D * H)))
            names = tuple(n for n in ("stateGradient",) + fwd_opt if n in opt)
            return Sample([x, R, *fixed, *[opt[n] for n in names]],
                          {"desc": d, "names": names})
        names = tuple(n for n in fwd_opt if n in opt)
        return Sample([x, R, *[opt[n] for n in names]],
                      {"desc": d, "names": names, "take": (0,)})

    def gen(rng):
        E = mg
        x, R, W = _f32(3, 2, 5), _f32(k * 2, 2), _f32(k * 2, 5)
        bi = Desc(bidirectional=True)
        yield ErrorInput(s(x, _f32(2, k * 2, 2), inputWeight=W), E.ShapeError,
                         "recurrentWeight")
        yield ErrorInput(s(x, _f32(k * 2, 3), inputWeight=W), E.ShapeError, "recurrentWeight")
        yield ErrorInput(s(x, R, bi, inputWeight=_f32(2 * k * 2, 5)), E.ShapeError,
                         "recurrentWeight")
        yield ErrorInput(s(x, R), E.ShapeError, "source")
        yield ErrorInput(s(_f32(3, 2), R), E.ShapeError, "source")
        yield ErrorInput(s(x, R, inputWeight=_f32(k * 2, 4)), E.ShapeError, "source")
        yield ErrorInput(s(x, R, inputWeight=_f32(k * 2 + 1, 5)), E.ShapeError, "inputWeight")
        yield ErrorInput(s(x, R, inputWeight=W, bias=_f32(k * 2 + 2)), E.ShapeError, "bias")
        yield ErrorInput(s(x, R, inputWeight=W, initState=_f32(3, 2)), E.ShapeError,
                         "initState")
        yield ErrorInput(s(x, R, inputWeight=W, mask=_f32(2, 2, 2)), E.ShapeError, "mask")
        if gru:
            yield ErrorInput(s(x, R, inputWeight=W, secondaryBias=_f32(3)), E.ShapeError,
                             "secondaryBias")
        yield ErrorInput(s(x, np.ones((k * 2, 2), np.float16), inputWeight=W),
                         E.DataTypeError, "recurrentWeight")
        yield ErrorInput(s(np.ones((3, 2, k * 2), np.int32), np.ones((k * 2, 2), np.int32)),
                         E.DataTypeError, "source")
        props = (("reverse", "yes"), ("training", 2)) + (
            (("flipZ", None), ("resetAfter", 3), ("updateGateActivation", 7),
             ("outputGateActivation", True)) if gru else (("activation", 9),))
        for prop, val in props:
            yield ErrorInput(s(x, R, Desc(**{prop: val}), inputWeight=W), E.DescriptorError,
                             f"descriptor.{prop}")
        if grad:
            yield ErrorInput(s(x, R, inputWeight=W, sourceGradient=_f32(3, 2, 3)),
                             E.ShapeError, "sourceGradient")
            yield ErrorInput(s(x, R, inputWeight=W, zState=_f32(3, 2, k * 2 + 1)),
                             E.ShapeError, "zState")
            if gru:
                yield ErrorInput(s(x, R, inputWeight=W, outputFwd=_f32(2, 2, 2)),
                                 E.ShapeError, "outputFwd")
            yield ErrorInput(s(x, R, inputWeight=W, stateGradient=_f32(3, 2)), E.ShapeError,
                             "stateGradient")
            yield ErrorInput(s(x, R, inputWeight=W, sourceGradient=np.ones((3, 2, 2),
                                                                           np.float16)),
                             E.DataTypeError, "sourceGradient")
    return gen


_NOTES = "tests/oracles/gru_f64.py; every descriptor option and optional input"
# the fused CUDA kernels (kernels/gru_seq.py) make the LSTM's documented half-type speed choice
# (docs/semantics.md "Half-type LSTMs on CUDA"): the input projection in the half type, the
# half-rounded state fed to the recurrent dots, dA stored in the half type. Seen on the H200:
# bFloat16 forward 0.0037 beyond a 0.0011 + 1.6% bound, float16 gradient 0.0007 beyond 0.0002.
for _name, _gru_op in (("GRU", True), ("singleGateRNN", False)):
    add(OpInfo(_name, build=_fwd_build, ref=_fwd_ref, samples=_fwd_samples(_gru_op),
               dtypes=FLOAT, differentiable=(0, 1), errors=_errors(_gru_op, False), tol=TOL,
               device_tol=CUDA_HALF_FWD_TOL, notes=_NOTES))
    add(OpInfo(_name + "Gradients", build=_grad_build, ref=_grad_ref,
               samples=_grad_samples(_gru_op), dtypes=FLOAT, errors=_errors(_gru_op, True),
               tol=TOL, device_tol=CUDA_HALF_GRAD_TOL, nan=False,
               notes=_NOTES + "; zState / outputFwd of a float64 forward"))
