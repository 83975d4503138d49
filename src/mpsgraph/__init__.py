"""mpsgraph: Apple's MetalPerformanceShadersGraph programming model, portable.

Build a symbolic graph with `Graph` methods named as in Swift, then `run` or `compile` it on a
`Device` ("cpu" = NumPy, the default; "cuda" / "torch-cpu" = the torch backend).
"""

from .descriptors import (
    Convolution2DOpDescriptor,
    Convolution3DOpDescriptor,
    CreateSparseOpDescriptor,
    DepthwiseConvolution2DOpDescriptor,
    DepthwiseConvolution3DOpDescriptor,
    FFTDescriptor,
    GRUDescriptor,
    ImToColOpDescriptor,
    LSTMDescriptor,
    Pooling2DOpDescriptor,
    Pooling4DOpDescriptor,
    PoolingReturnIndicesMode,
    RandomOpDescriptor,
    SDPADescriptor,
    SingleGateRNNDescriptor,
    StencilOpDescriptor,
    UnknownPropertyError,
)
from .errors import (
    DataTypeError,
    DescriptorError,
    FeedError,
    GraphError,
    GraphMismatchError,
    ShapeError,
    UnsupportedError,
)
from .graph import Graph, Operation, Tensor
from .runtime.device import Device
from .runtime.executable import Executable
from .runtime.execution_descriptors import (
    CompilationDescriptor,
    DeploymentPlatform,
    ExecutableExecutionDescriptor,
    ExecutableSerializationDescriptor,
    ExecutionDescriptor,
    ExecutionStage,
    Optimization,
    OptimizationProfile,
    ReducedPrecisionFastMath,
)
from .runtime.tensor_data import TensorData
from .types import (
    DataType,
    FFTScalingMode,
    LossReductionType,
    NonMaximumSuppressionCoordinateMode,
    PaddingMode,
    PaddingStyle,
    RandomDistribution,
    RandomNormalSamplingMethod,
    ReductionMode,
    ResizeMode,
    ResizeNearestRoundingMode,
    RNNActivation,
    ScatterMode,
    ShapedType,
    SparseStorageType,
    TensorNamedDataLayout,
)
from .viewer import draw

float32 = DataType.float32
float16 = DataType.float16
bFloat16 = DataType.bFloat16
int8 = DataType.int8
int16 = DataType.int16
int32 = DataType.int32
int64 = DataType.int64
uInt8 = DataType.uInt8
bool = DataType.bool  # noqa: A001 - an attribute, kept out of __all__ (it shadows the builtin)

__version__ = "0.1.0"

__all__ = [
    "Graph", "Tensor", "Operation", "Executable", "TensorData", "Device",
    "DataType", "ShapedType", "PaddingStyle", "PaddingMode", "TensorNamedDataLayout",
    "RNNActivation", "LossReductionType", "ScatterMode", "Convolution2DOpDescriptor",
    "LSTMDescriptor", "GRUDescriptor", "SingleGateRNNDescriptor", "Pooling2DOpDescriptor",
    "GraphError", "ShapeError", "DataTypeError", "DescriptorError", "FeedError",
    "GraphMismatchError", "UnsupportedError", "UnknownPropertyError",
    "Convolution3DOpDescriptor", "DepthwiseConvolution2DOpDescriptor",
    "DepthwiseConvolution3DOpDescriptor", "Pooling4DOpDescriptor", "ImToColOpDescriptor",
    "PoolingReturnIndicesMode",
    "RandomOpDescriptor", "RandomDistribution", "RandomNormalSamplingMethod",
    "CompilationDescriptor", "ExecutionDescriptor", "ExecutableExecutionDescriptor",
    "ExecutableSerializationDescriptor", "Optimization", "OptimizationProfile",
    "ReducedPrecisionFastMath", "DeploymentPlatform", "ExecutionStage",
    "draw", "float32", "float16", "bFloat16", "int8", "int16", "int32", "int64", "uInt8",
    "FFTDescriptor", "SDPADescriptor", "StencilOpDescriptor", "CreateSparseOpDescriptor",
    "ResizeMode", "ResizeNearestRoundingMode", "FFTScalingMode",
    "NonMaximumSuppressionCoordinateMode", "SparseStorageType", "ReductionMode",
]
