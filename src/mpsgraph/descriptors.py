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
    PoolingReturnIndicesMode,
    RandomDistribution,
    RandomNormalSamplingMethod,
    ReductionMode,
    RNNActivation,
    SparseStorageType,
    TensorNamedDataLayout,
)

__all__ = ["Convolution2DOpDescriptor", "LSTMDescriptor", "GRUDescriptor",
           "SingleGateRNNDescriptor", "Pooling2DOpDescriptor", "Descriptor",
           "UnknownPropertyError", "RandomOpDescriptor", "FFTDescriptor", "SDPADescriptor",
           "StencilOpDescriptor", "CreateSparseOpDescriptor"]


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


_STEPS_2D = ("strideInX", "strideInY", "dilationRateInX", "dilationRateInY")
_PADS_2D = ("paddingLeft", "paddingRight", "paddingTop", "paddingBottom")


def _checked_conv_2d(d, op: str, name: str | None, argument: str, positive: tuple[str, ...]):
    """The checks the 2-D convolution descriptors share, on `d` (the caller's fresh copy):
    `positive` properties >= 1, paddings >= 0, padding style and data layout, weightsLayout
    OIHW or HWIO."""
    for prop in positive:
        setattr(d, prop, _check_int(op, name, prop, getattr(d, prop), 1, argument))
    for prop in _PADS_2D:
        setattr(d, prop, _check_int(op, name, prop, getattr(d, prop), 0, argument))
    _check_style_and_layout(d, op, name, argument)
    L = TensorNamedDataLayout
    d.weightsLayout = _check_enum(op, name, "weightsLayout", d.weightsLayout, L,
                                  (L.OIHW, L.HWIO), "TensorNamedDataLayout.OIHW or HWIO",
                                  argument)
    return d


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
        return _checked_conv_2d(dataclasses.replace(self), op, name, argument,
                                _STEPS_2D + ("groups",))


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


def _validated_rnn_copy(d: Any, cls: type, flags: tuple[str, ...], acts: tuple[str, ...],
                        op: str, name: str | None) -> Any:
    """A checked copy of a GRU / single-gate RNN descriptor: bool flags, RNNActivation
    activations (DescriptorError naming op and property otherwise)."""
    if not isinstance(d, cls):
        raise op_error(DescriptorError, op, "descriptor", f"a {cls.__name__}",
                       type(d).__name__, name)
    d = dataclasses.replace(d)
    for prop in flags:
        v = getattr(d, prop)
        if not isinstance(v, (bool, int, np.bool_)) or v not in (0, 1):
            raise op_error(DescriptorError, op, f"descriptor.{prop}", "a bool",
                           repr(v) if isinstance(v, str) else v, name)
        setattr(d, prop, bool(v))
    for prop in acts:
        v = getattr(d, prop)
        try:
            if isinstance(v, (bool, np.bool_)):
                raise ValueError
            setattr(d, prop, RNNActivation(v))
        except (ValueError, TypeError):
            raise op_error(DescriptorError, op, f"descriptor.{prop}", "an RNNActivation",
                           repr(v) if isinstance(v, str) else v, name) from None
    return d


@dataclass
class GRUDescriptor(Descriptor):
    """`MPSGraphGRUDescriptor`, with the defaults of Apple's `+descriptor` (all flags NO,
    update / reset gates sigmoid, output gate tanh).

    Gate order of every 3H axis `[z, r, o]`, or `[r, z, o]` when `resetGateFirst`.
    `resetAfter` applies the reset gate after the recurrent product (and adds
    `secondaryBias`); `flipZ` blends `(1 - z) h_prev + z o` instead of the default
    `z h_prev + (1 - z) o` (the method pages' reading, docs/semantics.md). `reverse` is
    ignored when `bidirectional`; `training` makes GRU return `[state, zState]`.
    """

    reverse: bool = False
    bidirectional: bool = False
    training: bool = False
    resetGateFirst: bool = False
    resetAfter: bool = False
    flipZ: bool = False
    updateGateActivation: RNNActivation = RNNActivation.sigmoid
    resetGateActivation: RNNActivation = RNNActivation.sigmoid
    outputGateActivation: RNNActivation = RNNActivation.tanh

    _FLAGS = ("reverse", "bidirectional", "training", "resetGateFirst", "resetAfter", "flipZ")
    _ACTIVATIONS = ("updateGateActivation", "resetGateActivation", "outputGateActivation")

    @classmethod
    def descriptor(cls) -> GRUDescriptor:
        """Apple's `+descriptor` factory: a descriptor with the defaults."""
        return cls()

    def validated_copy(self, op: str, name: str | None) -> GRUDescriptor:
        """A private, checked copy for an op (raises DescriptorError naming op and property)."""
        return _validated_rnn_copy(self, GRUDescriptor, GRUDescriptor._FLAGS,
                                   GRUDescriptor._ACTIVATIONS, op, name)

    def activations(self) -> tuple[int, int, int]:
        """(update z, reset r, output o) gate activations as ints, for kernels."""
        return tuple(int(getattr(self, p)) for p in self._ACTIVATIONS)  # type: ignore[return-value]


@dataclass
class SingleGateRNNDescriptor(Descriptor):
    """`MPSGraphSingleGateRNNDescriptor`, with the defaults of Apple's `+descriptor`
    (all flags NO, `activation` relu). `training` makes singleGateRNN return
    `[state, zState]` (zState: the pre-activation values)."""

    reverse: bool = False
    bidirectional: bool = False
    training: bool = False
    activation: RNNActivation = RNNActivation.relu

    _FLAGS = ("reverse", "bidirectional", "training")
    _ACTIVATIONS = ("activation",)

    @classmethod
    def descriptor(cls) -> SingleGateRNNDescriptor:
        """Apple's `+descriptor` factory: a descriptor with the defaults."""
        return cls()

    def validated_copy(self, op: str, name: str | None) -> SingleGateRNNDescriptor:
        """A private, checked copy for an op (raises DescriptorError naming op and property)."""
        return _validated_rnn_copy(self, SingleGateRNNDescriptor,
                                   SingleGateRNNDescriptor._FLAGS,
                                   SingleGateRNNDescriptor._ACTIVATIONS, op, name)


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
    and `returnIndicesDataType` configure `maxPooling2DReturnIndices` (ops/pool_extra.py).
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
        for prop in _PADS_2D:
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


# ---------------------------------------------------------------------------- issue 18
def _check_int_list(op: str, name: str | None, prop: str, value: object, n: int, minimum: int,
                    argument: str) -> tuple[int, ...]:
    """A property that is a sequence of exactly `n` ints >= minimum (an NSArray<NSNumber>)."""
    ok = not isinstance(value, (str, bytes)) and hasattr(value, "__iter__")
    vals = list(value) if ok else []
    ok = ok and len(vals) == n and all(
        isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) and v >= minimum
        for v in vals)
    if not ok:
        raise op_error(DescriptorError, op, f"{argument}.{prop}", f"{n} ints >= {minimum}",
                       repr(value) if isinstance(value, str) else value, name)
    return tuple(int(v) for v in vals)


def _check_bool(op: str, name: str | None, prop: str, value: object, argument: str) -> bool:
    if not isinstance(value, (bool, np.bool_, int)) or value not in (0, 1):
        raise op_error(DescriptorError, op, f"{argument}.{prop}", "a bool",
                       repr(value) if isinstance(value, str) else value, name)
    return bool(value)


def _check_style(op: str, name: str | None, value: object, argument: str) -> PaddingStyle:
    P = PaddingStyle
    return _check_enum(op, name, "paddingStyle", value, P,
                       (P.explicit, P.TF_VALID, P.TF_SAME, P.ONNX_SAME_LOWER),
                       "PaddingStyle.explicit, TF_VALID, TF_SAME or ONNX_SAME_LOWER "
                       "(explicitOffset applies only to stencil ops)", argument)


def _type_check(self: Any, cls: type, op: str, name: str | None, argument: str) -> None:
    if not isinstance(self, cls):
        raise op_error(DescriptorError, op, argument, f"a {cls.__name__}",
                       type(self).__name__, name)


@dataclass
class Convolution3DOpDescriptor(Descriptor):
    """`MPSGraphConvolution3DOpDescriptor` (macOS 13.2).

    Positional order is that of Apple's factory `descriptorWithStrideInX:strideInY:strideInZ:
    dilationRateInX:...:groups:paddingLeft:paddingRight:paddingTop:paddingBottom:paddingFront:
    paddingBack:paddingStyle:dataLayout:weightsLayout:`. Defaults as Convolution2DOpDescriptor
    (strides, dilation rates and groups 1, paddings 0, explicit), `dataLayout=NCDHW`,
    `weightsLayout=OIDHW`. Z is depth; front / back pad the depth axis."""

    strideInX: int = 1
    strideInY: int = 1
    strideInZ: int = 1
    dilationRateInX: int = 1
    dilationRateInY: int = 1
    dilationRateInZ: int = 1
    groups: int = 1
    paddingLeft: int = 0
    paddingRight: int = 0
    paddingTop: int = 0
    paddingBottom: int = 0
    paddingFront: int = 0
    paddingBack: int = 0
    paddingStyle: PaddingStyle = PaddingStyle.explicit
    dataLayout: TensorNamedDataLayout = TensorNamedDataLayout.NCDHW
    weightsLayout: TensorNamedDataLayout = TensorNamedDataLayout.OIDHW

    @classmethod
    def descriptorWithStrideInX(cls, strideInX: int, **kwargs: Any) -> Convolution3DOpDescriptor:
        """Apple's class factories (with or without the six paddings)."""
        return cls(strideInX=strideInX, **kwargs)

    def setExplicitPaddingWithPaddingLeft(self, paddingLeft: int, paddingRight: int,
                                          paddingTop: int, paddingBottom: int,
                                          paddingFront: int, paddingBack: int) -> None:
        """Set the six paddings and `paddingStyle = explicit`."""
        self.paddingLeft, self.paddingRight = paddingLeft, paddingRight
        self.paddingTop, self.paddingBottom = paddingTop, paddingBottom
        self.paddingFront, self.paddingBack = paddingFront, paddingBack
        self.paddingStyle = PaddingStyle.explicit

    def validated_copy(self, op: str, name: str | None, argument: str = "descriptor"
                       ) -> Convolution3DOpDescriptor:
        _type_check(self, Convolution3DOpDescriptor, op, name, argument)
        d = dataclasses.replace(self)
        for prop in ("strideInX", "strideInY", "strideInZ", "dilationRateInX",
                     "dilationRateInY", "dilationRateInZ", "groups"):
            setattr(d, prop, _check_int(op, name, prop, getattr(d, prop), 1, argument))
        for prop in ("paddingLeft", "paddingRight", "paddingTop", "paddingBottom",
                     "paddingFront", "paddingBack"):
            setattr(d, prop, _check_int(op, name, prop, getattr(d, prop), 0, argument))
        d.paddingStyle = _check_style(op, name, d.paddingStyle, argument)
        L = TensorNamedDataLayout
        d.dataLayout = _check_enum(op, name, "dataLayout", d.dataLayout, L, (L.NCDHW, L.NDHWC),
                                   "TensorNamedDataLayout.NCDHW or NDHWC", argument)
        d.weightsLayout = _check_enum(op, name, "weightsLayout", d.weightsLayout, L,
                                      (L.OIDHW, L.DHWIO), "TensorNamedDataLayout.OIDHW or DHWIO",
                                      argument)
        return d


@dataclass
class DepthwiseConvolution2DOpDescriptor(_ExplicitPadding):
    """`MPSGraphDepthwiseConvolution2DOpDescriptor`: no groups; the weights' O axis is the
    channel multiplier M and their I axis the source's channels C (OIHW [M, C, kH, kW] or
    HWIO [kH, kW, C, M]); output channel c*M + m. Defaults as Convolution2DOpDescriptor.
    Factories: `init(strideInX:...:weightsLayout:)` and `init(dataLayout:weightsLayout:)`."""

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
    weightsLayout: TensorNamedDataLayout = TensorNamedDataLayout.OIHW

    @classmethod
    def descriptorWithDataLayout(cls, dataLayout: TensorNamedDataLayout,
                                 weightsLayout: TensorNamedDataLayout
                                 ) -> DepthwiseConvolution2DOpDescriptor:
        return cls(dataLayout=dataLayout, weightsLayout=weightsLayout)

    @classmethod
    def descriptorWithStrideInX(cls, strideInX: int, **kwargs: Any
                                ) -> DepthwiseConvolution2DOpDescriptor:
        return cls(strideInX=strideInX, **kwargs)

    def validated_copy(self, op: str, name: str | None, argument: str = "descriptor"
                       ) -> DepthwiseConvolution2DOpDescriptor:
        _type_check(self, DepthwiseConvolution2DOpDescriptor, op, name, argument)
        return _checked_conv_2d(dataclasses.replace(self), op, name, argument, _STEPS_2D)


@dataclass
class DepthwiseConvolution3DOpDescriptor(Descriptor):
    """`MPSGraphDepthwiseConvolution3DOpDescriptor` (Apple's documented defaults).

    `strides`, `dilationRates`: three numbers, one per spatial axis, fastest running last;
    `paddingValues`: six numbers, (before, after) per spatial axis, slowest first, used only
    with `explicit`; `channelDimensionIndex` in -4..-1: the channel axis among the last four
    axes of source and weights (-4: CDHW, -1: DHWC). Positional order is that of the factory
    `descriptorWithStrides:dilationRates:paddingValues:paddingStyle:`."""

    strides: list = dataclasses.field(default_factory=lambda: [1, 1, 1])
    dilationRates: list = dataclasses.field(default_factory=lambda: [1, 1, 1])
    paddingValues: list = dataclasses.field(default_factory=lambda: [0] * 6)
    paddingStyle: PaddingStyle = PaddingStyle.explicit
    channelDimensionIndex: int = -4

    @classmethod
    def descriptorWithStrides(cls, strides, dilationRates, paddingValues,
                              paddingStyle: PaddingStyle) -> DepthwiseConvolution3DOpDescriptor:
        return cls(strides=list(strides), dilationRates=list(dilationRates),
                   paddingValues=list(paddingValues), paddingStyle=paddingStyle)

    @classmethod
    def descriptorWithPaddingStyle(cls, paddingStyle: PaddingStyle
                                   ) -> DepthwiseConvolution3DOpDescriptor:
        return cls(paddingStyle=paddingStyle)

    def validated_copy(self, op: str, name: str | None, argument: str = "descriptor"
                       ) -> DepthwiseConvolution3DOpDescriptor:
        _type_check(self, DepthwiseConvolution3DOpDescriptor, op, name, argument)
        d = dataclasses.replace(self)
        d.strides = _check_int_list(op, name, "strides", d.strides, 3, 1, argument)
        d.dilationRates = _check_int_list(op, name, "dilationRates", d.dilationRates, 3, 1,
                                          argument)
        d.paddingValues = _check_int_list(op, name, "paddingValues", d.paddingValues, 6, 0,
                                          argument)
        d.paddingStyle = _check_style(op, name, d.paddingStyle, argument)
        v = d.channelDimensionIndex
        if (isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral)
                or not -4 <= v <= -1):
            raise op_error(DescriptorError, op, f"{argument}.channelDimensionIndex",
                           "an int in -4..-1 (an axis of the last four)",
                           repr(v) if isinstance(v, str) else v, name)
        d.channelDimensionIndex = int(v)
        return d


@dataclass
class Pooling4DOpDescriptor(Descriptor):
    """`MPSGraphPooling4DOpDescriptor` (Apple's documented defaults; `kernelSizes` has none
    documented: [1, 1, 1, 1]).

    `kernelSizes`, `strides`, `dilationRates`: four numbers, one per pooled axis (the last
    four of the source), fastest running last; `paddingValues`: eight numbers, (before, after)
    per axis, slowest first, used only with `explicit`. Positional order is that of the
    factory `descriptorWithKernelSizes:strides:dilationRates:paddingValues:paddingStyle:`."""

    kernelSizes: list = dataclasses.field(default_factory=lambda: [1, 1, 1, 1])
    strides: list = dataclasses.field(default_factory=lambda: [1, 1, 1, 1])
    dilationRates: list = dataclasses.field(default_factory=lambda: [1, 1, 1, 1])
    paddingValues: list = dataclasses.field(default_factory=lambda: [0] * 8)
    paddingStyle: PaddingStyle = PaddingStyle.explicit
    ceilMode: bool = False
    includeZeroPadToAverage: bool = False
    returnIndicesMode: PoolingReturnIndicesMode = PoolingReturnIndicesMode.none
    returnIndicesDataType: DataType = DataType.int32

    @classmethod
    def descriptorWithKernelSizes(cls, kernelSizes, strides=None, dilationRates=None,
                                  paddingValues=None, paddingStyle: PaddingStyle =
                                  PaddingStyle.explicit) -> Pooling4DOpDescriptor:
        """Both of Apple's factories (`descriptorWithKernelSizes:paddingStyle:` and the full
        one)."""
        kw: dict[str, Any] = {"kernelSizes": list(kernelSizes), "paddingStyle": paddingStyle}
        for k, v in (("strides", strides), ("dilationRates", dilationRates),
                     ("paddingValues", paddingValues)):
            if v is not None:
                kw[k] = list(v)
        return cls(**kw)

    def validated_copy(self, op: str, name: str | None, argument: str = "descriptor"
                       ) -> Pooling4DOpDescriptor:
        _type_check(self, Pooling4DOpDescriptor, op, name, argument)
        d = dataclasses.replace(self)
        for prop in ("kernelSizes", "strides", "dilationRates"):
            setattr(d, prop, _check_int_list(op, name, prop, getattr(d, prop), 4, 1, argument))
        d.paddingValues = _check_int_list(op, name, "paddingValues", d.paddingValues, 8, 0,
                                          argument)
        d.paddingStyle = _check_style(op, name, d.paddingStyle, argument)
        d.ceilMode = _check_bool(op, name, "ceilMode", d.ceilMode, argument)
        d.includeZeroPadToAverage = _check_bool(op, name, "includeZeroPadToAverage",
                                                d.includeZeroPadToAverage, argument)
        M = PoolingReturnIndicesMode
        d.returnIndicesMode = _check_enum(op, name, "returnIndicesMode", d.returnIndicesMode, M,
                                          tuple(M), "a PoolingReturnIndicesMode", argument)
        d.returnIndicesDataType = _check_enum(
            op, name, "returnIndicesDataType", d.returnIndicesDataType, DataType,
            (DataType.int32, DataType.int64), "DataType.int32 or int64", argument)
        return d


@dataclass
class ImToColOpDescriptor(_ExplicitPadding):
    """`MPSGraphImToColOpDescriptor` (macOS 14). Positional order is that of the factory
    `descriptorWithKernelWidth:kernelHeight:strideInX:strideInY:dilationRateInX:
    dilationRateInY:paddingLeft:paddingRight:paddingTop:paddingBottom:dataLayout:`.
    Defaults: kernel 1x1, strides and dilation rates 1, paddings 0, NCHW. There is no
    paddingStyle: the paddings are always explicit (`setExplicitPaddingWithPaddingLeft`
    only sets them)."""

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
    dataLayout: TensorNamedDataLayout = TensorNamedDataLayout.NCHW

    @classmethod
    def descriptorWithKernelWidth(cls, kernelWidth: int, **kwargs: Any) -> ImToColOpDescriptor:
        return cls(kernelWidth=kernelWidth, **kwargs)

    def setExplicitPaddingWithPaddingLeft(self, paddingLeft: int, paddingRight: int,
                                          paddingTop: int, paddingBottom: int) -> None:
        """Set the four paddings."""
        self.paddingLeft, self.paddingRight = paddingLeft, paddingRight
        self.paddingTop, self.paddingBottom = paddingTop, paddingBottom

    def validated_copy(self, op: str, name: str | None, argument: str = "descriptor"
                       ) -> ImToColOpDescriptor:
        _type_check(self, ImToColOpDescriptor, op, name, argument)
        d = dataclasses.replace(self)
        for prop in ("kernelWidth", "kernelHeight", "strideInX", "strideInY",
                     "dilationRateInX", "dilationRateInY"):
            setattr(d, prop, _check_int(op, name, prop, getattr(d, prop), 1, argument))
        for prop in _PADS_2D:
            setattr(d, prop, _check_int(op, name, prop, getattr(d, prop), 0, argument))
        L = TensorNamedDataLayout
        d.dataLayout = _check_enum(op, name, "dataLayout", d.dataLayout, L, (L.NCHW, L.NHWC),
                                   "TensorNamedDataLayout.NCHW or NHWC", argument)
        return d


__all__ += ["PoolingReturnIndicesMode", "Convolution3DOpDescriptor",
            "DepthwiseConvolution2DOpDescriptor", "DepthwiseConvolution3DOpDescriptor",
            "Pooling4DOpDescriptor", "ImToColOpDescriptor"]


_INT32_MAX = 2**31 - 1
# Apple's documented defaults, which depend on the distribution the descriptor is made with
_RANDOM_DEFAULTS = {
    RandomDistribution.uniform: dict(min=0.0, max=1.0, minInteger=0, maxInteger=_INT32_MAX,
                                     mean=0.0, standardDeviation=0.0),
    RandomDistribution.normal: dict(min=-2.0, max=2.0, minInteger=0, maxInteger=0, mean=0.0,
                                    standardDeviation=1.0),
}
_RANDOM_DEFAULTS[RandomDistribution.truncatedNormal] = _RANDOM_DEFAULTS[RandomDistribution.normal]
_RANDOM_TYPES = {RandomDistribution.uniform: (DataType.float32, DataType.float16, DataType.int32),
                 RandomDistribution.normal: (DataType.float32, DataType.float16),
                 RandomDistribution.truncatedNormal: (DataType.float32, DataType.float16)}


@dataclass
class RandomOpDescriptor(Descriptor):
    """`MPSGraphRandomOpDescriptor`: the distribution of a random op and its parameters.

    `RandomOpDescriptor(distribution=..., dataType=...)` (Swift `init(distribution:dataType:)`,
    Objective-C `+descriptorWithDistribution:dataType:`, also the classmethod
    `RandomOpDescriptor.descriptorWithDistribution(distribution, dataType)`); with no
    arguments (`new` / `init()`): uniform float32. The properties a constructor is not given
    take Apple's defaults FOR THE DISTRIBUTION IT IS MADE WITH (changing `distribution` later
    keeps them, as in Apple's class):

    - uniform: min 0, max 1, minInteger 0, maxInteger INT32_MAX, mean 0, standardDeviation 0;
    - normal / truncatedNormal: min -2, max 2, minInteger 0, maxInteger 0, mean 0,
      standardDeviation 1;
    - samplingMethod invCDF.

    Used: uniform float types sample [min, max), uniform int32 [minInteger, maxInteger] (both
    ends included); normal uses mean and standardDeviation; truncatedNormal the normal of mean
    and standardDeviation restricted to [min, max). dataType: float32, float16 or int32 for
    uniform, float32 or float16 for the normal distributions (Apple's list). The float
    properties are float32 (Apple's `float`): they are rounded to float32 when an op copies
    the descriptor.
    """

    distribution: RandomDistribution = RandomDistribution.uniform
    dataType: DataType = DataType.float32
    min: float | None = None
    max: float | None = None
    minInteger: int | None = None
    maxInteger: int | None = None
    mean: float | None = None
    standardDeviation: float | None = None
    samplingMethod: RandomNormalSamplingMethod = RandomNormalSamplingMethod.invCDF

    def __post_init__(self) -> None:
        try:
            dist = RandomDistribution(self.distribution)
        except (ValueError, TypeError):
            dist = RandomDistribution.uniform  # reported by validated_copy
        for k, v in _RANDOM_DEFAULTS[dist].items():
            if getattr(self, k) is None:
                setattr(self, k, v)

    @classmethod
    def descriptorWithDistribution(cls, distribution: RandomDistribution,
                                   dataType: DataType) -> RandomOpDescriptor:
        """Apple's class factory `descriptorWithDistribution:dataType:`."""
        return cls(distribution=distribution, dataType=dataType)

    def validated_copy(self, op: str, name: str | None, argument: str = "descriptor"
                       ) -> RandomOpDescriptor:
        """A private, checked copy for an op (DescriptorError naming op and property): the
        enums as members, floats rounded to float32 and finite, integers as ints, the dataType
        one the distribution allows, and a non-empty range for the distribution in use
        (min < max; minInteger <= maxInteger within int32; standardDeviation >= 0, > 0 for
        truncatedNormal)."""
        if not isinstance(self, RandomOpDescriptor):
            raise op_error(DescriptorError, op, argument, "a RandomOpDescriptor",
                           type(self).__name__, name)
        d = dataclasses.replace(self)
        d.distribution = _check_enum(op, name, "distribution", d.distribution,
                                     RandomDistribution, tuple(RandomDistribution),
                                     "a RandomDistribution (uniform, normal, truncatedNormal)",
                                     argument)
        d.samplingMethod = _check_enum(op, name, "samplingMethod", d.samplingMethod,
                                       RandomNormalSamplingMethod,
                                       tuple(RandomNormalSamplingMethod),
                                       "a RandomNormalSamplingMethod (invCDF, boxMuller)",
                                       argument)
        allowed = _RANDOM_TYPES[d.distribution]
        names = " or ".join(t.name for t in allowed)
        d.dataType = _check_enum(op, name, "dataType", d.dataType, DataType, allowed,
                                 f"{names} (the types of {d.distribution.name} samples)",
                                 argument)
        for prop in ("min", "max", "mean", "standardDeviation"):
            v = getattr(d, prop)
            ok = isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
            f = float(np.float32(v)) if ok else float("nan")
            if not np.isfinite(f):
                raise op_error(DescriptorError, op, f"{argument}.{prop}", "a finite float "
                               "(float32)", repr(v) if isinstance(v, str) else v, name)
            setattr(d, prop, f)
        for prop in ("minInteger", "maxInteger"):
            setattr(d, prop, _check_int(op, name, prop, getattr(d, prop), -2**63, argument))
        dist = d.distribution
        if dist == RandomDistribution.uniform and d.dataType == DataType.int32:
            lo, hi = d.minInteger, d.maxInteger
            if not -2**31 <= lo <= hi <= _INT32_MAX:
                raise op_error(DescriptorError, op, f"{argument}.maxInteger", "minInteger <= "
                               "maxInteger, both in int32's range (the range [minInteger, "
                               "maxInteger] of int32 samples)", f"[{lo}, {hi}]", name)
        elif dist != RandomDistribution.normal:
            npdt = d.dataType.numpy_dtype
            lo = np.asarray(d.min).astype(npdt)  # the type's smallest value >= min
            lo = lo if float(lo) >= d.min else np.nextafter(lo, np.asarray(np.inf, npdt))
            if not d.min < d.max or not float(lo) < d.max:
                raise op_error(DescriptorError, op, f"{argument}.max", "max > min, with a "
                               f"{d.dataType.name} value in [min, max) (the range of "
                               f"{dist.name} samples)", f"min {d.min}, max {d.max}", name)
        if dist != RandomDistribution.uniform:
            sd = d.standardDeviation
            if sd < 0 or (dist == RandomDistribution.truncatedNormal and sd == 0):
                raise op_error(DescriptorError, op, f"{argument}.standardDeviation",
                               "a standardDeviation >= 0 (> 0 for truncatedNormal)", sd, name)
        return d



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
        _type_check(self, FFTDescriptor, op, name, argument)
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
