"""Compile and execution descriptors: `CompilationDescriptor`, `ExecutionDescriptor`,
`ExecutableExecutionDescriptor`, `ExecutableSerializationDescriptor` and their enums.

Properties keep Apple's names and defaults (MPSGRAPH_CLASSES.tsv). What each one does here:

- `CompilationDescriptor.callables` ({symbolName: Executable}) resolves `call` ops;
  `compilationCompletionHandler(executable, error)` is called when `compile` finishes
  (`error` is None; a failed compile raises instead); `reducedPrecisionFastMath` with
  `allowConvertingOperandsFromFP32ToFP19` lets float32 matrix products and convolutions use
  TF32 on a CUDA device (the same 19-bit operands) and is ignored elsewhere.
- `ExecutionDescriptor` (for `Graph.run`): `scheduledHandler(results, error)` and
  `completionHandler(results, error)` are called, in that order, with the results dict once
  the run has finished; `compilationDescriptor` is used to compile.
- `ExecutableExecutionDescriptor` (for `Executable.run`): the same handlers with the list of
  results.

Accepted and IGNORED (they steer Metal, which is not here): `optimizationLevel`,
`optimizationProfile`, `waitForCompilationCompletion` (compiling always blocks),
`dispatchQueue`, `waitUntilCompleted` (every run is synchronous, as Apple's with True),
`disableTypeInference()`, `convertLayoutToNHWC()`, `waitForEvent` / `signalEvent`, the other
`reducedPrecisionFastMath` flags, and the serialization descriptor's `deploymentPlatform` and
`minimumDeploymentTarget` (a package runs on every backend). `append=True` is refused by
`serialize` (an mpsgraph package holds one executable).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag
from typing import Any

from ..descriptors import Descriptor
from ..errors import DescriptorError

__all__ = ["Optimization", "OptimizationProfile", "ReducedPrecisionFastMath",
           "DeploymentPlatform", "ExecutionStage", "CompilationDescriptor",
           "ExecutionDescriptor", "ExecutableExecutionDescriptor",
           "ExecutableSerializationDescriptor"]


class Optimization(IntEnum):
    """`MPSGraphOptimization`."""
    level0 = 0
    level1 = 1


class OptimizationProfile(IntEnum):
    """`MPSGraphOptimizationProfile` (deprecated by Apple)."""
    performance = 0
    powerEfficiency = 1


class ReducedPrecisionFastMath(IntFlag):
    """`MPSGraphReducedPrecisionFastMath` (an option set)."""
    none = 0
    allowFP16Conv2DWinogradTransformIntermediate = 1 << 1
    allowConvertingOperandsFromFP32ToFP19 = 1 << 2
    allowFP16Intermediates = 1 << 1
    default = 0


class DeploymentPlatform(IntEnum):
    """`MPSGraphDeploymentPlatform`."""
    macOS = 0
    IOS = 1
    tvOS = 2
    visionOS = 3


class ExecutionStage(IntEnum):
    """`MPSGraphExecutionStage`."""
    completed = 0


def _check(cls_name: str, prop: str, value: Any, ok: bool, expected: str) -> None:
    if not ok:
        raise DescriptorError(f"{cls_name}: property '{prop}': expected {expected}, given "
                              f"{value!r}")


def _handler(cls_name: str, prop: str, value: Any) -> None:
    _check(cls_name, prop, value, value is None or callable(value), "a callable or None")


class _Events:
    """`waitForEvent(_:value:)` and `signalEvent(_:atExecutionEvent:value:)`: accepted and
    recorded, ignored (no MTLSharedEvent here)."""

    def waitForEvent(self, event: Any, value: int) -> None:
        self._events.append(("wait", event, value))

    def wait(self, event: Any, value: int) -> None:  # Swift wait(for:value:)
        self.waitForEvent(event, value)

    def signalEvent(self, event: Any, atExecutionEvent: ExecutionStage = ExecutionStage.completed,
                    value: int = 0) -> None:
        self._events.append(("signal", event, int(atExecutionEvent), value))

    def signal(self, event: Any, atExecutionEvent: ExecutionStage = ExecutionStage.completed,
               value: int = 0) -> None:  # Swift signal(_:atExecutionEvent:value:)
        self.signalEvent(event, atExecutionEvent, value)


@dataclass
class CompilationDescriptor(Descriptor):
    """`MPSGraphCompilationDescriptor`: `Graph.compile(..., compilationDescriptor=)`."""

    optimizationLevel: Optimization = Optimization.level1
    optimizationProfile: OptimizationProfile = OptimizationProfile.performance
    waitForCompilationCompletion: bool = False
    compilationCompletionHandler: Callable[..., Any] | None = None
    dispatchQueue: Any = None
    callables: dict[str, Any] | None = None
    reducedPrecisionFastMath: ReducedPrecisionFastMath = ReducedPrecisionFastMath.none
    _typeInferenceDisabled: bool = field(default=False, repr=False)
    _layoutNHWC: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        n = type(self).__name__
        for p, enum in (("optimizationLevel", Optimization),
                        ("optimizationProfile", OptimizationProfile)):
            v = getattr(self, p)
            _check(n, p, v, isinstance(v, int) and not isinstance(v, bool)
                   and v in {int(m) for m in enum}, f"a {enum.__name__}")
        v = self.reducedPrecisionFastMath
        _check(n, "reducedPrecisionFastMath", v, isinstance(v, int) and not isinstance(v, bool)
               and v >= 0, "a ReducedPrecisionFastMath")
        _check(n, "waitForCompilationCompletion", self.waitForCompilationCompletion,
               isinstance(self.waitForCompilationCompletion, bool), "a bool")
        _handler(n, "compilationCompletionHandler", self.compilationCompletionHandler)
        c = self.callables
        _check(n, "callables", c, c is None or (isinstance(c, dict) and all(
            isinstance(k, str) for k in c)), "a dict {symbolName: Executable} or None")

    def disableTypeInference(self) -> None:
        """Accepted, ignored (types are always inferred here)."""
        self._typeInferenceDisabled = True

    def convertLayoutToNHWC(self) -> None:
        """Accepted, ignored (layouts are the ops' own)."""
        self._layoutNHWC = True

    @property
    def allows_tf32(self) -> bool:
        return bool(int(self.reducedPrecisionFastMath)
                    & ReducedPrecisionFastMath.allowConvertingOperandsFromFP32ToFP19)


@dataclass
class ExecutionDescriptor(_Events, Descriptor):
    """`MPSGraphExecutionDescriptor`: `Graph.run(..., executionDescriptor=)`."""

    completionHandler: Callable[..., Any] | None = None
    scheduledHandler: Callable[..., Any] | None = None
    waitUntilCompleted: bool = False
    compilationDescriptor: CompilationDescriptor | None = None
    _events: list = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        n = type(self).__name__
        _handler(n, "completionHandler", self.completionHandler)
        _handler(n, "scheduledHandler", self.scheduledHandler)
        _check(n, "waitUntilCompleted", self.waitUntilCompleted,
               isinstance(self.waitUntilCompleted, bool), "a bool")
        cd = self.compilationDescriptor
        _check(n, "compilationDescriptor", cd, cd is None or isinstance(
            cd, CompilationDescriptor), "a CompilationDescriptor or None")


@dataclass
class ExecutableExecutionDescriptor(_Events, Descriptor):
    """`MPSGraphExecutableExecutionDescriptor`: `Executable.run(..., executionDescriptor=)`."""

    completionHandler: Callable[..., Any] | None = None
    scheduledHandler: Callable[..., Any] | None = None
    waitUntilCompleted: bool = False
    _events: list = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        n = type(self).__name__
        _handler(n, "completionHandler", self.completionHandler)
        _handler(n, "scheduledHandler", self.scheduledHandler)
        _check(n, "waitUntilCompleted", self.waitUntilCompleted,
               isinstance(self.waitUntilCompleted, bool), "a bool")


@dataclass
class ExecutableSerializationDescriptor(Descriptor):
    """`MPSGraphExecutableSerializationDescriptor`: `Executable.serialize(..., descriptor=)`."""

    append: bool = False
    deploymentPlatform: DeploymentPlatform = DeploymentPlatform.macOS
    minimumDeploymentTarget: str = ""

    def __post_init__(self) -> None:
        n = type(self).__name__
        _check(n, "append", self.append, isinstance(self.append, bool), "a bool")
        _check(n, "deploymentPlatform", self.deploymentPlatform,
               isinstance(self.deploymentPlatform, int)
               and self.deploymentPlatform in {int(m) for m in DeploymentPlatform},
               "a DeploymentPlatform")
        _check(n, "minimumDeploymentTarget", self.minimumDeploymentTarget,
               isinstance(self.minimumDeploymentTarget, str), "a str")


def check_descriptor(where: str, argument: str, value: Any, cls: type) -> Any:
    """`value` (None or an instance of `cls`, re-validated: attributes may have changed)."""
    if value is None:
        return None
    if not isinstance(value, cls):
        raise DescriptorError(f"{where}: argument '{argument}': expected a {cls.__name__} or "
                              f"None, given {type(value).__name__}")
    validate = getattr(value, "validate", None)
    if validate is not None:
        validate()
    return value
