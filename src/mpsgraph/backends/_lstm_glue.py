"""The LSTM graph kernels' argument handling, written once for every backend.

The op's arguments arrive in the user's forms (state-shaped initState / initCell / mask /
stateGradient / cellGradient, peephole as [4H], [2, 4H] or [8H], R as [4H, H] or [2, 4H, H]);
the backends' `lstm_forward` / `lstm_backward` take canonical forms (docs in
backends/numpy/rnn.py). This module converts in, calls the backend's functions, and shapes the
gradients back (bias as [1, 1, D*4H], each other gradient in its input's shape, a broadcast
state's gradient summed). A backend supplies only its array primitives (`ArrayOps`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..ops.rnn import LSTMAttrs


@dataclass(frozen=True)
class ArrayOps:
    ndim: Callable[[Any], int]
    broadcast: Callable[[Any, tuple[int, ...]], Any]  # a view of `a` broadcast to a shape
    sum: Callable[[Any, tuple[int, ...], bool], Any]  # sum over axes (keeping them or not)
    widen: Callable[[Any], tuple[Any, Any]]  # (a in float32 if a half type, a's dtype)
    narrow: Callable[[Any, Any], Any]  # back to a dtype
    contiguous: Callable[[Any], Any]


# activation codes of LSTMAttrs.activations (MPSGraph's RNNActivation values)
NONE, RELU, TANH, SIGMOID, HARD_SIGMOID = 0, 1, 2, 3, 4


def step_order(T: int, rev: bool) -> range:
    """The processing order of a direction's steps."""
    return range(T - 1, -1, -1) if rev else range(T)


def step_shift(T: int, rev: bool) -> tuple[slice, slice, int]:
    """(consumer steps, producer steps, first step): step t in `consumer` reads the state of
    step t' in `producer` as h_prev/c_prev; `first` reads h0/c0."""
    if rev:
        return slice(0, T - 1), slice(1, T), T - 1
    return slice(1, T), slice(0, T - 1), 0


def direction_part(a: Any, d: int, width: int) -> Any:
    """Direction d's channels of an array whose last axis is [dir0 | dir1] (None stays None)."""
    return None if a is None else a[..., d * width:(d + 1) * width]


def gate_blocks(forget_gate_last: bool) -> tuple[int, int, int, int]:
    """Block index of gates (i, f, z, o) on the 4H axis."""
    return (0, 2, 1, 3) if forget_gate_last else (0, 1, 2, 3)


def block_activations(blocks, activations) -> list[int]:
    """Activation of each of the four gate blocks, in block order."""
    acts = [0] * 4
    for blk, act in zip(blocks, activations[:4]):
        acts[blk] = int(act)
    return acts


def _state(xp: ArrayOps, a: Any, n: int, dh: int) -> Any:
    """A state-shaped operand as [N, D*H] (leading size-1 axes dropped, then broadcast)."""
    if a is None:
        return None
    while xp.ndim(a) > 2 and a.shape[0] == 1:
        a = a[0]
    return xp.broadcast(a, (n, dh))


def _unbroadcast(xp: ArrayOps, g: Any, shape: tuple[int, ...], dt: Any) -> Any:
    """Sum an [N, D*H] gradient back to the state-shaped input's own shape, in dtype `dt`
    (the backward returns it unrounded, float32 for the half types: summed, then rounded
    once)."""
    core = list(shape)
    while len(core) > 2 and core[0] == 1:
        core = core[1:]
    g = xp.widen(g)[0]
    lead = xp.ndim(g) - len(core)
    if lead:
        g = xp.sum(g, tuple(range(lead)), False)
    axes = tuple(i for i, s in enumerate(core) if s == 1 and g.shape[i] != 1)
    if axes:
        g = xp.sum(g, axes, True)
    return xp.narrow(g.reshape(shape), dt)


def _canonical(xp: ArrayOps, a: LSTMAttrs, R, h0, c0, mask, peephole):
    D, H, N = a.D, a.H, a.N
    R = R.reshape(D, 4 * H, H)
    h0, c0 = _state(xp, h0, N, D * H), _state(xp, c0, N, D * H)
    if mask is not None and not a.mask_per_step:
        mask = _state(xp, mask, N, D * H)
    if peephole is not None:
        peephole = peephole.reshape(D, 4 * H)
    return R, h0, c0, mask, peephole


def _options(a: LSTMAttrs) -> dict[str, Any]:
    return dict(reverse=a.reverse, bidirectional=a.bidirectional,
                forget_gate_last=a.forget_gate_last, activations=a.activations)


def lstm_kernel(xp: ArrayOps, forward: Callable[..., Any]) -> Callable[..., Any]:
    """The `LSTM` graph kernel of a backend whose canonical forward is `forward`."""

    def LSTM(x, R, W, b, h0, c0, mask, peephole, a: LSTMAttrs):
        R, h0, c0, mask, peephole = _canonical(xp, a, R, h0, c0, mask, peephole)
        state, cell, z = forward(x, R, W, b, h0, c0, mask, peephole, **_options(a))
        if a.n_outputs == 1:
            return state
        return (state, cell, z)[:a.n_outputs]

    return LSTM


def lstm_gradients_kernel(xp: ArrayOps, backward: Callable[..., Any]) -> Callable[..., Any]:
    """The `LSTMGradients` graph kernel of a backend whose canonical backward is `backward`."""

    def LSTMGradients(x, R, dstate, zstate, cell, dh_final, dcell, W, b, h0, c0, mask,
                      peephole, a: LSTMAttrs):
        R, h0, c0, mask, peephole = _canonical(xp, a, R, h0, c0, mask, peephole)
        dhf = _state(xp, dh_final, a.N, a.D * a.H)
        dcf = dcs = None
        if dcell is not None:
            if a.cell_grad_per_step:
                dcs = dcell
            else:
                dcf = _state(xp, dcell, a.N, a.D * a.H)
        g = backward(x, R, dstate, zstate, cell, W, b, h0, c0, mask, peephole, dhf, dcf, dcs,
                     need_b=b is not None, need_peephole=peephole is not None,
                     need_h0=h0 is not None, need_c0=c0 is not None,
                     wide=("initState", "initCell"), **_options(a))
        out = []
        for name in a.outputs:
            v = g[name]
            if name == "recurrentWeight" or name == "peephole":
                v = v.reshape(a.shape_of(name))
            elif name == "bias":
                v = v.reshape(1, 1, -1)
            elif name in ("initState", "initCell"):
                v = _unbroadcast(xp, v, a.shape_of(name), x.dtype)
            out.append(xp.contiguous(v))
        return out[0] if len(out) == 1 else tuple(out)

    return LSTMGradients
