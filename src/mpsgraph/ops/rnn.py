"""The recurrent family (Apple's MPSGraphRNNOps.h): LSTM and LSTMGradients, and (SPEC 4, issue
19) GRU, GRUGradients, singleGateRNN and singleGateRNNGradients, which share the LSTM's shape
rules (`_RNNShapes`, with 3 and 1 gate blocks per direction) and argument forms; their
equations are in the GRU / singleGateRNN docstrings, backends/_gru_glue.py and
docs/semantics.md ("GRU and single-gate RNN decisions").

T time, N batch, I input, H hidden, D = 2 if `descriptor.bidirectional` else 1. Every 4H axis
stacks four H-blocks in the gate order [i, f, z, o] ([i, z, f, o] with `forgetGateLast`).

    source           [T, N, I]; [T, N, D*4H] when inputWeight is None (already projected)
    recurrentWeight  [4H, H]; bidirectional [2, 4H, H]
    inputWeight      [D*4H, I]                bias      [D*4H]
    initState/Cell   "state-shaped": after dropping leading size-1 axes beyond rank 2,
                     broadcastable to [N, D*H] (e.g. [N, D*H], [1, N, D*H], [D*H])
    mask             state-shaped (every step) or exactly [T, N, D*H] (m[t] at step t)
    peephole         [4H]; bidirectional [2, 4H] (or [8H])

Semantics as the plain loop (one direction; `reverse`, and direction 1 of a bidirectional
LSTM, run t = T-1 ... 0, and outputs stay aligned with the input time index):

    h, c = initState, initCell                                  # zeros if absent
    for t in processing order:
        a = x[t] @ W^T + b + (h * m[t]) @ R^T + concat(p_i*c, p_f*c, p_z*c, p_o*c)
        i, f, z, o = f_i(a_i), f_f(a_f), f_z(a_z), f_o(a_o)     # descriptor activations
        c = f * c + i * z
        h = o * g(c)                                            # g = descriptor.activation
        state[t], cell[t], zState[t] = h, c, [i, f, z, o]       # zState: post-activation

Decisions where Apple's documentation is silent or contradictory are in docs/semantics.md
(output arity, reverse alignment, mask shapes, peephole placement, hardSigmoid constants,
stateGradient/cellGradient forms, bias-gradient shape).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..descriptors import GRUDescriptor, LSTMDescriptor, SingleGateRNNDescriptor
from ..errors import ShapeError, UnsupportedError
from ..types import ShapedType
from ._checks import same_float_type
from ._registry import InferContext, register_op
from ._shape_math import UNKNOWN, known

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["RNNOps", "LSTMAttrs", "GatedRNNAttrs"]

_FWD_INPUTS = ("source", "recurrentWeight", "inputWeight", "bias", "initState", "initCell",
               "mask", "peephole")
_GRAD_INPUTS = ("source", "recurrentWeight", "sourceGradient", "zState", "cellOutputFwd",
                "stateGradient", "cellGradient", "inputWeight", "bias", "initState",
                "initCell", "mask", "peephole")
# the gradient outputs, in Apple's order; only those whose input was given are returned
_GRAD_OUTPUTS = ("source", "recurrentWeight", "inputWeight", "bias", "peephole", "initState",
                 "initCell")


@dataclass(frozen=True)
class LSTMAttrs:
    """Resolved parameters for kernels (static shapes)."""

    reverse: bool
    bidirectional: bool
    forget_gate_last: bool
    activations: tuple[int, int, int, int, int]  # (f_i, f_f, f_z, f_o, g) RNNActivation ints
    T: int
    N: int
    H: int
    n_outputs: int  # LSTM: 1, 2 or 3
    mask_per_step: bool  # mask given as [T, N, D*H]
    cell_grad_per_step: bool  # cellGradient given as [T, N, D*H] (T > 1)
    outputs: tuple[str, ...]  # LSTMGradients: the gradients returned, in order
    shapes: tuple[tuple[str, tuple[int, ...]], ...]  # given shapes of the optional inputs

    @property
    def D(self) -> int:
        return 2 if self.bidirectional else 1

    def shape_of(self, name: str) -> tuple[int, ...]:
        return dict(self.shapes)[name]


@dataclass(frozen=True)
class _RNNOpAttrs:
    descriptor: LSTMDescriptor  # the op's private, validated copy


def _drop_leading_ones(shape: list[int]) -> list[int]:
    """The shape without its leading size-1 axes beyond rank 2; an unknown (-1) leading size
    may be 1, so it is dropped too (the concrete shape is checked when it is known)."""
    s = list(shape)
    while len(s) > 2 and s[0] in (1, UNKNOWN):
        s = s[1:]
    return s


def _broadcastable(shape: Sequence[int], to: Sequence[int]) -> bool:
    if len(shape) > len(to):
        return False
    for a, b in zip(reversed(shape), reversed(to)):
        if known(a, b) and a != 1 and a != b:
            return False
    return True


class _RNNShapes:
    """Shape checks shared by the RNN ops (LSTM, GRU, singleGateRNN and their gradients):
    `gates` H-blocks per direction (4 LSTM, 3 GRU, 1 single-gate RNN)."""

    def __init__(self, ctx: InferContext, d, gates: int = 4):
        self.ctx, self.d = ctx, d
        self.D = D = 2 if d.bidirectional else 1
        self.gates = k = gates
        kH = "H" if k == 1 else f"{k}H"
        self.dtype = same_float_type(ctx, ctx.input_names)
        rw = ctx.type_of("recurrentWeight").shape
        want_rank = 3 if d.bidirectional else 2
        form = f"[2, {kH}, H] (bidirectional)" if d.bidirectional else f"[{kH}, H]"
        if rw is None or len(rw) != want_rank or (d.bidirectional and rw[0] not in (2, UNKNOWN)):
            raise ctx.error(ShapeError, "recurrentWeight", f"a tensor of shape {form}", rw)
        H = rw[-1]
        if not known(H):
            raise ctx.error(ShapeError, "recurrentWeight", "a static hidden size H (last axis)",
                            rw)
        if known(rw[-2]) and rw[-2] != k * H:
            raise ctx.error(ShapeError, "recurrentWeight", f"shape {form} with {kH} = {k * H} "
                            f"rows for H = {H}", rw)
        self.H = H
        src = ctx.type_of("source").shape
        if src is not None and len(src) != 3:
            raise ctx.error(ShapeError, "source", "a rank-3 tensor [T, N, I] (time-major)", src)
        self.T, self.N, feat = src if src is not None else (UNKNOWN, UNKNOWN, UNKNOWN)
        self.I = None
        iw = ctx.type_of("inputWeight")
        if iw is not None:
            if iw.shape is not None:
                if len(iw.shape) != 2 or (known(iw.shape[0]) and iw.shape[0] != D * k * H):
                    raise ctx.error(ShapeError, "inputWeight", f"shape [{D * k * H}, I] "
                                    f"(D*{kH} rows)", iw.shape)
                self.I = iw.shape[1]
                if known(self.I, feat) and self.I != feat:
                    raise ctx.error(ShapeError, "source", f"[T, N, {self.I}] (I = inputWeight's "
                                    "columns)", src)
        elif known(feat) and feat != D * k * H:
            raise ctx.error(ShapeError, "source", f"[T, N, {D * k * H}] (D*{kH} gate inputs: no "
                            "inputWeight given)", src)
        self.vector("bias", D * k * H, f"D*{kH}")
        for arg in ("initState", "initCell"):
            if arg in ctx.input_names:
                self.state_shaped(arg)
        self.mask_per_step = False
        m = ctx.type_of("mask")
        if m is not None:
            self.mask_per_step = self.state_or_sequence("mask")
        p = ctx.type_of("peephole") if "peephole" in ctx.input_names else None
        if p is not None:
            ok = [[4 * H]] if D == 1 else [[2, 4 * H], [8 * H]]
            if p.shape is not None and not any(  # (an unknown size matches, until known)
                    len(p.shape) == len(f) and all(a in (b, UNKNOWN) for a, b in zip(p.shape, f))
                    for f in ok):
                raise ctx.error(ShapeError, "peephole", " or ".join(map(str, ok)), p.shape)

    def vector(self, arg: str, n: int, what: str) -> None:
        """A rank-1 input of exactly n elements (when given)."""
        if arg not in self.ctx.input_names:
            return
        b = self.ctx.type_of(arg)
        if b is not None and b.shape is not None and (len(b.shape) != 1 or (
                known(b.shape[0]) and b.shape[0] != n)):
            raise self.ctx.error(ShapeError, arg, f"shape [{n}] ({what})", b.shape)

    @property
    def state_shape(self) -> list[int]:
        return [self.N, self.D * self.H]

    @property
    def seq_shape(self) -> list[int]:
        return [self.T, self.N, self.D * self.H]

    def state_shaped(self, arg: str) -> None:
        t = self.ctx.type_of(arg)
        if t is None or t.shape is None:
            return
        if not _broadcastable(_drop_leading_ones(t.shape), self.state_shape):
            raise self.ctx.error(ShapeError, arg, f"a state-shaped tensor (broadcastable to "
                                 f"[N, D*H] = {self.state_shape}, e.g. [1, N, D*H])", t.shape)

    def state_or_sequence(self, arg: str) -> bool:
        """True if `arg` is the per-step [T, N, D*H] form (T > 1), False if state-shaped."""
        t = self.ctx.type_of(arg)
        s = t.shape
        if s is None:
            raise self.ctx.error(ShapeError, arg, "a ranked tensor", "unranked")
        want = self.seq_shape
        seq_ok = not any(known(a, b) and a != b for a, b in zip(s[1:], want[1:]))
        if len(s) == 3 and s[0] == UNKNOWN:
            # either form, once the size is known: an error only if neither can fit (the
            # form is decided on the concrete shape, when the op's attributes are resolved)
            if seq_ok or _broadcastable(_drop_leading_ones(s), self.state_shape):
                return True
        elif len(s) == 3 and s[0] != 1 and (not known(s[0], self.T) or s[0] == self.T):
            if not seq_ok:
                raise self.ctx.error(ShapeError, arg, f"exactly [T, N, D*H] = {want} or a "
                                     "state-shaped tensor", s)
            return True
        if not _broadcastable(_drop_leading_ones(s), self.state_shape):
            raise self.ctx.error(ShapeError, arg, f"a state-shaped tensor (broadcastable to "
                                 f"{self.state_shape}) or exactly [T, N, D*H] = "
                                 f"{self.seq_shape}", s)
        return False

    def check_exact(self, arg: str, want: list[int], what: str) -> None:
        t = self.ctx.type_of(arg)
        s = t.shape
        if s is None:
            return
        if len(s) != len(want) or any(known(a, b) and a != b for a, b in zip(s, want)):
            raise self.ctx.error(ShapeError, arg, f"shape {want} ({what})", s)

    def given_shapes(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        return tuple((n, tuple(t.shape)) for n, t in zip(self.ctx.input_names,
                                                         self.ctx.in_types)
                     if t is not None and t.shape is not None)


_LSTMShapes = _RNNShapes


def _attrs(s: _RNNShapes, n_outputs: int, cell_per_step: bool, outputs: tuple[str, ...]
           ) -> LSTMAttrs | None:
    if not s.ctx.static:
        return None
    d = s.d
    return LSTMAttrs(d.reverse, d.bidirectional, d.forgetGateLast, d.activations(), s.T, s.N,
                     s.H, n_outputs, s.mask_per_step, cell_per_step, outputs, s.given_shapes())


def _n_outputs(d: LSTMDescriptor) -> int:
    return 3 if d.training else (2 if d.produceCell else 1)


def _infer_LSTM(ctx: InferContext):
    d = ctx.attrs.descriptor
    s = _LSTMShapes(ctx, d)
    n = _n_outputs(d)
    seq = ShapedType(s.seq_shape, s.dtype)
    outs = [seq, seq, ShapedType([s.T, s.N, s.D * 4 * s.H], s.dtype)][:n]
    return outs, _attrs(s, n, False, ())


def _infer_LSTMGradients(ctx: InferContext):
    d = ctx.attrs.descriptor
    s = _LSTMShapes(ctx, d)
    s.check_exact("sourceGradient", s.seq_shape, "dL/dstate: the forward's first output")
    s.check_exact("cellOutputFwd", s.seq_shape, "the forward's cell output")
    s.check_exact("zState", [s.T, s.N, s.D * 4 * s.H], "the forward's zState output")
    s.state_shaped("stateGradient")
    cell_seq = False
    if ctx.type_of("cellGradient") is not None:
        cell_seq = s.state_or_sequence("cellGradient")
    given = {n for n, t in zip(ctx.input_names, ctx.in_types) if t is not None}
    outputs = tuple(n for n in _GRAD_OUTPUTS if n in given)
    types = []
    for n in outputs:
        if n == "bias":
            types.append(ShapedType([1, 1, s.D * 4 * s.H], s.dtype))
        else:
            types.append(ShapedType(ctx.type_of(n).shape, s.dtype))
    return types, _attrs(s, len(types), cell_seq, outputs)


def _grad_LSTM(g: Graph, op: Operation, dys):
    """Re-run the forward in training mode when needed (so zState exists), then LSTMGradients
    with sourceGradient = dL/dstate and cellGradient = dL/dcell per step (SPEC 1.10), and
    the mask's gradient from its own LSTMGradients (`_mask_gradient`). LSTMGradients has no
    input for a gradient of zState, so a loss that reads zState is refused (UnsupportedError)
    rather than differentiated as if it did not."""
    d: LSTMDescriptor = op.attrs.descriptor
    if len(dys) > 2 and dys[2] is not None:
        raise UnsupportedError(f"LSTM gradient ({op.name or op.id}): the primary tensor depends "
                               "on the zState output (output 2), and no gradient can flow "
                               "through zState (LSTMGradients has no input for it); "
                               "differentiate a loss of state and cell only")
    ins = {n: op.input(n) for n in _FWD_INPUTS}
    if d.training:
        state, cell, z = op.outputTensors
    else:
        td = dataclasses.replace(d, training=True)
        state, cell, z = g.LSTM(ins["source"], ins["recurrentWeight"], descriptor=td,
                                **{k: v for k, v in ins.items()
                                   if k not in ("source", "recurrentWeight")})
    dstate = dys[0]
    if dstate is None:
        if state.shape is None or any(x < 0 for x in state.shape):
            raise UnsupportedError("LSTM gradient: needs static shapes")
        dstate = g.constant(0.0, state.shape, state.dataType)
    dcell = dys[1] if len(dys) > 1 else None
    grads = g.LSTMGradients(ins["source"], ins["recurrentWeight"], dstate, z, cell,
                            cellGradient=dcell, descriptor=d,
                            **{k: v for k, v in ins.items()
                               if k not in ("source", "recurrentWeight")})
    given = [n for n in _GRAD_OUTPUTS if ins.get(n) is not None]
    out = dict(zip(given, grads))
    if "bias" in out:  # LSTMGradients returns [1, 1, D*4H]; the bias input is [D*4H]
        out["bias"] = g.reshape(out["bias"], shape=ins["bias"].shape)
    if ins["mask"] is not None:
        out["mask"] = _mask_gradient(g, d, ins, state, cell, z, dstate, dcell)
    return out


def _mask_gradient(g: Graph, d: LSTMDescriptor, ins, state, cell, z, dstate, dcell) -> Tensor:
    """dL/dmask, which LSTMGradients does not return (Apple's op has no such output). The
    mask enters only through (h_prev * m[t]) @ R^T in a[t], so per direction
    dL/dm[t] = (dA[t] @ R) * h_prev[t], with dA = dL/da of every step and h_prev the unmasked
    previous state (initState, or zeros, at the first processed step). dA is the source
    gradient of LSTMGradients called without inputWeight and bias (whose source values it
    does not read, so zState stands in for them). A state-shaped mask sums that over the steps
    and its broadcast axes. The ops built here run only when the mask's gradient is asked
    for."""
    mask = ins["mask"]
    for t in (mask, state):
        if t.shape is None or any(s < 0 for s in t.shape):
            raise UnsupportedError("LSTM gradient with respect to mask: needs static shapes")
    T, N, DH = state.shape
    D = 2 if d.bidirectional else 1
    H = DH // D
    dt = mask.dataType
    if T == 0 or N == 0 or H == 0:
        return g.constant(0.0, mask.shape, dt)
    opt = {k: ins[k] for k in ("initState", "initCell", "mask", "peephole")}
    dA = g.LSTMGradients(z, ins["recurrentWeight"], dstate, z, cell, cellGradient=dcell,
                         descriptor=d, **opt)[0]                              # [T, N, D*4H]
    h0 = ins["initState"]
    if h0 is not None:  # state-shaped -> [N, D*H]
        core = _drop_leading_ones(h0.shape)
        h0 = g.broadcast(g.reshape(h0, shape=core), [N, DH])
    parts = []
    for k in range(D):
        R = ins["recurrentWeight"]
        if D == 2:
            R = g.reshape(g.sliceTensor(R, dimension=0, start=k, length=1), shape=[4 * H, H])
        dAR = g.matrixMultiplication(
            g.sliceTensor(dA, dimension=2, start=4 * H * k, length=4 * H), R)   # [T, N, H]
        h = g.sliceTensor(state, dimension=2, start=H * k, length=H)
        first = (g.constant(0.0, [1, N, H], dt) if h0 is None else g.reshape(
            g.sliceTensor(h0, dimension=1, start=H * k, length=H), shape=[1, N, H]))
        if (k == 1) if d.bidirectional else d.reverse:  # h_prev[t] = h[t + 1]
            hp = g.concatTensors([g.sliceTensor(h, dimension=0, start=1, length=T - 1), first],
                                 0)
        else:                                           # h_prev[t] = h[t - 1]
            hp = g.concatTensors([first, g.sliceTensor(h, dimension=0, start=0, length=T - 1)],
                                 0)
        parts.append(g.multiplication(dAR, hp))
    return _mask_in_its_form(g, parts, mask, N, DH)


def _mask_in_its_form(g, parts, mask, N: int, DH: int):
    """The mask's gradient from its per-direction [T, N, H] parts, in the mask's own form: the
    per-step [T, N, D*H] as it is, a state-shaped mask summed over the steps and over its
    broadcast axes (the LSTM's and the GRU / RNN's rules)."""
    dm = parts[0] if len(parts) == 1 else g.concatTensors(parts, 2)         # [T, N, D*H]
    s = list(mask.shape)
    if len(s) == 3 and s[0] != 1:  # the per-step form [T, N, D*H]
        return dm
    dm = g.reshape(g.reductionSum(dm, axes=[0]), shape=[N, DH])
    core = _drop_leading_ones(s)
    core2 = [1] * (2 - len(core)) + core
    axes = [i for i in (0, 1) if core2[i] == 1 and (N, DH)[i] != 1]
    if axes:
        dm = g.reductionSum(dm, axes=axes)
    return g.reshape(dm, shape=s)


register_op("LSTM", _infer_LSTM, _grad_LSTM)
register_op("LSTMGradients", _infer_LSTMGradients)


# ---------------------------------------------------------------------------------------------
# GRU and singleGateRNN (SPEC 4): the LSTM's shape rules with 3 (GRU) or 1 gate blocks
# ---------------------------------------------------------------------------------------------

_GRU_FWD = ("source", "recurrentWeight", "inputWeight", "bias", "initState", "mask",
            "secondaryBias")
_GRU_GRAD = ("source", "recurrentWeight", "sourceGradient", "zState", "outputFwd",
             "stateGradient", "inputWeight", "bias", "initState", "mask", "secondaryBias")
_GRU_GRAD_OUTPUTS = ("source", "recurrentWeight", "inputWeight", "bias", "initState",
                     "secondaryBias")
_SG_FWD = ("source", "recurrentWeight", "inputWeight", "bias", "initState", "mask")
_SG_GRAD = ("source", "recurrentWeight", "sourceGradient", "zState", "stateGradient",
            "inputWeight", "bias", "initState", "mask")
_SG_GRAD_OUTPUTS = ("source", "recurrentWeight", "inputWeight", "bias", "initState")


@dataclass(frozen=True)
class GatedRNNAttrs:
    """Resolved parameters of GRU / singleGateRNN kernels (static shapes). `gates` is 3 (GRU)
    or 1 (single-gate RNN); the GRU flags are False for the single-gate RNN, whose one
    activation is `activations[0]`."""

    gates: int
    reverse: bool
    bidirectional: bool
    reset_gate_first: bool
    reset_after: bool
    flip_z: bool
    activations: tuple[int, ...]  # GRU: (f_z, f_r, f_o); single gate: (activation,)
    T: int
    N: int
    H: int
    n_outputs: int
    mask_per_step: bool
    outputs: tuple[str, ...]  # gradient ops: the gradients returned, in order
    shapes: tuple[tuple[str, tuple[int, ...]], ...]

    @property
    def D(self) -> int:
        return 2 if self.bidirectional else 1

    def shape_of(self, name: str) -> tuple[int, ...]:
        return dict(self.shapes)[name]


def _gated_shapes(ctx: InferContext) -> _RNNShapes:
    d = ctx.attrs.descriptor
    gates = 3 if isinstance(d, GRUDescriptor) else 1
    s = _RNNShapes(ctx, d, gates)
    if gates == 3:
        s.vector("secondaryBias", s.D * s.H, "D*H")
    return s


def _gated_attrs(s: _RNNShapes, n_outputs: int, outputs: tuple[str, ...]
                 ) -> GatedRNNAttrs | None:
    if not s.ctx.static:
        return None
    d = s.d
    gru = s.gates == 3
    acts = d.activations() if gru else (int(d.activation),)
    return GatedRNNAttrs(s.gates, d.reverse, d.bidirectional, gru and d.resetGateFirst,
                         gru and d.resetAfter, gru and d.flipZ, acts, s.T, s.N, s.H, n_outputs,
                         s.mask_per_step, outputs, s.given_shapes())


def _infer_gated(ctx: InferContext):
    """GRU / singleGateRNN: [state] or, with training, [state, zState]."""
    s = _gated_shapes(ctx)
    n = 2 if s.d.training else 1
    outs = [ShapedType(s.seq_shape, s.dtype),
            ShapedType([s.T, s.N, s.D * s.gates * s.H], s.dtype)][:n]
    return outs, _gated_attrs(s, n, ())


def _infer_gated_gradients(ctx: InferContext):
    s = _gated_shapes(ctx)
    s.check_exact("sourceGradient", s.seq_shape, "dL/dstate: the forward's first output")
    s.check_exact("zState", [s.T, s.N, s.D * s.gates * s.H], "the forward's zState output")
    if "outputFwd" in ctx.input_names:
        s.check_exact("outputFwd", s.seq_shape, "the forward's state output")
    s.state_shaped("stateGradient")
    given = {n for n, t in zip(ctx.input_names, ctx.in_types) if t is not None}
    order = _GRU_GRAD_OUTPUTS if s.gates == 3 else _SG_GRAD_OUTPUTS
    outputs = tuple(n for n in order if n in given)
    types = [ShapedType([1, 1, s.D * s.gates * s.H] if n == "bias" else ctx.type_of(n).shape,
                        s.dtype) for n in outputs]
    return types, _gated_attrs(s, len(types), outputs)


def _grad_gated(g: Graph, op: Operation, dys):
    """GRU / singleGateRNN: re-run the forward in training mode when needed (so zState
    exists), then the gradient op with sourceGradient = dL/dstate (zeros if the state is
    unused), and the mask's gradient from a second gradient op (`_gated_mask_gradient`).
    No gradient flows through zState (the gradient ops have no input for it): a loss that
    reads it is refused."""
    gru = op.kind == "GRU"
    d = op.attrs.descriptor
    if len(dys) > 1 and dys[1] is not None:
        raise UnsupportedError(f"{op.kind} gradient ({op.name or op.id}): the primary tensor "
                               "depends on the zState output (output 1), and no gradient can "
                               f"flow through zState ({op.kind}Gradients has no input for "
                               "it); differentiate a loss of the state only")
    names = _GRU_FWD if gru else _SG_FWD
    ins = {n: op.input(n) for n in names}
    opt = {k: v for k, v in ins.items() if k not in ("source", "recurrentWeight")}
    fwd = g.GRU if gru else g.singleGateRNN
    if d.training:
        state, z = op.outputTensors
    else:
        state, z = fwd(ins["source"], ins["recurrentWeight"],
                       descriptor=dataclasses.replace(d, training=True), **opt)
    dstate = dys[0]
    if dstate is None:
        if state.shape is None or any(x < 0 for x in state.shape):
            raise UnsupportedError(f"{op.kind} gradient: needs static shapes")
        dstate = g.constant(0.0, state.shape, state.dataType)
    if gru:
        grads = g.GRUGradients(ins["source"], ins["recurrentWeight"], dstate, z, state,
                               descriptor=d, **opt)
        order = _GRU_GRAD_OUTPUTS
    else:
        grads = g.singleGateRNNGradients(ins["source"], ins["recurrentWeight"], dstate, z,
                                         descriptor=d, **opt)
        order = _SG_GRAD_OUTPUTS
    out = dict(zip([n for n in order if ins.get(n) is not None], grads))
    if "bias" in out:  # the gradient op returns [1, 1, D*G*H]; the bias input is [D*G*H]
        out["bias"] = g.reshape(out["bias"], shape=ins["bias"].shape)
    if ins["mask"] is not None:
        out["mask"] = _gated_mask_gradient(g, op.kind, d, ins, state, z, dstate)
    return out


def _state_prev(g: Graph, h: Tensor, first: Tensor, rev: bool) -> Tensor:
    """h_prev[t] of a direction's state sequence h [T, N, H]: h[t - 1] (h[t + 1] reversed),
    `first` [1, N, H] at the first processed step."""
    T = h.shape[0]
    if rev:
        return g.concatTensors([g.sliceTensor(h, dimension=0, start=1, length=T - 1), first], 0)
    return g.concatTensors([first, g.sliceTensor(h, dimension=0, start=0, length=T - 1)], 0)


def _gated_mask_gradient(g: Graph, kind: str, d, ins, state, z, dstate) -> Tensor:
    """dL/dmask, which the gradient ops do not return (Apple's have no such output). The mask
    enters only as hm = h_prev * m[t]; dL/dm[t] = dL/dhm[t] * h_prev[t] (h_prev unmasked:
    initState, or zeros, at the first processed step). dL/dhm comes from dA = dL/dx' (the
    source gradient of the gradient op called without inputWeight and bias, zState standing
    in for the source values it does not read):
      single gate:  dhm = dA @ R
      GRU:          dhm = dA_z @ R_z + dA_r @ R_r + (resetAfter: (dA_o * r) @ R_o,
                                                     else:       (dA_o @ R_o) * r)
    A state-shaped mask sums that over the steps and its broadcast axes."""
    mask = ins["mask"]
    for t in (mask, state):
        if t.shape is None or any(s < 0 for s in t.shape):
            raise UnsupportedError(f"{kind} gradient with respect to mask: needs static shapes")
    T, N, DH = state.shape
    D = 2 if d.bidirectional else 1
    H = DH // D
    gru = kind == "GRU"
    k = 3 if gru else 1
    dt = mask.dataType
    if T == 0 or N == 0 or H == 0:
        return g.constant(0.0, mask.shape, dt)
    opt = {n: ins[n] for n in ("initState", "mask") + (("secondaryBias",) if gru else ())}
    if gru:
        dA = g.GRUGradients(z, ins["recurrentWeight"], dstate, z, state, descriptor=d,
                            **opt)[0]                                           # [T, N, D*3H]
    else:
        dA = g.singleGateRNNGradients(z, ins["recurrentWeight"], dstate, z, descriptor=d,
                                      **opt)[0]                                 # [T, N, D*H]
    h0 = ins["initState"]
    if h0 is not None:  # state-shaped -> [N, D*H]
        h0 = g.broadcast(g.reshape(h0, shape=_drop_leading_ones(h0.shape)), [N, DH])
    R = ins["recurrentWeight"]
    parts = []
    for j in range(D):
        Rd = g.reshape(g.sliceTensor(R, dimension=0, start=j, length=1), shape=[k * H, H]) \
            if D == 2 else R
        dAd = g.sliceTensor(dA, dimension=2, start=k * H * j, length=k * H)
        if gru:
            def blk(t, b, axis):
                return g.sliceTensor(t, dimension=axis, start=b * H, length=H)
            br, bz = (0, 1) if d.resetGateFirst else (1, 0)      # blocks of r and z
            r = blk(g.sliceTensor(z, dimension=2, start=k * H * j, length=k * H), br, 2)
            dhm = g.addition(g.matrixMultiplication(blk(dAd, br, 2), blk(Rd, br, 0)),
                             g.matrixMultiplication(blk(dAd, bz, 2), blk(Rd, bz, 0)))
            dAo, Ro = blk(dAd, 2, 2), blk(Rd, 2, 0)
            if d.resetAfter:
                dho = g.matrixMultiplication(g.multiplication(dAo, r), Ro)
            else:
                dho = g.multiplication(g.matrixMultiplication(dAo, Ro), r)
            dhm = g.addition(dhm, dho)
        else:
            dhm = g.matrixMultiplication(dAd, Rd)                                # [T, N, H]
        h = g.sliceTensor(state, dimension=2, start=H * j, length=H)
        first = (g.constant(0.0, [1, N, H], dt) if h0 is None else g.reshape(
            g.sliceTensor(h0, dimension=1, start=H * j, length=H), shape=[1, N, H]))
        rev = (j == 1) if d.bidirectional else d.reverse
        parts.append(g.multiplication(dhm, _state_prev(g, h, first, rev)))
    return _mask_in_its_form(g, parts, mask, N, DH)


register_op("GRU", _infer_gated, _grad_gated)
register_op("GRUGradients", _infer_gated_gradients)
register_op("singleGateRNN", _infer_gated, _grad_gated)
register_op("singleGateRNNGradients", _infer_gated_gradients)


class RNNOps:
    """Graph methods of the recurrent family (mixed into `Graph`)."""

    def LSTM(self, source: Tensor, recurrentWeight: Tensor, *, inputWeight: Tensor | None = None,
             bias: Tensor | None = None, initState: Tensor | None = None,
             initCell: Tensor | None = None, mask: Tensor | None = None,
             peephole: Tensor | None = None, descriptor: LSTMDescriptor,
             name: str | None = None) -> list[Tensor]:
        """Long short-term memory over the leading (time) axis of `source`.

        T time, N batch, I input, H hidden, D = 2 if bidirectional else 1.
          source           [T, N, I]; [T, N, D*4H] when inputWeight is None
          recurrentWeight  [4H, H]; bidirectional [2, 4H, H]
          inputWeight [D*4H, I], bias [D*4H], initState/initCell state-shaped ([N, D*H]),
          mask state-shaped or [T, N, D*H], peephole [4H] ([2, 4H] or [8H] bidirectional)
        Returns [state], [state, cell] (produceCell) or [state, cell, zState] (training):
        state and cell [T, N, D*H], zState [T, N, D*4H] (the activated gates). The equations
        are in this module's docstring and docs/semantics.md.
        """
        d = LSTMDescriptor.validated_copy(descriptor, "LSTM", name)
        args = dict(source=source, recurrentWeight=recurrentWeight, inputWeight=inputWeight,
                    bias=bias, initState=initState, initCell=initCell, mask=mask,
                    peephole=peephole)
        return self._add("LSTM", [(n, args[n]) for n in _FWD_INPUTS], _RNNOpAttrs(d), name,
                         optional=_FWD_INPUTS[2:])

    def LSTMGradients(self, source: Tensor, recurrentWeight: Tensor, sourceGradient: Tensor,
                      zState: Tensor, cellOutputFwd: Tensor, *,
                      stateGradient: Tensor | None = None, cellGradient: Tensor | None = None,
                      inputWeight: Tensor | None = None, bias: Tensor | None = None,
                      initState: Tensor | None = None, initCell: Tensor | None = None,
                      mask: Tensor | None = None, peephole: Tensor | None = None,
                      descriptor: LSTMDescriptor, name: str | None = None) -> list[Tensor]:
        """Gradients of an LSTM, given dL/dstate (`sourceGradient`, [T, N, D*H]) and the
        forward's `zState` and cell output (`cellOutputFwd`) from LSTM with training=True.

        stateGradient: dL/d(final state of each direction), state-shaped. cellGradient:
        state-shaped = dL/d(final cell), or [T, N, D*H] = dL/dcell at every step.
        Returns, in this order and only for the inputs given: d source ([T, N, I], or
        [T, N, D*4H] without inputWeight), d recurrentWeight, d inputWeight, d bias
        ([1, 1, D*4H]), d peephole, d initState, d initCell (each in its input's shape).
        """
        d = LSTMDescriptor.validated_copy(descriptor, "LSTMGradients", name)
        args = dict(source=source, recurrentWeight=recurrentWeight,
                    sourceGradient=sourceGradient, zState=zState, cellOutputFwd=cellOutputFwd,
                    stateGradient=stateGradient, cellGradient=cellGradient,
                    inputWeight=inputWeight, bias=bias, initState=initState, initCell=initCell,
                    mask=mask, peephole=peephole)
        return self._add("LSTMGradients", [(n, args[n]) for n in _GRAD_INPUTS], _RNNOpAttrs(d),
                         name, optional=_GRAD_INPUTS[5:])

    def GRU(self, source: Tensor, recurrentWeight: Tensor, inputWeight: Tensor | None = None,
            bias: Tensor | None = None, *, initState: Tensor | None = None,
            mask: Tensor | None = None, secondaryBias: Tensor | None = None,
            descriptor: GRUDescriptor, name: str | None = None) -> list[Tensor]:
        """Gated recurrent unit over the leading (time) axis of `source` (macOS 13).

        T time, N batch, I input, H hidden, D = 2 if bidirectional else 1; every 3H axis
        stacks the gate blocks [z, r, o] ([r, z, o] with resetGateFirst).
          source           [T, N, I]; [T, N, D*3H] when inputWeight is None
          recurrentWeight  [3H, H]; bidirectional [2, 3H, H]
          inputWeight [D*3H, I], bias [D*3H], initState state-shaped ([N, D*H]),
          mask state-shaped or [T, N, D*H], secondaryBias [D*H] (read with resetAfter only)
        Per direction (x' = x @ W^T + b, hm = h_prev * m):
          z = f_z(x'_z + hm @ R_z^T);  r = f_r(x'_r + hm @ R_r^T)
          c = (hm * r) @ R_o^T, or with resetAfter (hm @ R_o^T + secondaryBias) * r
          o = f_o(x'_o + c)
          h = z * h_prev + (1 - z) * o, or with flipZ (1 - z) * h_prev + z * o
        Returns [state] or, with training, [state, zState]: state [T, N, D*H], zState
        [T, N, D*3H] (the activated gates z, r, o in gate order).
        """
        d = GRUDescriptor.validated_copy(descriptor, "GRU", name)
        args = dict(source=source, recurrentWeight=recurrentWeight, inputWeight=inputWeight,
                    bias=bias, initState=initState, mask=mask, secondaryBias=secondaryBias)
        return self._add("GRU", [(n, args[n]) for n in _GRU_FWD], _RNNOpAttrs(d), name,
                         optional=_GRU_FWD[2:])

    def GRUGradients(self, source: Tensor, recurrentWeight: Tensor, sourceGradient: Tensor,
                     zState: Tensor, outputFwd: Tensor, *,
                     stateGradient: Tensor | None = None, inputWeight: Tensor | None = None,
                     bias: Tensor | None = None, initState: Tensor | None = None,
                     mask: Tensor | None = None, secondaryBias: Tensor | None = None,
                     descriptor: GRUDescriptor, name: str | None = None) -> list[Tensor]:
        """Gradients of a GRU, given dL/dstate (`sourceGradient`, [T, N, D*H]), the forward's
        `zState` ([T, N, D*3H], GRU with training=True) and its state output (`outputFwd`,
        [T, N, D*H]); the other inputs are the forward's. stateGradient: dL/d(final state of
        each direction), state-shaped, added at the last processed step.
        Returns, in this order and only for the inputs given: d source ([T, N, I], or
        [T, N, D*3H] without inputWeight), d recurrentWeight, d inputWeight, d bias
        ([1, 1, D*3H]), d initState, d secondaryBias (each other one in its input's shape;
        d secondaryBias is zeros without resetAfter).
        """
        d = GRUDescriptor.validated_copy(descriptor, "GRUGradients", name)
        args = dict(source=source, recurrentWeight=recurrentWeight,
                    sourceGradient=sourceGradient, zState=zState, outputFwd=outputFwd,
                    stateGradient=stateGradient, inputWeight=inputWeight, bias=bias,
                    initState=initState, mask=mask, secondaryBias=secondaryBias)
        return self._add("GRUGradients", [(n, args[n]) for n in _GRU_GRAD], _RNNOpAttrs(d),
                         name, optional=_GRU_GRAD[5:])

    def singleGateRNN(self, source: Tensor, recurrentWeight: Tensor, *,
                      inputWeight: Tensor | None = None, bias: Tensor | None = None,
                      initState: Tensor | None = None, mask: Tensor | None = None,
                      descriptor: SingleGateRNNDescriptor, name: str | None = None
                      ) -> list[Tensor]:
        """Single-gate (Elman) RNN over the leading (time) axis of `source`.

          source [T, N, I] ([T, N, D*H] when inputWeight is None), recurrentWeight [H, H]
          (bidirectional [2, H, H]), inputWeight [D*H, I], bias [D*H], initState
          state-shaped ([N, D*H]), mask state-shaped or [T, N, D*H]
        Per direction: z[t] = x[t] @ W^T + b + (h_prev * m) @ R^T, h[t] = activation(z[t]).
        Returns [state] or, with training, [state, zState]: both [T, N, D*H]; zState holds
        the pre-activation z.
        """
        d = SingleGateRNNDescriptor.validated_copy(descriptor, "singleGateRNN", name)
        args = dict(source=source, recurrentWeight=recurrentWeight, inputWeight=inputWeight,
                    bias=bias, initState=initState, mask=mask)
        return self._add("singleGateRNN", [(n, args[n]) for n in _SG_FWD], _RNNOpAttrs(d),
                         name, optional=_SG_FWD[2:])

    def singleGateRNNGradients(self, source: Tensor, recurrentWeight: Tensor,
                               sourceGradient: Tensor, zState: Tensor, *,
                               stateGradient: Tensor | None = None,
                               inputWeight: Tensor | None = None, bias: Tensor | None = None,
                               initState: Tensor | None = None, mask: Tensor | None = None,
                               descriptor: SingleGateRNNDescriptor, name: str | None = None
                               ) -> list[Tensor]:
        """Gradients of a single-gate RNN, given dL/dstate (`sourceGradient`, [T, N, D*H])
        and the forward's `zState` (singleGateRNN with training=True); the other inputs are
        the forward's. stateGradient: dL/d(final state of each direction), state-shaped.
        Returns, in this order and only for the inputs given: d source ([T, N, I], or
        [T, N, D*H] without inputWeight), d recurrentWeight, d inputWeight, d bias
        ([1, 1, D*H]), d initState (in its input's shape).
        """
        d = SingleGateRNNDescriptor.validated_copy(descriptor, "singleGateRNNGradients", name)
        args = dict(source=source, recurrentWeight=recurrentWeight,
                    sourceGradient=sourceGradient, zState=zState, stateGradient=stateGradient,
                    inputWeight=inputWeight, bias=bias, initState=initState, mask=mask)
        return self._add("singleGateRNNGradients", [(n, args[n]) for n in _SG_GRAD],
                         _RNNOpAttrs(d), name, optional=_SG_GRAD[4:])
