"""Entries of the recurrent family (ops/rnn.py): LSTM and LSTMGradients.

References are the float64 loops of tests/oracles/lstm_f64.py (SPEC 3.5 forward, 3.7
backward), which never import mpsgraph. This module only brings the user's shapes to the
oracle's canonical ones and back: recurrentWeight to [D, 4H, H], a state-shaped initState /
initCell / mask / stateGradient / cellGradient (leading size-1 axes beyond rank 2 dropped) to
[N, D*H] by broadcasting, a mask or cellGradient of exactly [T, N, D*H] (T != 1) read per step,
peephole to [D, 4H]; the gradients go back to the given shapes (a broadcast input's gradient
summed over the stretched axes, bias's as [1, 1, D*4H]). torch_ref is the same loop in torch
float64, for autograd.

Two NaN decisions (docs/semantics.md, "Decisions found by the op database") are applied around
the oracle by `_oracle`, its loops left as they are: an absent peephole adds no term (the
oracle multiplies zeros, and 0 * NaN = NaN), and a NaN activation output has a NaN derivative
(the oracle's relu / hardSigmoid / none derivatives would give 0 or 1).

Samples cycle through every descriptor option (reverse, bidirectional, training, produceCell,
forgetGateLast, each of the five activations over all five RNNActivation values) and draw every
optional input (inputWeight, bias, initState, initCell, mask, peephole; for the gradients
stateGradient and cellGradient in both forms) present or absent, in the state-shaped forms
[N, D*H], [1, N, D*H], [D*H], [1, D*H], [N, 1], [1, 1, N, D*H]. T, N, I, H are 0 and 1 now and
then (T <= 4, N <= 3, I <= 4, H <= 4). LSTMGradients gets the zState and cell of a float64
forward of the same inputs (rounded to the dtype), so that its inputs are those of a real
backward pass.

The LSTM gradient rule sends no gradient through zState (docs/semantics.md, "Automatic
differentiation"), while the generic gradient test differentiates sum(u * output) over every
output: a sample that returns zState (training) is therefore not used for the gradient test
(diff=()); the other training samples return only [state] or [state, cell] (kwarg `take`), so
that the rule's path through the training forward is checked too. The mask has no gradient
(Apple's LSTMGradients returns none) and is never marked differentiable. LSTMGradients has no
gradient rule.
"""

from __future__ import annotations

import numpy as np

import mpsgraph as mg
from opdb import DT, FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples
from oracles import lstm_f64 as O

from ._common import cycle as _cycle
from ._common import size as _size

A = mg.RNNActivation
ACTS = (A.none, A.relu, A.tanh, A.sigmoid, A.hardSigmoid)
ACT_PROPS = ("inputGateActivation", "forgetGateActivation", "cellGateActivation",
             "outputGateActivation", "activation")
FWD_OPT = ("inputWeight", "bias", "initState", "initCell", "mask", "peephole")
GRAD_OPT = ("stateGradient", "cellGradient") + FWD_OPT
GRAD_OUT = ("source", "recurrentWeight", "inputWeight", "bias", "peephole", "initState",
            "initCell")
STATE_FORMS = ("N,DH", "1,N,DH", "DH", "1,DH", "N,1", "1,1,N,DH")

# float32: every gate pre-activation is a float32 dot product of at most I + H + 2 <= 10 terms
# with operands in [-1, 1] (|error| <= 10 u sum|terms| <= 100 u = 6e-6 before the
# activations, which have slopes <= 1), and T <= 4 steps feed it forward (the recurrent
# weights scaled to 1/sqrt(H) keep the growth per step below 2): 6e-6 * (1 + 2 + 4 + 8) ~ 1e-4
# absolute in the worst case over N, H <= 4. The half types round each output once after
# float32 work: opdb.py's defaults with that absolute float32 bound added.
_ATOL32 = 1e-4
TOL = {DT.float32: (2e-5, _ATOL32), DT.float16: (2e-3, 1e-4 + _ATOL32),
       DT.bFloat16: (1.6e-2, 1e-3 + _ATOL32)}

# CUDA's persistent LSTM kernels store dA in the half type, so the bias, weight and source
# gradients there are sums of up to T * N = 16 half-rounded dA values of magnitude <= ~1, not
# rounded once (SPEC 0.4; a documented speed choice of backends/torch/rnn.py, pinned as an
# xfail by tests/regressions/test_issue14_property_found.py): an absolute error up to 16 u.
CUDA_HALF_GRAD_TOL = {("cuda", DT.float16): (2e-3, 16 * 2 ** -11 + _ATOL32),
                      ("cuda", DT.bFloat16): (1.6e-2, 16 * 2 ** -8 + _ATOL32)}

# ... and the forward's persistent kernels feed the half-rounded state h to the recurrent dots
# and keep the input projection in the half type (the same speed choice, backends/torch/rnn.py
# module docstring): gate pre-activations carry a few half ulps more than one rounding. Seen
# at 24 samples per dtype on the H200: 8 bFloat16 ulps of an output (0.0062) at T = 3.
CUDA_HALF_FWD_TOL = {("cuda", DT.float16): (2e-3, 4 * 2 ** -11 + 1e-4 + _ATOL32),
                     ("cuda", DT.bFloat16): (1.6e-2, 4 * 2 ** -8 + 1e-3 + _ATOL32)}


# ---------------------------------------------------------------------------- shapes
def _drop_leading_ones(shape):
    s = list(shape)
    while len(s) > 2 and s[0] == 1:
        s = s[1:]
    return s


def _state_shape(form, N, DH):
    return [{"N": N, "DH": DH, "1": 1}[t] for t in form.split(",")]


def _per_step(a, T) -> bool:
    """A mask / cellGradient of exactly [T, N, D*H] with T != 1 is read per step."""
    return a.ndim == 3 and a.shape[0] == T and T != 1


def _to_state(a, N, DH):
    if a is None:
        return None
    return np.broadcast_to(f64(a).reshape(_drop_leading_ones(a.shape)), (N, DH))


def _unbroadcast(g, shape):
    """The gradient [N, D*H] of a state-shaped input of `shape`: summed over what was
    stretched (SPEC 1.11)."""
    s = _drop_leading_ones(shape)
    lead = g.ndim - len(s)
    g = g.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, d in enumerate(s) if d == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape)


class _NoTerm:
    """An absent peephole (SPEC 3.5: "p absent: 0", the peephole TERM is 0): every product with
    it is an exact 0, even with a NaN cell (the oracle's zeros would give 0 * NaN = NaN)."""

    __array_ufunc__ = None  # ndarray * _NoTerm() defers to __rmul__

    def __getitem__(self, _):
        return self

    def __mul__(self, _):
        return 0.0

    __rmul__ = __mul__


def _act_grad_nan(kind, y):
    """SPEC 3.1's derivatives from the output, a NaN output giving a NaN derivative for every
    activation (docs/semantics.md, "Decisions found by the op database")."""
    return np.where(np.isnan(y), np.nan, _ORACLE_ACT_GRAD(kind, y))


_ORACLE_ACT_GRAD = O.act_grad_from_output
_ORACLE_SETUP = O._direction_setup


def _setup_no_peephole(d, T, N, H, R, W, b, h0, c0, peephole, bidirectional, reverse):
    out = _ORACLE_SETUP(d, T, N, H, R, W, b, h0, c0, peephole, bidirectional, reverse)
    return out if peephole is not None else (*out[:6], _NoTerm(), out[7])


def _oracle(fn, *args, **kwargs):
    """Call an oracle function with the two NaN decisions above in place (the oracle's loops
    are unchanged; only its absent-peephole zeros and its derivative helper are replaced)."""
    O._direction_setup, O.act_grad_from_output = _setup_no_peephole, _act_grad_nan
    try:
        return fn(*args, **kwargs)
    finally:
        O._direction_setup, O.act_grad_from_output = _ORACLE_SETUP, _ORACLE_ACT_GRAD


def _flags(d: mg.LSTMDescriptor):
    return dict(reverse=bool(d.reverse), bidirectional=bool(d.bidirectional),
                forget_gate_last=bool(d.forgetGateLast),
                activations=tuple(int(getattr(d, p)) for p in ACT_PROPS))


def _canonical(x, R, o, desc):
    """The oracle's arguments from the user's arrays (dict `o` of the optional inputs)."""
    T, N = x.shape[0], x.shape[1]
    D = 2 if desc.bidirectional else 1
    H = R.shape[-1]
    m = o.get("mask")
    if m is not None:
        m = f64(m) if _per_step(m, T) else _to_state(m, N, D * H)
    p = o.get("peephole")
    return dict(x=f64(x), R=f64(R).reshape(D, 4 * H, H), W=_f(o.get("inputWeight")),
                b=_f(o.get("bias")), h0=_to_state(o.get("initState"), N, D * H),
                c0=_to_state(o.get("initCell"), N, D * H), mask=m,
                peephole=None if p is None else f64(p).reshape(D, 4 * H))


def _f(a):
    return None if a is None else f64(a)


def _n_out(d):
    return 3 if d.training else (2 if d.produceCell else 1)


# ---------------------------------------------------------------------------- LSTM
def _lstm_build(g, x, R, *opt, desc, names, take, **_):
    outs = g.LSTM(x, R, descriptor=desc, **dict(zip(names, opt)))
    return [outs[k] for k in take]


def _lstm_ref(x, R, *opt, desc, names, take, **_):
    c = _canonical(x, R, dict(zip(names, opt)), desc)
    outs = _oracle(O.lstm_ref, c["x"], c["R"], c["W"], c["b"], c["h0"], c["c0"], c["mask"],
                   c["peephole"], **_flags(desc))
    return [outs[k] for k in take]


def _t_act(kind, a):
    import torch

    return {0: lambda v: v, 1: torch.relu, 2: torch.tanh, 3: torch.sigmoid,
            4: lambda v: torch.clamp(0.2 * v + 0.5, 0.0, 1.0)}[kind](a)


def _lstm_torch(x, R, *opt, desc, names, take, **_):
    """SPEC 3.5 as a torch float64 loop (differentiable in every input)."""
    import torch

    o = dict(zip(names, opt))
    T, N = x.shape[0], x.shape[1]
    D = 2 if desc.bidirectional else 1
    H = R.shape[-1]
    G = 4 * H
    gate_names = ["i", "z", "f", "o"] if desc.forgetGateLast else ["i", "f", "z", "o"]
    acts = dict(zip("ifzo", (int(getattr(desc, p)) for p in ACT_PROPS[:4])))
    g_act = int(desc.activation)
    Rc = R.reshape(D, G, H)

    def state(a):
        if a is None:
            return torch.zeros((N, D * H), dtype=torch.float64)
        return a.reshape(_drop_leading_ones(a.shape)).expand(N, D * H)

    h0, c0 = state(o.get("initState")), state(o.get("initCell"))
    m = o.get("mask")
    if m is not None and not (m.dim() == 3 and m.shape[0] == T and T != 1):
        m = state(m)
    p = o.get("peephole")
    p = None if p is None else p.reshape(D, G)
    W, b = o.get("inputWeight"), o.get("bias")
    states = [[None] * T for _ in range(D)]
    cells = [[None] * T for _ in range(D)]
    zs = [[None] * T for _ in range(D)]
    for d in range(D):
        rev = d == 1 if desc.bidirectional else bool(desc.reverse)
        sl = slice(d * H, (d + 1) * H)
        h, c = h0[:, sl], c0[:, sl]
        for t in (range(T - 1, -1, -1) if rev else range(T)):
            if W is not None:
                a = x[t] @ W[d * G:(d + 1) * G].T
            else:
                a = x[t][:, d * G:(d + 1) * G]
            if b is not None:
                a = a + b[d * G:(d + 1) * G]
            mt = 1.0 if m is None else (m[t] if m.dim() == 3 else m)[:, sl]
            a = a + (h * mt) @ Rc[d].T
            if p is not None:
                a = a + torch.cat([p[d, k * H:(k + 1) * H] * c for k in range(4)], dim=1)
            gate = {nm: _t_act(acts[nm], a[:, k * H:(k + 1) * H])
                    for k, nm in enumerate(gate_names)}
            c = gate["f"] * c + gate["i"] * gate["z"]
            h = gate["o"] * _t_act(g_act, c)
            states[d][t], cells[d][t] = h, c
            zs[d][t] = torch.cat([gate[nm] for nm in gate_names], dim=1)

    def seq(parts, width):
        if T == 0:
            return torch.zeros((0, N, D * width), dtype=torch.float64)
        return torch.stack([torch.cat([parts[d][t] for d in range(D)], dim=1)
                            for t in range(T)])
    # an output that depends on no input (T == 0, H == 0) still takes part in autograd
    anchor = sum((t.sum() for t in (x, R, *opt) if t.requires_grad), torch.zeros(())) * 0.0
    outs = [seq(states, H), seq(cells, H), seq(zs, G)]
    return [outs[k] + anchor for k in take]


def _draw(rng, k, pick):
    """(descriptor, dims (T, N, I, H, D), dict of optional input arrays in float64)."""
    d = mg.LSTMDescriptor(
        reverse=pick(k, "rev", (False, True)), bidirectional=pick(k, "bi", (False, True, False)),
        produceCell=pick(k, "pc", (False, True)), training=pick(k, "tr", (True, False)),
        forgetGateLast=pick(k, "fgl", (False, True)),
        **{p: pick(k, p, ACTS) for p in ACT_PROPS})
    D = 2 if d.bidirectional else 1
    T, N, H = _size(rng, 0, 4), _size(rng, 0, 3), _size(rng, 0, 4)
    G = 4 * H
    names = [n for n in FWD_OPT if rng.random() < (0.7 if n == "inputWeight" else 0.5)]
    I = _size(rng, 0, 4) if "inputWeight" in names else D * G
    return d, (T, N, I, H, D), names


def _opt_arrays(rng, names, dims, dt, pick, k):
    T, N, I, H, D = dims
    G, DH = 4 * H, D * H
    out = {}
    for n in names:
        if n == "inputWeight":
            out[n] = arr(rng, (D * G, I), dt, -1, 1)
        elif n == "bias":
            out[n] = arr(rng, (D * G,), dt, -1, 1)
        elif n in ("initState", "initCell"):
            out[n] = arr(rng, _state_shape(pick(k, n, STATE_FORMS), N, DH), dt, -1, 1)
        elif n == "mask":
            form = pick(k, n, STATE_FORMS + ("T,N,DH",))
            shp = [T, N, DH] if form == "T,N,DH" else _state_shape(form, N, DH)
            out[n] = arr(rng, shp, dt, 0.0, 1.0)
        elif n == "peephole":
            shp = (G,) if D == 1 else ((2, G) if rng.random() < 0.5 else (2 * G,))
            out[n] = arr(rng, shp, dt, -1, 1)
    return out


def _source_and_R(rng, dims, dt):
    T, N, I, H, D = dims
    x = arr(rng, (T, N, I), dt, -1, 1)
    R = arr(rng, (4 * H, H) if D == 1 else (2, 4 * H, H), dt, -1, 1)
    if H > 1:  # keep the recurrence's gain moderate (the tolerance above relies on it)
        R = (f64(R) / np.sqrt(H)).astype(R.dtype)
    return x, R


def _lstm_samples(rng, dt):
    pick = _cycle(rng)
    for k in range(n_samples()):
        d, dims, names = _draw(rng, k, pick)
        x, R = _source_and_R(rng, dims, dt)
        opt = _opt_arrays(rng, names, dims, dt, pick, k)
        n = _n_out(d)
        take, diff = tuple(range(n)), None
        if d.training:  # no gradient flows back through zState (see the module docstring)
            take = pick(k, "take", ((0, 1, 2), (0, 1), (0,)))
        all_names = ["source", "recurrentWeight", *names]
        if 2 in take:
            diff = ()
        else:
            diff = tuple(i for i, nm in enumerate(all_names) if nm != "mask")
        # a NaN recurrent weight (peephole) meets an ABSENT initState (initCell), an implicit
        # zero, at the first step; a NaN mask weighs the previous state and cell, (1 - m) *
        # h_prev: unspecified with either absent (docs/semantics.md, "NaN and implicit zeros")
        implicit = {"recurrentWeight": ("initState",), "peephole": ("initCell",),
                    "mask": ("initState", "initCell")}
        poison = tuple(i for i, nm in enumerate(all_names)
                       if all(need in names for need in implicit.get(nm, ())))
        yield Sample([x, R, *[opt[nm] for nm in names]],
                     {"desc": d, "names": tuple(names), "take": take}, diff=diff,
                     desc=f"T,N,I,H,D={dims} " + ",".join(names), nan_inputs=poison)


# ---------------------------------------------------------------------------- LSTMGradients
def _grad_build(g, x, R, dstate, z, cell, *opt, desc, names, **_):
    return g.LSTMGradients(x, R, dstate, z, cell, descriptor=desc, **dict(zip(names, opt)))


def _grad_ref(x, R, dstate, z, cell, *opt, desc, names, **_):
    o = dict(zip(names, opt))
    T, N = x.shape[0], x.shape[1]
    D = 2 if desc.bidirectional else 1
    H = R.shape[-1]
    c = _canonical(x, R, o, desc)
    sg, cg = o.get("stateGradient"), o.get("cellGradient")
    dcell_seq = dc_final = None
    if cg is not None:
        if _per_step(cg, T):
            dcell_seq = f64(cg)
        else:
            dc_final = _to_state(cg, N, D * H)
    res = _oracle(O.lstm_grad_ref, c["x"], c["R"], f64(dstate), f64(z), f64(cell), c["W"], c["b"],
                  c["h0"], c["c0"], c["mask"], c["peephole"],
                  dh_final=_to_state(sg, N, D * H), dc_final=dc_final,
                  dcell_seq=dcell_seq, **_flags(desc))
    given = {"source": x, "recurrentWeight": R, **o}
    out = []
    for n in GRAD_OUT:
        if n not in given:
            continue
        gval = res[n]
        if n == "bias":
            gval = gval.reshape(1, 1, D * 4 * H)
        elif n in ("initState", "initCell"):
            gval = _unbroadcast(gval, given[n].shape)
        else:
            gval = gval.reshape(given[n].shape)
        out.append(gval)
    return out


def _grad_samples(rng, dt):
    pick = _cycle(rng)
    for k in range(n_samples()):
        d, dims, names = _draw(rng, k, pick)
        T, N, I, H, D = dims
        x, R = _source_and_R(rng, dims, dt)
        opt = _opt_arrays(rng, names, dims, dt, pick, k)
        c = _canonical(x, R, opt, d)
        _, cell, z = _oracle(O.lstm_ref, c["x"], c["R"], c["W"], c["b"], c["h0"], c["c0"],
                             c["mask"], c["peephole"], **_flags(d))
        npdt = x.dtype
        dstate = arr(rng, (T, N, D * H), dt, -1, 1)
        if rng.random() < 0.5:
            opt["stateGradient"] = arr(rng, _state_shape(pick(k, "sg", STATE_FORMS), N, D * H),
                                       dt, -1, 1)
        if rng.random() < 0.6:
            form = pick(k, "cg", ("T,N,DH",) + STATE_FORMS)
            shp = [T, N, D * H] if form == "T,N,DH" else _state_shape(form, N, D * H)
            opt["cellGradient"] = arr(rng, shp, dt, -1, 1)
        gnames = [n for n in GRAD_OPT if n in opt]
        yield Sample([x, R, dstate, z.astype(npdt), cell.astype(npdt),
                      *[opt[n] for n in gnames]], {"desc": d, "names": tuple(gnames)},
                     desc=f"T,N,I,H,D={dims} " + ",".join(gnames))


# ---------------------------------------------------------------------------- errors
def _f32(*s):
    return np.ones(s, np.float32)


def _lstm_errors(grad):
    """Error inputs of LSTM (grad=False) or LSTMGradients (grad=True); T=3, N=2, I=5, H=2."""
    def s(x, R, desc=None, **opt):
        d = desc or mg.LSTMDescriptor()
        D = 2 if d.bidirectional else 1
        if grad:
            T, N, H = x.shape[0], x.shape[1], R.shape[-1]
            fixed = [opt.pop("sourceGradient", _f32(T, N, D * H)),
                     opt.pop("zState", _f32(T, N, D * 4 * H)),
                     opt.pop("cellOutputFwd", _f32(T, N, D * H))]
            names = tuple(n for n in GRAD_OPT if n in opt)
            return Sample([x, R, *fixed, *[opt[n] for n in names]],
                          {"desc": d, "names": names})
        names = tuple(n for n in FWD_OPT if n in opt)
        return Sample([x, R, *[opt[n] for n in names]],
                      {"desc": d, "names": names, "take": (0,)})

    def gen(rng):
        E = mg
        x, R, W = _f32(3, 2, 5), _f32(8, 2), _f32(8, 5)
        bi = mg.LSTMDescriptor(bidirectional=True)
        yield ErrorInput(s(x, _f32(2, 8, 2), inputWeight=W), E.ShapeError, "recurrentWeight")
        yield ErrorInput(s(x, _f32(8, 3), inputWeight=W), E.ShapeError, "recurrentWeight")
        yield ErrorInput(s(x, R, bi, inputWeight=_f32(16, 5)), E.ShapeError,
                         "recurrentWeight")
        yield ErrorInput(s(x, R), E.ShapeError, "source")  # 5 features, no inputWeight: 4H
        yield ErrorInput(s(_f32(3, 2), R), E.ShapeError, "source")
        yield ErrorInput(s(x, R, inputWeight=_f32(8, 4)), E.ShapeError, "source")
        yield ErrorInput(s(x, R, inputWeight=_f32(6, 5)), E.ShapeError, "inputWeight")
        yield ErrorInput(s(x, R, inputWeight=W, bias=_f32(6)), E.ShapeError, "bias")
        yield ErrorInput(s(x, R, inputWeight=W, initState=_f32(3, 2)), E.ShapeError,
                         "initState")
        yield ErrorInput(s(x, R, inputWeight=W, initCell=_f32(2, 3)), E.ShapeError,
                         "initCell")
        yield ErrorInput(s(x, R, inputWeight=W, mask=_f32(2, 2, 2)), E.ShapeError, "mask")
        yield ErrorInput(s(x, R, inputWeight=W, mask=_f32(3, 1, 2)), E.ShapeError, "mask")
        yield ErrorInput(s(x, R, inputWeight=W, peephole=_f32(2, 8)), E.ShapeError,
                         "peephole")
        yield ErrorInput(s(x, _f32(2, 8, 2), bi, inputWeight=_f32(16, 5), peephole=_f32(8)),
                         E.ShapeError, "peephole")
        yield ErrorInput(s(x, np.ones((8, 2), np.float16), inputWeight=W), E.DataTypeError,
                         "recurrentWeight")
        yield ErrorInput(s(np.ones((3, 2, 8), np.int32), np.ones((8, 2), np.int32)),
                         E.DataTypeError, "source")
        for prop, val in (("reverse", "yes"), ("training", 2), ("inputGateActivation", 7),
                          ("activation", True), ("forgetGateLast", None)):
            yield ErrorInput(s(x, R, mg.LSTMDescriptor(**{prop: val}), inputWeight=W),
                             E.DescriptorError, f"descriptor.{prop}")
        if grad:
            yield ErrorInput(s(x, R, inputWeight=W, sourceGradient=_f32(3, 2, 3)),
                             E.ShapeError, "sourceGradient")
            yield ErrorInput(s(x, R, inputWeight=W, zState=_f32(3, 2, 4)), E.ShapeError,
                             "zState")
            yield ErrorInput(s(x, R, inputWeight=W, cellOutputFwd=_f32(2, 2, 2)),
                             E.ShapeError, "cellOutputFwd")
            yield ErrorInput(s(x, R, inputWeight=W, stateGradient=_f32(3, 2)), E.ShapeError,
                             "stateGradient")
            yield ErrorInput(s(x, R, inputWeight=W, cellGradient=_f32(2, 2, 2)),
                             E.ShapeError, "cellGradient")
            yield ErrorInput(s(x, R, inputWeight=W, cellGradient=_f32(3, 2, 3)),
                             E.ShapeError, "cellGradient")
            yield ErrorInput(s(x, R, inputWeight=W, sourceGradient=np.ones((3, 2, 2),
                                                                           np.float16)),
                             E.DataTypeError, "sourceGradient")
    return gen


add(OpInfo("LSTM", build=_lstm_build, ref=_lstm_ref, samples=_lstm_samples, dtypes=FLOAT,
           differentiable=(0, 1), torch_ref=_lstm_torch, errors=_lstm_errors(False), tol=TOL,
           device_tol=CUDA_HALF_FWD_TOL,
           notes="tests/oracles/lstm_f64.py; every descriptor option and optional input"))
add(OpInfo("LSTMGradients", build=_grad_build, ref=_grad_ref, samples=_grad_samples,
           dtypes=FLOAT, errors=_lstm_errors(True), tol=TOL, device_tol=CUDA_HALF_GRAD_TOL,
           # any NaN reaches da at step 0, whose product with an ABSENT initState (an implicit
           # zero) is unspecified (docs/semantics.md, "NaN and implicit zeros"); NaN through
           # the gates is pinned by tests/regressions/test_opdb_found_conv_pool_lstm.py
           nan=False,
           notes="tests/oracles/lstm_f64.py; zState / cell of a float64 forward; both forms "
                 "of stateGradient and cellGradient"))
