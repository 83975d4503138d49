"""Operation descriptors: plain, mutable dataclasses with Swift's property names and defaults.

An op copies its descriptor when it is built, so changing a descriptor later never changes an
op that already exists.

Every descriptor derives from `Descriptor`, which refuses a property that does not exist
(setting, reading, or a constructor keyword) with an `UnknownPropertyError` (an
AttributeError and a DescriptorError) naming the nearest real property, so that a typo such as
`d.bidirectonal = True` cannot be silently ignored.
"""

from __future__ import annotations

import dataclasses
import difflib
import numbers
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

from .errors import DescriptorError, op_error
from .types import (
    DataType,
    FFTScalingMode,
    PaddingMode,
    PaddingStyle,
    ReductionMode,
    RNNActivation,
    SparseStorageType,
    TensorNamedDataLayout,
)

__all__ = ["Convolution2DOpDescriptor", "LSTMDescriptor", "Pooling2DOpDescriptor", "Descriptor",
           "UnknownPropertyError", "FFTDescriptor", "SDPADescriptor", "StencilOpDescriptor",
           "CreateSparseOpDescriptor"]


class UnknownPropertyError(DescriptorError, AttributeError):
    """A descriptor property that does not exist was set, read or given to the constructor.

    Both an AttributeError (as Python code expects of a missing attribute; `hasattr` and
    `getattr(d, name, default)` work as usual) and a DescriptorError (so a GraphError)."""


def _nearest(name: str, candidates: list[str]) -> str | None:
    """The candidate closest to `name`: a case-insensitive equal first, then difflib's best
    match of the lower-cased names."""
    lower = {c.lower(): c for c in candidates}
    if name.lower() in lower:
        return lower[name.lower()]
    close = difflib.get_close_matches(name.lower(), list(lower), n=1, cutoff=0.6)
    return lower[close[0]] if close else None


class Descriptor:
    """Base of every descriptor dataclass: only its dataclass fields (and properties of the
    class) may be set; a constructor keyword, an assignment or a read of any other name
    raises UnknownPropertyError naming the nearest real property."""

    __slots__ = ()

    @classmethod
    def _property_names(cls) -> list[str]:
        names = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
        names += [n for n in dir(cls) if isinstance(getattr(cls, n, None), property)]
        return names

    @classmethod
    def _unknown(cls, name: str) -> UnknownPropertyError:
        names = cls._property_names()
        near = _nearest(name, names)
        hint = (f"did you mean {near!r}?" if near is not None
                else f"its properties are {', '.join(names)}")
        return UnknownPropertyError(f"{cls.__name__} has no property {name!r}; {hint}")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            fields = {f.name for f in dataclasses.fields(cls)}
            for k in kwargs:
                if k not in fields:
                    raise cls._unknown(k)
        return super().__new__(cls)

    def __setattr__(self, name: str, value: Any) -> None:
        cls = type(self)
        if name not in cls.__dataclass_fields__ and not isinstance(
                getattr(cls, name, None), property):
            raise cls._unknown(name)
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:  # only called when normal lookup fails
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # protocol probes (copy, pickle, ...): no suggestion
        raise type(self)._unknown(name)


def _check_int(op: str, name: str | None, prop: str, value: object, minimum: int,
               argument: str = "descriptor") -> int:
    """An integer property (Python or NumPy int, not bool) >= minimum, as a plain int."""
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral)
            or value < minimum):
        raise op_error(DescriptorError, op, f"{argument}.{prop}", f"an int >= {minimum}",
                       repr(value) if isinstance(value, str) else value, name)
    return int(value)


def _check_enum(op: str, name: str | None, prop: str, value: object, enum: type[IntEnum],
                allowed: tuple[IntEnum, ...], expected: str, argument: str = "descriptor"
                ) -> IntEnum:
    """An enum property given as the enum member or its int value (not bool, not a str)."""
    is_int = not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Integral)
    if is_int and int(value) in {int(a) for a in allowed}:
        return enum(int(value))
    given = repr(value) if isinstance(value, str) else value
    if is_int and int(value) in enum._value2member_map_:
        given = repr(enum(int(value)))
    raise op_error(DescriptorError, op, f"{argument}.{prop}", expected, given, name)


def _check_style_and_layout(d: Any, op: str, name: str | None, argument: str) -> None:
    """paddingStyle and dataLayout of a convolution or pooling descriptor (checked in place)."""
    P, L = PaddingStyle, TensorNamedDataLayout
    d.paddingStyle = _check_enum(
        op, name, "paddingStyle", d.paddingStyle, P,
        (P.explicit, P.TF_VALID, P.TF_SAME, P.ONNX_SAME_LOWER),
        "PaddingStyle.explicit, TF_VALID, TF_SAME or ONNX_SAME_LOWER (explicitOffset "
        "applies only to stencil ops)", argument)
    d.dataLayout = _check_enum(op, name, "dataLayout", d.dataLayout, L, (L.NCHW, L.NHWC),
                               "TensorNamedDataLayout.NCHW or NHWC", argument)


class _ExplicitPadding(Descriptor):
    """Apple's `setExplicitPaddingWithPaddingLeft(_:paddingRight:paddingTop:paddingBottom:)`."""

    def setExplicitPaddingWithPaddingLeft(
        self, paddingLeft: int, paddingRight: int, paddingTop: int, paddingBottom: int
    ) -> None:
        """Set the four paddings and `paddingStyle = explicit`."""
        self.paddingLeft, self.paddingRight = paddingLeft, paddingRight
        self.paddingTop, self.paddingBottom = paddingTop, paddingBottom
        self.paddingStyle = PaddingStyle.explicit


@dataclass
class Convolution2DOpDescriptor(_ExplicitPadding):
    """`MPSGraphConvolution2DOpDescriptor`.

    Defaults: strides and dilation rates 1 (Apple's documented defaults); paddings 0,
    `paddingStyle=explicit`, `dataLayout=NCHW`, `weightsLayout=OIHW`, `groups=1` (Apple documents
    none of these; a default descriptor is a plain stride-1, unpadded, ungrouped convolution).
    Paddings are used only with `PaddingStyle.explicit`.
    """

    strideInX: int = 1
    strideInY: int = 1
    dilationRateInX: int = 1
    dilationRateInY: int = 1
    groups: int = 1
    paddingLeft: int = 0
    paddingRight: int = 0
    paddingTop: int = 0
    paddingBottom: int = 0
    paddingStyle: PaddingStyle = PaddingStyle.explicit
    dataLayout: TensorNamedDataLayout = TensorNamedDataLayout.NCHW
    weightsLayout: TensorNamedDataLayout = TensorNamedDataLayout.OIHW

    def validated_copy(self, op: str, name: str | None, argument: str = "descriptor"
                       ) -> Convolution2DOpDescriptor:
        """A private, checked copy for an op (raises DescriptorError naming op, `name` and
        `argument.property`). Call it on the class (`Convolution2DOpDescriptor.validated_copy(
        d, ...)`) so that a `d` of the wrong type or None is reported too. Integer properties
        may be Python or NumPy ints (not bools) and are stored as ints; enum properties may
        be the enum member or its raw value."""
        if not isinstance(self, Convolution2DOpDescriptor):
            raise op_error(DescriptorError, op, argument, "a Convolution2DOpDescriptor",
                           type(self).__name__, name)
        d = dataclasses.replace(self)
        for prop in ("strideInX", "strideInY", "dilationRateInX", "dilationRateInY", "groups"):
            setattr(d, prop, _check_int(op, name, prop, getattr(d, prop), 1, argument))
        for prop in ("paddingLeft", "paddingRight", "paddingTop", "paddingBottom"):
            setattr(d, prop, _check_int(op, name, prop, getattr(d, prop), 0, argument))
        _check_style_and_layout(d, op, name, argument)
        L = TensorNamedDataLayout
        d.weightsLayout = _check_enum(op, name, "weightsLayout", d.weightsLayout, L,
                                      (L.OIHW, L.HWIO), "TensorNamedDataLayout.OIHW or HWIO",
                                      argument)
        return d


@dataclass
class LSTMDescriptor(Descriptor):
    """`MPSGraphLSTMDescriptor`, with the defaults of Apple's `+descriptor`.

    Gate order `[i, f, z, o]`, or `[i, z, f, o]` when `forgetGateLast`. `reverse` is ignored
    when `bidirectional`. `training` alone makes LSTM return `[state, cell, zState]`.
    """

    reverse: bool = False
    bidirectional: bool = False
    produceCell: bool = False
    training: bool = False
    forgetGateLast: bool = False
    inputGateActivation: RNNActivation = RNNActivation.sigmoid
    forgetGateActivation: RNNActivation = RNNActivation.sigmoid
    cellGateActivation: RNNActivation = RNNActivation.tanh
    outputGateActivation: RNNActivation = RNNActivation.sigmoid
    activation: RNNActivation = RNNActivation.tanh

    _ACTIVATIONS = ("inputGateActivation", "forgetGateActivation", "cellGateActivation",
                    "outputGateActivation", "activation")

    def validated_copy(self, op: str, name: str | None) -> LSTMDescriptor:
        """A private, checked copy for an op (raises DescriptorError naming op and property)."""
        if not isinstance(self, LSTMDescriptor):
            raise op_error(DescriptorError, op, "descriptor", "an LSTMDescriptor",
                           type(self).__name__, name)
        d = dataclasses.replace(self)
        for prop in ("reverse", "bidirectional", "produceCell", "training", "forgetGateLast"):
            v = getattr(d, prop)
            if not isinstance(v, (bool, int)) or v not in (0, 1):
                raise op_error(DescriptorError, op, f"descriptor.{prop}", "a bool", v, name)
            setattr(d, prop, bool(v))
        for prop in self._ACTIVATIONS:
            v = getattr(d, prop)
            try:
                if isinstance(v, bool):
                    raise ValueError
                setattr(d, prop, RNNActivation(v))
            except ValueError:
                raise op_error(DescriptorError, op, f"descriptor.{prop}", "an RNNActivation", v,
                               name) from None
        return d

    def activations(self) -> tuple[int, int, int, int, int]:
        """(input, forget, cell, output gate, cell activation) as ints, for kernels."""
        return tuple(int(getattr(self, p)) for p in self._ACTIVATIONS)  # type: ignore[return-value]


@dataclass
class Pooling2DOpDescriptor(_ExplicitPadding):
    """`MPSGraphPooling2DOpDescriptor`.

    Positional order is that of Apple's full initialiser `init(kernelWidth:kernelHeight:
    strideInX:strideInY:dilationRateInX:dilationRateInY:paddingLeft:paddingRight:paddingTop:
    paddingBottom:paddingStyle:dataLayout:)`; the short one `init(kernelWidth:kernelHeight:
    strideInX:strideInY:paddingStyle:dataLayout:)` is the same constructor with keywords.

    Defaults: `paddingStyle=explicit`, `ceilMode=False`, `includeZeroPadToAverage=False`,
    `returnIndicesMode=0` (none), `returnIndicesDataType=int32` (Apple's documented defaults);
    strides and dilation rates 1, paddings 0, `dataLayout=NCHW`, kernel 1x1 (Apple's factories
    require the kernel size; a kernel of size 0 makes them fail, as it does here).
    Paddings are used only with `PaddingStyle.explicit`. `returnIndicesMode` (raw values of
    `MPSGraphPoolingReturnIndicesMode`: 0 none, 1-4 globalFlatten1D-4D, 5-8 localFlatten1D-4D)
    and `returnIndicesDataType` are stored and validated; `maxPooling2DReturnIndices` is not
    implemented (see ops/pooling.py).
    """

    kernelWidth: int = 1
    kernelHeight: int = 1
    strideInX: int = 1
    strideInY: int = 1
    dilationRateInX: int = 1
    dilationRateInY: int = 1
    paddingLeft: int = 0
    paddingRight: int = 0
    paddingTop: int = 0
    paddingBottom: int = 0
    paddingStyle: PaddingStyle = PaddingStyle.explicit
    dataLayout: TensorNamedDataLayout = TensorNamedDataLayout.NCHW
    ceilMode: bool = False
    includeZeroPadToAverage: bool = False
    returnIndicesMode: int = 0
    returnIndicesDataType: DataType = DataType.int32

    def validated_copy(self, op: str, name: str | None, argument: str = "descriptor"
                       ) -> Pooling2DOpDescriptor:
        """A private, checked copy for an op (raises DescriptorError naming op, `name` and
        `argument.property`); call it on the class so that a wrong type or None is reported."""
        if not isinstance(self, Pooling2DOpDescriptor):
            raise op_error(DescriptorError, op, argument, "a Pooling2DOpDescriptor",
                           type(self).__name__, name)
        d = dataclasses.replace(self)
        for prop in ("kernelWidth", "kernelHeight", "strideInX", "strideInY",
                     "dilationRateInX", "dilationRateInY"):
            setattr(d, prop, _check_int(op, name, prop, getattr(d, prop), 1, argument))
        for prop in ("paddingLeft", "paddingRight", "paddingTop", "paddingBottom"):
            setattr(d, prop, _check_int(op, name, prop, getattr(d, prop), 0, argument))
        for prop in ("ceilMode", "includeZeroPadToAverage"):
            v = getattr(d, prop)
            if not isinstance(v, (bool, np.bool_, int)) or v not in (0, 1):
                raise op_error(DescriptorError, op, f"{argument}.{prop}", "a bool",
                               repr(v) if isinstance(v, str) else v, name)
            setattr(d, prop, bool(v))
        _check_style_and_layout(d, op, name, argument)
        v = d.returnIndicesMode
        if (isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral)
                or not 0 <= v <= 8):
            raise op_error(DescriptorError, op, f"{argument}.returnIndicesMode", "a "
                           "PoolingReturnIndicesMode raw value 0..8", repr(v) if isinstance(
                               v, str) else v, name)
        d.returnIndicesMode = int(v)
        d.returnIndicesDataType = _check_enum(
            op, name, "returnIndicesDataType", d.returnIndicesDataType, DataType,
            (DataType.int32, DataType.int64), "DataType.int32 or int64", argument)
        return d


def _check_bool(op: str, name: str | None, prop: str, value: object, argument: str) -> bool:
    if not isinstance(value, (bool, np.bool_, int)) or value not in (0, 1):
        raise op_error(DescriptorError, op, f"{argument}.{prop}", "a bool",
                       repr(value) if isinstance(value, str) else value, name)
    return bool(value)


def _check_type(d: object, cls: type, op: str, name: str | None, argument: str) -> None:
    if not isinstance(d, cls):
        raise op_error(DescriptorError, op, argument, f"a {cls.__name__}", type(d).__name__,
                       name)


@dataclass
class FFTDescriptor(Descriptor):
    """`MPSGraphFFTDescriptor` with Apple's defaults: `inverse=False` (phase factor
    exp(-i 2 pi mu nu / n); True: exp(+i ...)), `scalingMode=FFTScalingMode.none`,
    `roundToOddHermitean=False` (only HermiteanToRealFFT reads it)."""

    inverse: bool = False
    scalingMode: FFTScalingMode = FFTScalingMode.none
    roundToOddHermitean: bool = False

    @classmethod
    def descriptor(cls) -> FFTDescriptor:
        """Apple's `+descriptor`: the defaults."""
        return cls()

    def validated_copy(self, op: str, name: str | None, argument: str = "descriptor"
                       ) -> FFTDescriptor:
        _check_type(self, FFTDescriptor, op, name, argument)
        d = dataclasses.replace(self)
        d.inverse = _check_bool(op, name, "inverse", d.inverse, argument)
        d.roundToOddHermitean = _check_bool(op, name, "roundToOddHermitean",
                                            d.roundToOddHermitean, argument)
        d.scalingMode = _check_enum(op, name, "scalingMode", d.scalingMode, FFTScalingMode,
                                    tuple(FFTScalingMode), "an FFTScalingMode", argument)
        return d


@dataclass
class SDPADescriptor(Descriptor):
    """`MPSGraphSDPADescriptor` (macOS 27): `scale` (Swift `init(scale:)`; None here means
    1/sqrt(headDim), a decision), `isCausal` (a lower-triangular mask aligned at the top-left,
    as torch's `is_causal`), `maskTensor` (additive float or boolean keep-mask, broadcast to
    [..., Lq, Lk]; mutually exclusive with isCausal) and `sinksTensor` (shape [nHeads]: one
    extra logit per head that joins the softmax's denominator only)."""

    scale: float | None = None
    isCausal: bool = False
    maskTensor: Any = None
    sinksTensor: Any = None

    @classmethod
    def descriptorWithScale(cls, scale: float) -> SDPADescriptor:
        return cls(scale=scale)


@dataclass
class StencilOpDescriptor(Descriptor):
    """`MPSGraphStencilOpDescriptor` (rank-4 windows). Defaults as Apple's `init`:
    reductionMode sum, offsets 0, strides 1, dilationRates 1, explicitPadding 0 (8 numbers:
    before/after per dimension), boundaryMode zero, paddingStyle explicit, paddingConstant 0."""

    reductionMode: ReductionMode = ReductionMode.sum
    offsets: Any = (0, 0, 0, 0)
    strides: Any = (1, 1, 1, 1)
    dilationRates: Any = (1, 1, 1, 1)
    explicitPadding: Any = (0, 0, 0, 0, 0, 0, 0, 0)
    boundaryMode: PaddingMode = PaddingMode.zero
    paddingStyle: PaddingStyle = PaddingStyle.explicit
    paddingConstant: float = 0.0

    @classmethod
    def descriptorWithReductionMode(cls, reductionMode, offsets, strides, dilationRates,
                                    explicitPadding, boundaryMode, paddingStyle,
                                    paddingConstant) -> StencilOpDescriptor:
        return cls(reductionMode, offsets, strides, dilationRates, explicitPadding,
                   boundaryMode, paddingStyle, paddingConstant)

    @classmethod
    def descriptorWithOffsets(cls, offsets, explicitPadding) -> StencilOpDescriptor:
        return cls(offsets=offsets, explicitPadding=explicitPadding)

    @classmethod
    def descriptorWithExplicitPadding(cls, explicitPadding) -> StencilOpDescriptor:
        return cls(explicitPadding=explicitPadding)

    @classmethod
    def descriptorWithPaddingStyle(cls, paddingStyle) -> StencilOpDescriptor:
        return cls(paddingStyle=paddingStyle)


@dataclass
class CreateSparseOpDescriptor(Descriptor):
    """`MPSGraphCreateSparseOpDescriptor`: `sparseStorageType` (COO, CSC, CSR) and the
    `dataType` of the values (Swift `init(storageType:dataType:)`)."""

    sparseStorageType: SparseStorageType = SparseStorageType.COO
    dataType: DataType = DataType.float32

    @classmethod
    def descriptorWithStorageType(cls, sparseStorageType, dataType
                                  ) -> CreateSparseOpDescriptor:
        return cls(sparseStorageType=sparseStorageType, dataType=dataType)
