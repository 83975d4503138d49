"""The op database: one `OpInfo` per op of the registry (PyTorch's OpInfo is the model).

An entry says how to build the op from placeholder tensors (`build`), how to compute it
independently (`ref`: float64 NumPy written from the definitions, never our kernels; an optional
`torch_ref` for torch autograd), which inputs are differentiable, which dtypes it accepts, how to
draw random inputs (`samples`: shapes with 0 and 1 on every axis, every option, every dtype),
error inputs with the GraphError expected, and tolerances per dtype. tests/test_opdb.py runs
every entry on every backend present: forward against `ref`, the gradient rule against central
differences of `ref` in float64 and against torch autograd, each backend against the NumPy
backend, non-contiguous / torch / TensorData feeds, a compiled Executable re-run on other data,
bitwise repeatability on CPU backends, NaN propagation, and the error inputs.

The entries live by op family in tests/opdb_entries/<family>.py; each module appends to `OPDB`
through `add(OpInfo(...))`. `OPDB[name]` finds an op's entry by its Swift name.

Conventions for an entry's callables:

- `build(g, *tensors, **kwargs)` returns the op's output Tensor or a list of them; `tensors`
  are placeholders of the sample's inputs, in order; `kwargs` are the sample's non-tensor
  arguments (descriptors, axes, ...).
- `ref(*arrays, **kwargs)` gets the sample's input arrays (in the dtype under test; call `f64`
  for float64) and returns the expected output(s) in the same structure as `build`. Floating
  outputs are compared in float64 with the entry's tolerance for the dtype; integer and bool
  outputs must be equal.
- `samples(rng, dtype)` yields `Sample`s of that dtype (about `n_samples()` of them; shapes
  drawn with `shape()` below, which puts 0 and 1 on every axis now and then).
- `torch_ref(*tensors, **kwargs)` (optional) is `ref` written with torch float64 ops, for
  torch autograd; tensors for differentiable inputs require grad.
- `errors(rng)` yields `ErrorInput`s: a sample that must raise `cls` naming `argument`.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import mpsgraph as mg

DT = mg.DataType
FLOAT = (DT.float32, DT.float16, DT.bFloat16)
SIGNED = (DT.int8, DT.int16, DT.int32, DT.int64)
UNSIGNED = (DT.uInt8, DT.uInt16, DT.uInt32, DT.uInt64)
INTEGER = SIGNED + UNSIGNED
NUMERIC = FLOAT + INTEGER
ALL = NUMERIC + (DT.bool,)

# (rtol, atol) of a floating result against the float64 reference, per dtype: float32 results
# are float32 computations of a few roundings; the half types round their result once (2^-11,
# 2^-8 relative) after float32 work.
DEFAULT_TOL = {DT.float32: (2e-5, 1e-6), DT.float16: (2e-3, 1e-4), DT.bFloat16: (1.6e-2, 1e-3)}

__all__ = ["OpInfo", "Sample", "ErrorInput", "OPDB", "add", "shape", "n_samples", "f64", "arr",
           "DT", "FLOAT", "SIGNED", "UNSIGNED", "INTEGER", "NUMERIC", "ALL", "DEFAULT_TOL",
           "np_dtype", "SOURCE_ONLY", "is_float"]

# registry kinds with no entry of their own: `placeholder` is the input of every entry
SOURCE_ONLY = {"placeholder"}


@dataclass
class Sample:
    """One call of an op: `inputs` are fed through placeholders, `kwargs` go to build/ref."""

    inputs: list[np.ndarray]
    kwargs: dict[str, Any] = field(default_factory=dict)
    diff: tuple[int, ...] | None = None  # differentiable inputs; None: the entry's
    desc: str = ""
    nan_inputs: tuple[int, ...] | None = None  # inputs the NaN test poisons; None: the entry's

    def __repr__(self) -> str:
        shapes = ", ".join(f"{list(a.shape)}:{a.dtype}" for a in self.inputs)
        kw = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"Sample({self.desc + ': ' if self.desc else ''}[{shapes}] {kw})"


@dataclass
class ErrorInput:
    """A call that must raise `cls` (a GraphError subclass) whose message names `argument`."""

    sample: Sample
    cls: type
    argument: str
    match: str = ""  # a further substring the message must contain


@dataclass
class OpInfo:
    name: str  # the Swift name: the registry kind, and the Graph method
    build: Callable[..., Any]
    ref: Callable[..., Any]
    samples: Callable[[np.random.Generator, mg.DataType], Iterable[Sample]]
    dtypes: tuple[mg.DataType, ...] = FLOAT
    differentiable: tuple[int, ...] = ()  # inputs with a gradient rule (float dtypes)
    torch_ref: Callable[..., Any] | None = None
    errors: Callable[[np.random.Generator], Iterable[ErrorInput]] | None = None
    tol: dict[mg.DataType, tuple[float, float]] = field(default_factory=dict)
    # a wider tolerance on one device, only for a documented deviation from SPEC that a
    # regression test pins (xfail) on that device: {(device, dtype): (rtol, atol)}
    device_tol: dict[tuple[str, mg.DataType], tuple[float, float]] = field(default_factory=dict)
    grad_tol: tuple[float, float] = (1e-4, 1e-6)  # (rtol of sum |g v|, atol) float32 gradients
    nan: bool = True  # a NaN in a floating input must give NaN where `ref` gives it
    # the inputs the NaN test poisons (None: every floating input). Restricted only where a
    # NaN reaching an output solely through a product with an IMPLICIT zero (padding, an absent
    # optional input, a position no window reaches) is unspecified (docs/semantics.md, "NaN and
    # implicit zeros")
    nan_inputs: tuple[int, ...] | None = None
    views: bool = True  # inputs may be fed as non-contiguous views / broadcasts
    broadcast_ok: bool = True  # an input may be replaced by a broadcast (zero-stride) view
    kinds: tuple[str, ...] = ()  # further registry kinds this entry's samples exercise
    run: Callable[..., Any] | None = None  # custom runner (ops whose result is not a tensor)
    notes: str = ""

    def tolerance(self, dt: mg.DataType, device: str | None = None) -> tuple[float, float]:
        if device is not None and (device, dt) in self.device_tol:
            return self.device_tol[device, dt]
        return self.tol.get(dt, DEFAULT_TOL.get(dt, (0.0, 0.0)))

    def diff_of(self, s: Sample) -> tuple[int, ...]:
        return self.differentiable if s.diff is None else s.diff


OPDB: dict[str, OpInfo] = {}


def add(info: OpInfo) -> OpInfo:
    if info.name in OPDB:
        raise RuntimeError(f"opdb: {info.name!r} added twice")
    OPDB[info.name] = info
    return info


def n_samples() -> int:
    """Samples per op and dtype: MPSGRAPH_OPDB_SAMPLES, 4 by default (CI)."""
    return int(os.environ.get("MPSGRAPH_OPDB_SAMPLES", "4"))


def np_dtype(dt: mg.DataType) -> np.dtype:
    return dt.numpy_dtype


def is_float(a) -> bool:
    """True for a floating array or dtype (bFloat16, whose NumPy kind is 'V', included)."""
    dt = np.dtype(getattr(a, "dtype", a))
    return dt.kind in "fc" or dt == DT.bFloat16.numpy_dtype


def f64(a: np.ndarray) -> np.ndarray:
    """A copy of `a` in float64 (bool and integers too)."""
    return np.asarray(a).astype(np.float64)


def shape(rng: np.random.Generator, rank: int | None = None, lo: int = 0, hi: int = 5,
          p_edge: float = 0.25) -> tuple[int, ...]:
    """A random shape: rank 0..4 unless given; each axis is 0 or 1 with probability p_edge/2
    each (when lo allows), else in [max(lo, 2), hi]."""
    if rank is None:
        rank = int(rng.integers(0, 5))
    out = []
    for _ in range(rank):
        u = rng.random()
        if u < p_edge / 2 and lo <= 0:
            out.append(0)
        elif u < p_edge and lo <= 1:
            out.append(1)
        else:
            out.append(int(rng.integers(max(lo, 2), max(lo, 2, hi) + 1)))
    return tuple(out)


def arr(rng: np.random.Generator, shp: Iterable[int], dt: mg.DataType, lo: float = -3.0,
        hi: float = 3.0) -> np.ndarray:
    """Random values of dtype `dt`: uniform in [lo, hi) for floats (rounded to dt), integers
    in the intersection of [lo, hi] and the type's range, random bools."""
    shp = tuple(shp)
    npdt = np_dtype(dt)
    if dt == DT.bool:
        return np.asarray(rng.random(shp) < 0.5)
    if npdt.kind in "iu":
        info = np.iinfo(npdt)
        a, b = max(int(lo), info.min), min(int(hi), info.max)
        return np.asarray(rng.integers(a, b + 1, size=shp)).astype(npdt)
    return np.asarray(rng.uniform(lo, hi, size=shp)).astype(npdt)


def _load_entries() -> None:
    pkg = importlib.import_module("opdb_entries")
    for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        importlib.import_module(f"opdb_entries.{m.name}")


def entries() -> Iterator[OpInfo]:
    return iter(OPDB.values())


_load_entries()
