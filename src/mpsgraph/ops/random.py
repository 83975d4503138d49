"""The random family (Apple's MPSGraphRandomOps.h): `randomPhiloxStateTensor`, `randomTensor`,
`randomUniformTensor` and `dropout`, with `RandomOpDescriptor` (descriptors.py).

Random numbers are counter-based: Philox4x32-10 (Salmon et al., SC'11; the algorithm of
Random123, cuRAND and JAX), computed by backends/_random_math.py, the same code for every
backend, in integer arithmetic: one seed gives the same bits on cpu, torch-cpu and cuda.

State tensor (Apple's `randomPhiloxStateTensor`; its layout is Apple's private business, so
ours is documented here): int32 [7], the bits of seven 32-bit words

    [version = 1, c0, c1, c2, c3, k0, k1]

with (c0, c1, c2, c3) the 128-bit Philox counter, low word first (counterLow = c0 + 2^32 c1,
counterHigh = c2 + 2^32 c3), and (k0, k1) the 64-bit key (key = k0 + 2^32 k1). PyTorch's MPS
generator fills a 7-word state the same way (words 1-4 the counter, 5-6 the key, word 0 = 1).
Word 0 is ignored when a state is read. `randomPhiloxStateTensor(seed)` is counter 0 and
key = seed. A fed state (a placeholder of int32 [7], e.g. a state returned by an earlier run)
continues its stream.

Streams: element i of a result of n elements (row-major) is made from word i of the stream
(word w = word w mod 4 of Philox(counter + w // 4, key)): uniform and the inverse-CDF normals
use one word per element, Box-Muller one pair of words per two elements; the state returned
by a stateful op has its counter advanced by the number of counters used: ceil(words / 4), so
that consecutive ops draw disjoint parts of one stream (truncated Box-Muller: a fixed
(REJECTION_ROUNDS + 1) * ceil(n2 / 4), whatever the rejections). Conversions:

- uniform float [min, max): min + (w >> 8) 2^-24 (max - min) in float64, rounded to the
  dataType; a value that rounds to max becomes the largest value below max.
- uniform int32 [minInteger, maxInteger]: minInteger + floor(w (maxInteger - minInteger + 1)
  / 2^32).
- normal, invCDF: mean + sd ndtri((w + 1/2) 2^-32). Box-Muller: u1 = (w_2k + 1/2) 2^-32,
  u2 = w_2k+1 2^-32, z_2k = R cos(2 pi u2), z_2k+1 = R sin(2 pi u2), R = sqrt(-2 ln u1).
- truncatedNormal [min, max): invCDF: ndtri(F(a) + u (F(b) - F(a))) on the side of the
  smaller tail; Box-Muller: rejection, REJECTION_ROUNDS rounds of fresh pairs, then the
  inverse CDF for what is still rejected (both exact samplers of the same distribution).

Seeds: the seed forms (`seed=`) are the state of that seed: every call with one seed gives the
same values. The forms without seed or state draw a fresh 64-bit key on every run (Apple: "a
random seed value ... subsequent calls are not guaranteed to result in a unique stream"), on
torch from the device's own generator, so that a captured CUDA graph draws anew on each replay.

dropout(x, rate): each element is kept with probability 1 - rate (kept where
(w >> 8) 2^-24 >= rate) and scaled by 1 / (1 - rate); rate = 1 gives zeros. Its gradient is the
incoming gradient times the SAME mask and scale (the op's second, hidden output), so the
backward of a run uses the forward's random bits. A fresh key every run.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..descriptors import RandomOpDescriptor
from ..errors import DataTypeError, GraphError, ShapeError, op_error
from ..types import FLOATING, DataType, RandomDistribution, ShapedType
from ._registry import InferContext, register_op
from .shape import ShapeArgAttrs, _shape_arg, _split_shape

if TYPE_CHECKING:
    from ..graph import Graph, Tensor

__all__ = ["RandomOps", "RandomAttrs", "RandomKernelAttrs", "DropoutKernelAttrs"]

STATE_SHAPE = [7]
_U64 = 2**64


@dataclass(frozen=True)
class RandomAttrs:
    shape: ShapeArgAttrs
    descriptor: RandomOpDescriptor  # a validated private copy
    seed: int | None  # the seed forms; None: the state input, or a fresh key every run
    stateful: bool


@dataclass(frozen=True)
class RandomKernelAttrs:
    """What the kernels receive: the static result shape and the distribution's numbers."""

    shape: tuple[int, ...]
    distribution: int  # RandomDistribution raw value
    method: int  # RandomNormalSamplingMethod raw value
    dataType: DataType
    lo: float  # min (float uniform, truncatedNormal)
    hi: float  # max
    ilo: int  # minInteger (int32 uniform)
    ihi: int  # maxInteger
    mean: float
    sd: float
    seed: int | None
    stateful: bool


@dataclass(frozen=True)
class DropoutKernelAttrs:
    rate: float  # in [0, 1]


def _u64(op: str, name: str | None, argument: str, v: Any) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) \
            or not 0 <= v < _U64:
        raise op_error(GraphError, op, argument, "an int in [0, 2^64) (Swift NSUInteger)",
                       repr(v) if isinstance(v, str) else v, name)
    return int(v)


# ---------------------------------------------------------------------------- shape rules
def _infer_state(ctx: InferContext):
    return [ShapedType(STATE_SHAPE, DataType.int32)], ctx.attrs


def _check_state(ctx: InferContext) -> None:
    t = ctx.type_of("stateTensor")
    if t.dataType != DataType.int32:
        raise ctx.error(DataTypeError, "stateTensor", "an int32 state tensor (made by "
                        "randomPhiloxStateTensor, or returned by a random op)", t.dataType)
    if t.shape is not None and (len(t.shape) != 1 or t.shape[0] not in (7, -1)):
        raise ctx.error(ShapeError, "stateTensor", "shape [7] (a Philox state)", t.shape)


def _infer_random(ctx: InferContext):
    a: RandomAttrs = ctx.attrs
    d = a.descriptor
    target, known = _shape_arg(ctx, "shapeTensor", a.shape, "shape")
    if target is not None and known and any(s < 0 for s in target):
        raise ctx.error(ShapeError, "shape", "sizes >= 0", target)
    outs = [ShapedType(target, d.dataType)]
    if a.stateful:
        _check_state(ctx)
        outs.append(ShapedType(STATE_SHAPE, DataType.int32))
    if not known or target is None:
        return outs, None
    return outs, RandomKernelAttrs(tuple(target), int(d.distribution), int(d.samplingMethod),
                                   d.dataType, d.min, d.max, d.minInteger, d.maxInteger,
                                   d.mean, d.standardDeviation, a.seed, a.stateful)


def _infer_dropout(ctx: InferContext):
    t = ctx.type_of("tensor")
    if t.dataType not in FLOATING:
        raise ctx.error(DataTypeError, "tensor", "float32, float16 or bFloat16", t.dataType)
    out = [ShapedType(t.shape, t.dataType), ShapedType(t.shape, t.dataType)]
    r = ctx.type_of("rate")
    if r is None:
        return out, DropoutKernelAttrs(ctx.attrs)
    if r.dataType not in FLOATING:
        raise ctx.error(DataTypeError, "rate", "a float32, float16 or bFloat16 rate tensor",
                        r.dataType)
    if r.shape is not None and any(s not in (1, -1) for s in r.shape):
        raise ctx.error(ShapeError, "rate", "a tensor of one element (a scalar rate)", r.shape)
    v = ctx.value_of("rate")
    if v is None:
        return out, None  # a computed or fed rate: checked and read at run time
    rate = float(np.asarray(v, np.float64).reshape(-1)[0])
    if not 0.0 <= rate <= 1.0:
        raise ctx.error(GraphError, "rate", "a rate in [0, 1]", rate)
    return out, DropoutKernelAttrs(rate)


def _grad_dropout(g: Graph, op, dys):
    # the forward's own mask (its second output: 0 or 1 / (1 - rate)): the same random bits
    return {"tensor": g.multiplication(dys[0], op.outputTensors[1])}


register_op("randomPhiloxStateTensor", _infer_state)
register_op("randomTensor", _infer_random, value_inputs=("shapeTensor",))
register_op("dropout", _infer_dropout, _grad_dropout, value_inputs=("rate",))


# ---------------------------------------------------------------------------- builders
class RandomOps:
    """Graph methods of MPSGraphRandomOps (mixed into `Graph`)."""

    def randomPhiloxStateTensor(self, seed: int | None = None, *,
                                counterLow: int | None = None, counterHigh: int | None = None,
                                key: int | None = None, name: str | None = None) -> Tensor:
        """Swift `randomPhiloxStateTensor(withSeed:name:)` (counter 0, key = seed) and
        `randomPhiloxStateTensor(withCounterLow:counterHigh:key:name:)`: an int32 [7] Philox
        state (layout in the module docstring), for the `stateTensor=` of the random ops.
        Every value is an int in [0, 2^64)."""
        kind = "randomPhiloxStateTensor"
        from ..backends._random_math import state_words

        parts = (counterLow, counterHigh, key)
        if seed is not None:
            if any(p is not None for p in parts):
                raise op_error(GraphError, kind, "seed", "either seed or counterLow / "
                               "counterHigh / key", "both", name)
            words = state_words(0, 0, _u64(kind, name, "seed", seed))
        else:
            if any(p is None for p in parts):
                missing = [n for n, p in zip(("counterLow", "counterHigh", "key"), parts)
                           if p is None]
                raise op_error(GraphError, kind, missing[0], "seed, or all of counterLow, "
                               "counterHigh and key", "None", name)
            words = state_words(*(_u64(kind, name, n, p) for n, p in
                                  zip(("counterLow", "counterHigh", "key"), parts)))
        return self._add(kind, [], tuple(words), name)[0]

    def _random(self, kind: str, shape: Any, shapeTensor: Any, descriptor: Any, seed: Any,
                stateTensor: Any, name: str | None) -> Any:
        d = RandomOpDescriptor.validated_copy(descriptor, kind, name)
        sattrs, st = _split_shape(kind, name, shape, shapeTensor, "shape", "shapeTensor")
        if seed is not None:
            if stateTensor is not None:
                raise op_error(GraphError, kind, "seed", "either seed or stateTensor", "both",
                               name)
            seed = _u64(kind, name, "seed", seed)
        attrs = RandomAttrs(sattrs, d, seed, stateTensor is not None)
        outs = self._add("randomTensor", [("shapeTensor", st), ("stateTensor", stateTensor)],
                         attrs, name, optional=("shapeTensor", "stateTensor"))
        return list(outs) if stateTensor is not None else outs[0]

    def randomTensor(self, shape: Sequence[int] | Tensor | None = None,
                     descriptor: RandomOpDescriptor | None = None, *, seed: int | None = None,
                     stateTensor: Tensor | None = None, name: str | None = None,
                     shapeTensor: Tensor | None = None) -> Tensor | list[Tensor]:
        """Swift `randomTensor(withShape:descriptor:[seed:|stateTensor:]name:)` and the
        `withShapeTensor:` forms: random values of `descriptor`'s distribution and dataType, of
        `shape` (a list of ints, or a 1-D int32 / int64 tensor; `shapeTensor=` also accepted).
        With `seed=`: the same values for the same seed. With `stateTensor=` (an int32 [7]
        Philox state): returns `[values, newState]`, newState continuing the stream. Neither:
        a fresh key on every run."""
        return self._random("randomTensor", shape, shapeTensor, descriptor, seed, stateTensor,
                            name)

    def randomUniformTensor(self, shape: Sequence[int] | Tensor | None = None, *,
                            seed: int | None = None, stateTensor: Tensor | None = None,
                            name: str | None = None, shapeTensor: Tensor | None = None
                            ) -> Tensor | list[Tensor]:
        """Swift `randomUniformTensor(withShape:[seed:|stateTensor:]name:)` and the
        `withShapeTensor:` forms: float32 values uniform in [0, 1) (randomTensor with the
        default uniform float32 descriptor; the same seed or state gives the same values)."""
        return self._random("randomUniformTensor", shape, shapeTensor,
                            RandomOpDescriptor(distribution=RandomDistribution.uniform,
                                               dataType=DataType.float32),
                            seed, stateTensor, name)

    def dropout(self, tensor: Tensor, rate: float | Tensor | None = None, *,
                name: str | None = None, rateTensor: Tensor | None = None) -> Tensor:
        """Swift `dropout(_:rate:name:)` (rate a Double, or a tensor: Objective-C
        `rateTensor:`): each element of `tensor` is set to 0 with probability `rate` and the
        others are scaled by 1 / (1 - rate) (rate in [0, 1]; 1 gives zeros); a fresh mask on
        every run; the gradient uses the forward's mask. [x] -> [x]."""
        from ..graph import Tensor

        kind = "dropout"
        if rateTensor is not None:
            if rate is not None:
                raise op_error(GraphError, kind, "rateTensor", "only one of rate and "
                               "rateTensor", "both", name)
            rate = rateTensor
        if isinstance(rate, Tensor):
            return self._add(kind, [("tensor", tensor), ("rate", rate)], None, name)[0]
        ok = isinstance(rate, numbers.Real) and not isinstance(rate, (bool, np.bool_))
        if not ok or not (math.isfinite(rate) and 0.0 <= rate <= 1.0):
            raise op_error(GraphError, kind, "rate", "a rate in [0, 1] (a float or a Tensor)",
                           repr(rate) if isinstance(rate, str) else rate, name)
        return self._add(kind, [("tensor", tensor), ("rate", None)], float(rate), name,
                         optional=("rate",))[0]
