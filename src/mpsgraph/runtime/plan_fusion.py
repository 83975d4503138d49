"""Compile-time rewrites of a plan that join steps of one op family into one kernel call
(runtime/executable.py calls them from `_plan`, once, before slots are freed and before the
elementwise fusion of backends/torch/fusion.py).

`pair_statistics`: a `reductionMean(x, axes=A)` step and a `variance(x, axes=A)` step of the
same x over the same (normalised) axes - the variance with no given mean, or given exactly
that mean's result - become ONE step of the internal op `varianceMean` (ops/normalization.py;
its kernels take (the variance's kernel attrs, whether it was given the mean)), which returns
(mean, variance) from one pass over x for the statistics (torch: the Triton statistics kernel
or ATen's batch-norm statistics in the batch-norm layout, `torch.var_mean` elsewhere; NumPy:
the mean computed once). The batch-norm training pattern
`normalize(x, mean(x, A), variance(x, mean: mean(x, A), axes: A), ...)` then reads x once for
its statistics instead of twice. Results: the same op semantics; the torch kernel may differ
from the two separate kernels within float rounding (SPEC: the torch backend may differ within
floating-point tolerance); the NumPy one is bit-identical. Where the pattern is not there
(other axes, another x, another mean, a dynamic step) the plan is unchanged.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError

__all__ = ["pair_statistics"]


def pair_statistics(steps: list[Any], backend: Any, make_step: Any) -> list[Any]:
    """`steps` with each pair (reductionMean, variance) of one x and axes as one step.
    `make_step(op, kernel, ins, outs, attrs, dynamic)` builds a plan step (executable._Step)."""
    means: dict[tuple[int, tuple[int, ...]], int] = {}  # (x slot, axes) -> mean step index
    mean_of_slot: dict[int, int] = {}  # mean result slot -> its step index
    for i, st in enumerate(steps):
        if st.kind == "reductionMean" and not st.dynamic and not st.host and st.fused == ():
            means.setdefault((st.ins[0], tuple(st.attrs)), i)
            mean_of_slot[st.outs[0]] = i
    if not means:
        return steps
    pairs: dict[int, int] = {}  # mean step index -> variance step index
    for i, st in enumerate(steps):
        if st.kind != "variance" or st.dynamic or st.host or st.attrs is None:
            continue
        x, m = st.ins[0], st.ins[1]
        j = means.get((x, tuple(st.attrs.axes)))
        if m >= 0 and mean_of_slot.get(m) != j:
            continue  # a given mean that is not mean(x) over these axes
        if j is None or j in pairs:
            continue
        pairs[j] = i
    if not pairs:
        return steps
    try:
        kernel = backend.kernel("varianceMean")
    except UnsupportedError:
        return steps
    out: list[Any] = []
    drop = set()
    at: dict[int, Any] = {}
    for j, i in pairs.items():
        mst, vst = steps[j], steps[i]
        st = make_step(vst.op, kernel, (mst.ins[0],), (mst.outs[0], vst.outs[0]),
                       (vst.attrs, vst.ins[1] >= 0), False)
        st.fused = (mst.op, vst.op)
        at[min(i, j)] = st
        drop.add(max(i, j))
    for k, st in enumerate(steps):
        if k in at:
            out.append(at[k])
        elif k not in drop:
            out.append(st)
    return out
