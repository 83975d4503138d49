"""The NumPy backend: the reference kernels, vectorised and BLAS-backed.

Kernels are plain functions `kernel(*input_arrays, attrs) -> array | tuple[array, ...]`,
registered by Swift op name with `@kernel("convolution2D")` in the module of their op family.
They never validate user input: the graph layer has already done it.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import FeedError, UnsupportedError, op_error
from ...runtime.executable import feed_dtype_error, is_python_data, python_feed
from ...runtime.tensor_data import TensorData, _as_numpy
from ...types import DataType, ShapedType

KERNELS: dict[str, Callable[..., Any]] = {}
_FAMILIES = ("core", "convolution", "rnn", "arithmetic", "activation", "matrix", "reduction",
             "shape", "loss", "pooling", "optimizer", "cumulative", "gather", "sort", "linalg",
             "normalization", "random",
             "resize", "fft", "attention", "quantization", "sparse", "stencil",
             "sample_grid", "nms")


def kernel(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        KERNELS[name] = fn
        return fn

    return deco


def _keep_freed_memory() -> None:
    """Ask glibc to keep freed memory instead of returning it to the OS after every op.

    The kernels allocate and free buffers of the same sizes on every run; by default glibc hands
    large freed blocks back to the OS and the next run pays a page fault per 4 KiB page on first
    touch, which measured 2-6x the kernel's own time on a VM (convolution gradients, the LSTM's
    per-step buffers). This is process-wide: set MPSGRAPH_KEEP_MEMORY=0 to leave malloc alone.
    """
    if os.environ.get("MPSGRAPH_KEEP_MEMORY", "1") == "0" or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: keep up to 1 GiB of freed heap
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: blocks < 32 MiB come from the heap
    except (OSError, AttributeError):  # not glibc (musl, ...): nothing to tune
        pass


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The strides of a fresh C-order array of `shape` (size-1 axes included)."""
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def is_canonical(arr: np.ndarray) -> bool:
    """True when `arr` has exactly the strides of a fresh C-order array, size-1 axes included.

    NumPy's `flags.c_contiguous` ignores the strides of size-1 axes (and of empty arrays), so
    it cannot tell whether strides read from the array describe its memory: a transposed NCHW
    array with C = 1 is "C-contiguous" with a C stride of H*W elements. Code that builds views
    from strides (`as_strided`) may trust only arrays for which this holds."""
    return arr.strides == c_strides(arr.shape, arr.itemsize)


def canonical(arr: np.ndarray) -> np.ndarray:
    """`arr` itself when `is_canonical`, else a C-order copy (whose strides are canonical)."""
    return arr if is_canonical(arr) else np.array(arr, order="C", copy=True)


class Backend:
    name = "numpy"
    _instance: Backend | None = None

    @classmethod
    def for_device(cls, device: Any) -> Backend:
        if cls._instance is None:
            _keep_freed_memory()
            for fam in _FAMILIES:
                importlib.import_module(f"{__name__}.{fam}")
            cls._instance = cls()
        return cls._instance

    def kernel(self, kind: str, in_types: Any = None) -> Callable[..., Any]:
        """The kernel of an op kind (`in_types`, the input ShapedTypes, is not used here)."""
        try:
            return KERNELS[kind]
        except KeyError:
            raise UnsupportedError(f"{kind}: no NumPy kernel") from None

    def from_numpy(self, arr: np.ndarray) -> np.ndarray:
        return arr

    def to_numpy(self, arr: np.ndarray) -> np.ndarray:
        return arr

    def copy(self, arr: np.ndarray) -> np.ndarray:
        out = np.array(arr, copy=True)
        out.flags.writeable = False
        return out

    # variables: an assign replaces the storage with a read-only copy (no CUDA graph reads
    # addresses here), so no result can ever view a storage that changes
    assigns_in_place = False

    @staticmethod
    def unalias(outs: list[Any], storages: list[np.ndarray]) -> list[Any]:
        return outs

    def assign_variables(self, assigns: list[tuple[dict[str, Any], str, np.ndarray]],
                         storages: list[np.ndarray]) -> None:
        """Commit (variable store, device key, value) in order."""
        for store, key, value in assigns:
            store[key] = self.copy(value)

    def convert_feed(self, value: Any, st: ShapedType, name: str) -> np.ndarray:
        if isinstance(value, TensorData):
            arr = value.numpy()
        elif isinstance(value, np.ndarray):
            arr = value
        elif is_python_data(value):  # no dtype of its own: takes the placeholder's
            arr = python_feed(value, st.dataType, name)
        else:
            arr = _as_numpy(value)
        if arr.dtype != st.dataType.numpy_dtype:
            raise feed_dtype_error(name, st.dataType, value, getattr(value, "dtype", arr.dtype))
        if arr.shape != st._shape:
            raise op_error(FeedError, "run", f"feeds[{name}]", f"shape {st.shape} (compiled)",
                           list(arr.shape))
        return arr

    def feeds_converter(self, types: list[ShapedType], names: list[str]
                        ) -> Callable[[Any], list[np.ndarray]]:
        """`convert_feed` for a whole list of inputs in `types` order, with the common case
        (an ndarray, or a TensorData holding one, of exactly the compiled dtype and shape)
        checked by a compare against values computed here; anything else takes
        `convert_feed`, which converts it or raises its FeedError."""
        convert = self.convert_feed
        specs = []
        for st, name in zip(types, names):
            try:
                want = st.dataType.numpy_dtype
            except TypeError:
                want = None
            specs.append((want, st._shape, st, name))
        ndarray, tensor_data = np.ndarray, TensorData

        def convert_all(inputs: Any) -> list[np.ndarray]:
            feeds = []
            for value, (want, shape, st, name) in zip(inputs, specs):
                a = value._array if type(value) is tensor_data else value
                if type(a) is ndarray and a.dtype is want and a.shape == shape:
                    feeds.append(a)
                else:
                    feeds.append(convert(value, st, name))
            return feeds

        return convert_all


__all__ = ["Backend", "kernel", "KERNELS", "DataType", "c_strides", "is_canonical", "canonical"]
