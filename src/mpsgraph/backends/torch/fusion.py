"""Elementwise fusion for the torch backend: a run of elementwise steps of a compiled plan
becomes ONE generated function compiled by `torch.compile` (TorchInductor writes one Triton
kernel for it on CUDA), so that a chain of n elementwise ops reads its inputs and writes its
results once instead of n times.

Why: a CUDA graph removes the launch cost of each op but not its memory traffic. A chain of
20 elementwise ops on [4096, 4096] float32 moves 20 x 128 MiB op by op, and once fused
(benchmarks/elementwise_chain.py, benchmarks/RESULTS.md).

What fuses (the executable groups the steps, see runtime/executable.py `_fuse_steps`): a run of
consecutive steps of the plan whose kinds are in `FUSABLE` (the rows of ops/arithmetic.py and
the elementwise activations), whose shapes are static and whose operands and results all have
a type in `DTYPES`, when the largest tensor of the run has at least `MIN_ELEMENTS` elements
(below that a fused kernel saves a few microseconds of launches inside a CUDA graph and costs a
compilation of seconds). float16 / bFloat16 fuse only where Inductor can round every op's result
as the op-by-op kernels do (its `emulate_precision_casts` option); uint16/32/64 (computed on the
host) and complexFloat32 never fuse.

Numerics: each op's kernel is the same function the op-by-op plan calls, traced; Inductor may
contract a * b + c into one fused multiply-add and uses its own libdevice calls, so results may
differ from op-by-op results within float32 rounding (SPEC: the torch backend may differ within
floating-point tolerance). If compiling fails (no C++ compiler for CPU code, an unsupported
torch), the group quietly runs op by op from then on.
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ...ops.arithmetic import ELEMENTWISE
from ...types import DataType

__all__ = ["FUSABLE", "DTYPES", "MIN_ELEMENTS", "can_fuse", "fused_kernel", "available"]

FUSABLE = frozenset(ELEMENTWISE) | {"sigmoid", "tanh", "reLU", "leakyReLU", "sigmoidGradient",
                                    "reLUGradient", "leakyReLUGradient"}
_BASE = (DataType.float32, DataType.int8, DataType.int16, DataType.int32, DataType.int64,
         DataType.uInt8, DataType.bool)
MIN_ELEMENTS = 1 << 20
COMPILER = "inductor"  # torch.compile's backend (the tests trace with "eager" on the CPU)


def _inductor_options() -> dict[str, Any] | None:
    """Inductor options that keep every op's own rounding (None if this torch has none)."""
    try:
        import torch._inductor.config as cfg
    except Exception:  # noqa: BLE001 (no inductor: no fusion of half types)
        return None
    return {"emulate_precision_casts": True} if hasattr(cfg, "emulate_precision_casts") else None


_OPTIONS = _inductor_options()
DTYPES = _BASE + ((DataType.float16, DataType.bFloat16) if _OPTIONS else ())


def available(device: torch.device) -> bool:
    """Whether fused kernels can be compiled for `device` (Triton for CUDA)."""
    if not hasattr(torch, "compile"):
        return False
    if device.type == "cuda":
        try:
            import triton  # noqa: F401
        except ImportError:
            return False
    return True


def can_fuse(kind: str, dtypes: Sequence[DataType]) -> bool:
    """Whether a step of `kind` with operand and result types `dtypes` may join a fused run."""
    return kind in FUSABLE and all(d in DTYPES for d in dtypes)


def worth_fusing(n_steps: int, numels: Sequence[int]) -> bool:
    """The measured rule: two or more steps, and a tensor of at least MIN_ELEMENTS."""
    return n_steps >= 2 and max(numels, default=0) >= MIN_ELEMENTS


_counter = 0
_lock = threading.Lock()


class FusedKernel:
    """A plan kernel `(*inputs, attrs) -> output | tuple(outputs)` that runs `program` (steps
    `(kernel, input refs, attrs)`; a ref is ("in", i) or ("v", j), the j-th step's result)
    through torch.compile, and op by op if compiling fails."""

    def __init__(self, program: list[tuple[Callable[..., Any], list[tuple[str, int]], Any]],
                 n_inputs: int, outputs: list[int], kinds: list[str]):
        global _counter
        with _lock:
            _counter += 1
            uid = _counter
        self.kinds = kinds
        env: dict[str, Any] = {}
        args = ", ".join(f"i{k}" for k in range(n_inputs))
        lines = [f"def fused_{uid}({args}):"]
        for j, (fn, refs, attrs) in enumerate(program):
            env[f"k{j}"], env[f"a{j}"] = fn, attrs
            operands = ", ".join(f"i{r}" if t == "in" else f"v{r}" for t, r in refs)
            lines.append(f"    v{j} = k{j}({operands}, a{j})")
        lines.append(f"    return ({', '.join(f'v{j}' for j in outputs)},)")
        src = "\n".join(lines) + "\n"
        # a fresh code object per group: torch.compile's cache is per code object, so groups
        # never evict each other's compiled code
        exec(compile(src, f"<mpsgraph fused {uid}: {'+'.join(kinds)}>", "exec"), env)  # noqa: S102
        self.eager = env[f"fused_{uid}"]
        self.source = src
        try:
            self._compiled: Callable[..., Any] | None = torch.compile(
                self.eager, dynamic=False, backend=COMPILER,
                options=_OPTIONS if COMPILER == "inductor" else None)
        except Exception as e:  # noqa: BLE001 (no compiler here: run op by op)
            self._give_up(e)
        self.single = len(outputs) == 1

    def _give_up(self, e: Exception) -> None:
        first = str(e).splitlines()[0] if str(e) else ""
        warnings.warn(f"mpsgraph: fusing {'+'.join(self.kinds)} failed ({type(e).__name__}: "
                      f"{first}); running it op by op", RuntimeWarning, stacklevel=3)
        self._compiled = None

    @property
    def compiled(self) -> bool:
        """False once compiling has failed (the group then runs op by op)."""
        return self._compiled is not None

    def __call__(self, *args: Any) -> Any:
        ins = args[:-1]
        outs = None
        if self._compiled is not None:
            try:
                outs = self._compiled(*ins)
            except Exception as e:  # noqa: BLE001
                self._give_up(e)
        if outs is None:
            outs = self.eager(*ins)
        return outs[0] if self.single else tuple(outs)


def fused_kernel(program, n_inputs: int, outputs: list[int], kinds: list[str]) -> FusedKernel:
    return FusedKernel(program, n_inputs, outputs, kinds)


def numel(shape: Sequence[int] | None) -> int:
    return math.prod(shape) if shape is not None else 0
