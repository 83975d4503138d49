"""Data types, shaped types and the enums of MPSGraph, with Swift's case names and raw values."""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

import ml_dtypes
import numpy as np

from .errors import DataTypeError, ShapeError

__all__ = [
    "DataType",
    "ShapedType",
    "PaddingStyle",
    "PaddingMode",
    "TensorNamedDataLayout",
    "RNNActivation",
    "LossReductionType",
    "ScatterMode",
    "RandomDistribution",
    "RandomNormalSamplingMethod",
    "ResizeMode",
    "ResizeNearestRoundingMode",
    "FFTScalingMode",
    "NonMaximumSuppressionCoordinateMode",
    "SparseStorageType",
    "ReductionMode",
    "PoolingReturnIndicesMode",
]


class _Enum(IntEnum):
    """The Apple enums' base: repr as `Type.member`, as Swift prints them."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class DataType(_Enum):
    """`MPSDataType`: a width in the low bits plus flag bits (values from MPSCoreTypes.h)."""

    invalid = 0
    float32 = 0x10000020
    float16 = 0x10000010
    bFloat16 = 0x90000010
    complexFloat32 = 0x11000040
    complexFloat16 = 0x11000020
    int8 = 0x20000008
    int16 = 0x20000010
    int32 = 0x20000020
    int64 = 0x20000040
    uInt8 = 8
    uInt16 = 16
    uInt32 = 32
    uInt64 = 64
    bool = 0x80000008
    # sub-byte integers (ml_dtypes.int4 / uint4 / int2 / uint2): storage types - placeholders,
    # constants, variables, feeds and results, `cast` and the data-movement ops; arithmetic
    # refuses them (cast to int8 first). docs/semantics.md, "Sub-byte integer types"
    int4 = 0x20000004
    uInt4 = 4
    int2 = 0x20000002
    uInt2 = 2
    # declared for completeness (SPEC 1.1): no NumPy type, no op accepts them
    unorm1 = 0x40000001
    unorm8 = 0x40000008

    @property
    def numpy_dtype(self) -> np.dtype:
        """The NumPy dtype that stores this type (`ml_dtypes.bfloat16` for bFloat16)."""
        try:
            return _NUMPY[self]
        except KeyError:
            raise TypeError(f"DataType.{self.name} has no NumPy representation") from None

    @property
    def itemsize(self) -> int:
        return self.numpy_dtype.itemsize

    @property
    def is_floating(self) -> bool:
        return self in (DataType.float32, DataType.float16, DataType.bFloat16)

    @classmethod
    def from_numpy(cls, dtype: np.dtype | type) -> DataType:
        """The DataType for a NumPy dtype; raises TypeError for one MPSGraph has no type for."""
        dt = np.dtype(dtype)
        for member, nd in _NUMPY.items():
            if nd == dt:
                return member
        raise TypeError(f"no MPSGraph DataType for NumPy dtype {dt}")

    __str__ = _Enum.__repr__


_NUMPY: dict[DataType, np.dtype] = {
    DataType.float32: np.dtype(np.float32),
    DataType.float16: np.dtype(np.float16),
    DataType.bFloat16: np.dtype(ml_dtypes.bfloat16),
    DataType.complexFloat32: np.dtype(np.complex64),
    DataType.int8: np.dtype(np.int8),
    DataType.int16: np.dtype(np.int16),
    DataType.int32: np.dtype(np.int32),
    DataType.int64: np.dtype(np.int64),
    DataType.uInt8: np.dtype(np.uint8),
    DataType.uInt16: np.dtype(np.uint16),
    DataType.uInt32: np.dtype(np.uint32),
    DataType.uInt64: np.dtype(np.uint64),
    DataType.bool: np.dtype(np.bool_),
    DataType.int4: np.dtype(ml_dtypes.int4),
    DataType.uInt4: np.dtype(ml_dtypes.uint4),
    DataType.int2: np.dtype(ml_dtypes.int2),
    DataType.uInt2: np.dtype(ml_dtypes.uint2),
}
# the sub-byte integers: (bits, signed); one byte of storage per element
SUB_BYTE: dict[DataType, tuple[int, bool]] = {
    DataType.int4: (4, True), DataType.uInt4: (4, False), DataType.int2: (2, True),
    DataType.uInt2: (2, False)}

FLOATING = (DataType.float32, DataType.float16, DataType.bFloat16)


def _norm_shape(shape: Sequence[int] | None) -> tuple[int, ...] | None:
    """A shape as a tuple of ints (-1 = dynamic), or None (unranked); raises ShapeError."""
    if shape is None:
        return None
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise ShapeError(f"ShapedType: argument 'shape': expected a list of ints >= 0 or -1, "
                         f"or None, given {shape!r}")
    shape = list(shape)
    out = []
    for d in shape:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise ShapeError(f"ShapedType: argument 'shape': expected a list of ints >= 0 or -1, "
                             f"given {shape!r} (entry {d!r})")
        d = int(d)
        if d < -1:
            raise ShapeError(f"ShapedType: argument 'shape': expected a list of ints >= 0 or -1, "
                             f"given {shape!r} (entry {d})")
        out.append(d)
    return tuple(out)


def _data_type(value: object, where: str = "ShapedType") -> DataType:
    """`value` as a DataType (an int raw value is accepted); raises DataTypeError."""
    if isinstance(value, (bool, np.bool_)):
        value = None  # bool is an int; DataType(True) would be uInt... nothing sensible
    try:
        return DataType(value)
    except (TypeError, ValueError):
        raise DataTypeError(f"{where}: argument 'dataType': expected a DataType, given "
                            f"{value!r}") from None


class ShapedType:
    """`MPSGraphShapedType`: a shape (list of ints, -1 dynamic, or None unranked) and a DataType.

    A bad shape raises `ShapeError`, a bad dataType `DataTypeError` (both GraphErrors)."""

    __slots__ = ("_shape", "dataType")

    def __init__(self, shape: Sequence[int] | None = None, dataType: DataType = DataType.float32):
        self._shape = _norm_shape(shape)
        self.dataType = _data_type(dataType)

    @property
    def shape(self) -> list[int] | None:
        return None if self._shape is None else list(self._shape)

    @property
    def rank(self) -> int | None:
        return None if self._shape is None else len(self._shape)

    @property
    def is_static(self) -> bool:
        return self._shape is not None and all(d >= 0 for d in self._shape)

    def isEqual(self, other: object) -> bool:
        return (
            isinstance(other, ShapedType)
            and self._shape == other._shape
            and self.dataType == other.dataType
        )

    def __eq__(self, other: object) -> bool:
        return self.isEqual(other)

    def __hash__(self) -> int:
        return hash((self._shape, self.dataType))

    def __repr__(self) -> str:
        return f"ShapedType(shape={self.shape}, dataType={self.dataType!r})"


class PaddingStyle(_Enum):
    """`MPSGraphPaddingStyle`. The case names are authoritative (Apple's one-line descriptions
    are shifted by one case)."""

    explicit = 0
    TF_VALID = 1
    TF_SAME = 2
    explicitOffset = 3
    ONNX_SAME_LOWER = 4


class PaddingMode(_Enum):
    """`MPSGraphPaddingMode` (padTensor, padGradient; values from MPSGraphCore.h)."""

    constant = 0
    reflect = 1
    symmetric = 2
    clampToEdge = 3
    zero = 4
    periodic = 5
    antiPeriodic = 6


class TensorNamedDataLayout(_Enum):
    """`MPSGraphTensorNamedDataLayout` (values from MPSGraphCore.h)."""

    NCHW = 0
    NHWC = 1
    OIHW = 2
    HWIO = 3
    CHW = 4
    HWC = 5
    HW = 6
    NCDHW = 7
    NDHWC = 8
    OIDHW = 9
    DHWIO = 10


class RNNActivation(_Enum):
    """`MPSGraphRNNActivation`. hardSigmoid is clip(0.2 a + 0.5, 0, 1) (see docs/semantics.md)."""

    none = 0
    relu = 1
    tanh = 2
    sigmoid = 3
    hardSigmoid = 4


class LossReductionType(_Enum):
    """`MPSGraphLossReductionType`."""

    none = 0
    sum = 1
    mean = 2


class ScatterMode(_Enum):
    """`MPSGraphScatterMode` (MPSGraphScatterNDOps.h): how a scatter combines an update with the
    value already at its destination (semantics: ops/gather.py)."""

    add = 0
    sub = 1
    mul = 2
    div = 3
    min = 4
    max = 5
    set = 6


class RandomDistribution(_Enum):
    """`MPSGraphRandomDistribution` (MPSGraphRandomOps.h): uniform in [min, max) for float
    types and [minInteger, maxInteger] for integer types; normal (mean, standardDeviation);
    truncatedNormal (a normal truncated to [min, max))."""

    uniform = 0
    normal = 1
    truncatedNormal = 2


class RandomNormalSamplingMethod(_Enum):
    """`MPSGraphRandomNormalSamplingMethod`: invCDF (the inverse of the normal CDF applied to
    uniform values) or boxMuller (the Box-Muller transform; rejection sampling for the
    truncated normal)."""

    invCDF = 0
    boxMuller = 1


class ResizeMode(_Enum):
    """`MPSGraphResizeMode` (MPSGraphResizeOps.h)."""

    nearest = 0
    bilinear = 1


class ResizeNearestRoundingMode(_Enum):
    """`MPSGraphResizeNearestRoundingMode`: how a nearest-resize source coordinate is rounded."""

    roundPreferCeil = 0
    roundPreferFloor = 1
    ceil = 2
    floor = 3
    roundToEven = 4
    roundToOdd = 5


class FFTScalingMode(_Enum):
    """`MPSGraphFFTScalingMode`: none, 1/V (size) or 1/sqrt(V) (unitary), V the FFT volume."""

    none = 0
    size = 1
    unitary = 2


class NonMaximumSuppressionCoordinateMode(_Enum):
    """`MPSGraphNonMaximumSuppressionCoordinateMode`: how the 4 numbers of a box are read."""

    cornersHeightFirst = 0
    cornersWidthFirst = 1
    centersHeightFirst = 2
    centersWidthFirst = 3


class SparseStorageType(_Enum):
    """`MPSGraphSparseStorageType`."""

    COO = 0
    CSC = 1
    CSR = 2


class ReductionMode(_Enum):
    """`MPSGraphReductionMode` (MPSGraphCore.h; the stencil's reduction)."""

    min = 0
    max = 1
    sum = 2
    product = 3
    argumentMin = 4
    argumentMax = 5


class PoolingReturnIndicesMode(_Enum):
    """`MPSGraphPoolingReturnIndicesMode` (Swift case names; raw values of MPSGraphPoolingOps.h).

    global*: the index of the maximum in the source, flattened over the 1..4 innermost axes;
    local*: its index inside the pooling window, flattened over the window's 1..4 innermost
    axes (docs/semantics.md, "Convolution and pooling (issue 18)")."""

    none = 0
    globalFlatten1D = 1
    globalFlatten2D = 2
    globalFlatten3D = 3
    globalFlatten4D = 4
    localFlatten1D = 5
    localFlatten2D = 6
    localFlatten3D = 7
    localFlatten4D = 8

