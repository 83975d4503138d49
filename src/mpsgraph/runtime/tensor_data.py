"""`TensorData` (Apple `MPSGraphTensorData`): a concrete array on a device."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DataTypeError, ShapeError
from ..types import DataType
from .device import Device, resolve_device

__all__ = ["TensorData"]


class TensorData:
    """A concrete array with `.shape`, `.dataType`, `.device`, `.numpy()`, `__array__` and
    `__dlpack__`.

    `TensorData(data, shape=None, dataType=None, device=None)`: `data` is a NumPy array, an
    object with `__dlpack__`, a nested sequence or scalar, or bytes (then shape and dataType are
    required). A given `dataType` different from the data's converts it (an explicit request)."""

    __slots__ = ("_array", "dataType", "device")

    def __init__(self, data: Any, shape: Sequence[int] | None = None,
                 dataType: DataType | None = None, device: Device | str | None = None):
        dev = resolve_device(device)
        if isinstance(data, TensorData):
            arr = data.numpy()
        elif isinstance(data, (bytes, bytearray, memoryview)):
            if shape is None or dataType is None:
                raise ShapeError("TensorData: bytes data needs shape and dataType")
            npdt = DataType(dataType).numpy_dtype
            want = int(np.prod(shape, dtype=np.int64)) * npdt.itemsize
            if len(data) != want:
                raise ShapeError(f"TensorData: argument 'data': expected {want} bytes, given "
                                 f"{len(data)}")
            arr = np.frombuffer(bytes(data), dtype=npdt).reshape(shape)
        else:
            arr = _as_numpy(data)
        if dataType is not None:
            arr = arr.astype(DataType(dataType).numpy_dtype, copy=False)
        if shape is not None and list(arr.shape) != list(shape):
            if arr.size != int(np.prod(shape, dtype=np.int64)):
                raise ShapeError(f"TensorData: argument 'shape': expected {arr.size} elements, "
                                 f"given {list(shape)}")
            arr = arr.reshape(shape)
        try:
            self.dataType = DataType.from_numpy(arr.dtype)
        except TypeError:
            raise DataTypeError(f"TensorData: argument 'data': expected a dtype MPSGraph has, "
                                f"given {arr.dtype}") from None
        self.device = dev
        self._array = dev.backend().from_numpy(arr) if dev.backend_name != "numpy" else arr

    @classmethod
    def _wrap(cls, array: Any, dataType: DataType, device: Device) -> TensorData:
        """Wrap a backend array without a copy (used by executables)."""
        td = object.__new__(cls)
        td._array, td.dataType, td.device = array, dataType, device
        return td

    @property
    def shape(self) -> list[int]:
        return list(self._array.shape)

    @property
    def array(self) -> Any:
        """The backend's array (numpy.ndarray on the CPU device)."""
        return self._array

    def numpy(self) -> np.ndarray:
        """The data as a NumPy array (`ml_dtypes.bfloat16` for bFloat16)."""
        if isinstance(self._array, np.ndarray):
            return self._array
        return self.device.backend().to_numpy(self._array)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        a = self.numpy()
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return np.array(a, copy=True) if copy else a

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self._array.__dlpack_device__()

    def __repr__(self) -> str:
        return f"TensorData(shape={self.shape}, dataType={self.dataType!r}, device={self.device})"


def _as_numpy(data: Any) -> np.ndarray:
    if isinstance(data, np.ndarray):
        return data
    mod = type(data).__module__.split(".")[0]
    if mod == "torch":  # bf16 has no NumPy dlpack path; go through a same-size view
        import ml_dtypes
        import torch

        t = data.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.dtype == torch.bfloat16:
            return t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()
    if hasattr(data, "__dlpack__"):
        try:
            return np.from_dlpack(data)
        except (TypeError, RuntimeError, BufferError):
            pass
    return np.asarray(data)
