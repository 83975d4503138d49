"""`TensorData` (Apple `MPSGraphTensorData`): a concrete array on a device."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DataTypeError, ShapeError
from ..types import SUB_BYTE, DataType
from .device import Device, resolve_device

__all__ = ["TensorData"]

_BF16 = DataType.bFloat16.numpy_dtype


def _static_shape(shape: Any) -> list[int]:
    ok = not isinstance(shape, (str, bytes)) and hasattr(shape, "__iter__")
    if ok:
        shape = list(shape)
        ok = all(isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_))
                 and s >= 0 for s in shape)
    if not ok:
        raise ShapeError(f"TensorData: argument 'shape': expected a list of ints >= 0, given "
                         f"{shape!r}")
    return [int(s) for s in shape]


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
        if shape is not None:
            shape = _static_shape(shape)
        npdt = None
        if dataType is not None:
            try:
                if isinstance(dataType, (bool, np.bool_)):
                    raise ValueError
                dataType = DataType(dataType)
                npdt = dataType.numpy_dtype
            except (TypeError, ValueError):
                raise DataTypeError(f"TensorData: argument 'dataType': expected a DataType "
                                    f"with a NumPy representation, given {dataType!r}") from None
        if (dev.backend_name == "torch" and type(data).__module__.split(".")[0] == "torch"
                and shape is None and dataType is None):
            # a torch tensor for a torch device: moved (or kept) there, never via the host
            from ..backends.torch import DATA_TYPES

            if data.dtype not in DATA_TYPES:
                raise DataTypeError(f"TensorData: argument 'data': expected a dtype MPSGraph "
                                    f"has, given {data.dtype}")
            self.dataType, self.device = DATA_TYPES[data.dtype], dev
            self._array = data.detach().to(dev.backend().device)
            return
        if isinstance(data, TensorData):
            arr = data.numpy()
        elif isinstance(data, (bytes, bytearray, memoryview)):
            if shape is None or npdt is None:
                raise ShapeError("TensorData: argument 'data': bytes data needs shape and "
                                 f"dataType, given shape={shape}, dataType={dataType!r}")
            want = int(np.prod(shape, dtype=np.int64)) * npdt.itemsize
            nbytes = memoryview(data).nbytes
            if nbytes != want:
                raise ShapeError(f"TensorData: argument 'data': expected {want} bytes (shape "
                                 f"{shape} x {npdt.itemsize} bytes of {dataType!r}), given "
                                 f"{nbytes} bytes")
            arr = np.frombuffer(bytes(data), dtype=npdt.newbyteorder("<")).astype(npdt)
            arr = arr.reshape(shape)
        else:
            arr = _as_numpy(data)
        if npdt is not None and arr.dtype != npdt:
            try:
                arr = arr.astype(npdt)
            except (TypeError, ValueError):
                raise DataTypeError(f"TensorData: argument 'data': expected data convertible "
                                    f"to {dataType!r}, given {arr.dtype} data") from None
        if shape is not None and list(arr.shape) != shape:
            if arr.size != int(np.prod(shape, dtype=np.int64)):
                raise ShapeError(f"TensorData: argument 'shape': expected {arr.size} elements "
                                 f"(the data's, shape {list(arr.shape)}), given {shape}")
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
        a = self.device.backend().to_numpy(self._array)
        if self.dataType in SUB_BYTE:  # kept in int8 / uint8 storage by torch
            a = a.astype(self.dataType.numpy_dtype)
        return a

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        a = self.numpy()
        if dtype is not None and a.dtype != np.dtype(dtype):
            if copy is False:
                raise ValueError(f"TensorData: converting {a.dtype} to {np.dtype(dtype)} "
                                 "needs a copy, and copy=False was requested")
            return a.astype(dtype)
        return np.array(a, copy=True) if copy else a

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        """DLPack export without a copy. NumPy cannot export bfloat16 through DLPack, so a
        CPU bFloat16 array is exported as a torch view when torch is installed (DLPack itself
        has a bfloat16 type; consumers such as torch and JAX read it)."""
        a = self._array
        if isinstance(a, np.ndarray) and a.dtype == _BF16:
            try:
                import torch
            except ImportError:
                raise BufferError("TensorData.__dlpack__: NumPy cannot export bFloat16 "
                                  "through DLPack and torch is not installed") from None
            with warnings.catch_warnings():  # a read-only array: the view stays unwritten
                warnings.simplefilter("ignore", UserWarning)
                t = torch.from_numpy(np.ascontiguousarray(a).view(np.int16))
            t = t.view(torch.bfloat16)
            return t.__dlpack__(*args, **kwargs)
        return a.__dlpack__(*args, **kwargs)

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
