"""The `GraphError` tree and the one helper that formats every message.

Every message names the operation (and its `name=` if given), the argument, what was expected
and what was given::

    convolution2DWeightsGradient 'dw': argument 'outputShape': expected ..., given [4, 3, 3, 3]
"""

from __future__ import annotations

__all__ = [
    "GraphError",
    "ShapeError",
    "DataTypeError",
    "DescriptorError",
    "FeedError",
    "GraphMismatchError",
    "UnsupportedError",
    "op_error",
]


class GraphError(ValueError):
    """Base class of every misuse of the graph API (a ValueError)."""


class ShapeError(GraphError):
    """A shape (rank, size or consistency with other arguments) is wrong."""


class DataTypeError(GraphError):
    """A data type is not accepted, or two operands disagree."""


class DescriptorError(GraphError):
    """A descriptor property has a value the operation does not accept."""


class FeedError(GraphError):
    """A feed of `run` / `Executable.run` is missing, extra, or of the wrong shape or type."""


class GraphMismatchError(GraphError):
    """A tensor of another graph was used."""


class UnsupportedError(GraphError):
    """A valid MPSGraph request this implementation (or device) does not support."""


def _fmt(value: object) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return str(value)


def op_error(
    cls: type[GraphError],
    op: str,
    argument: str,
    expected: object,
    given: object,
    name: str | None = None,
) -> GraphError:
    """Build (not raise) a GraphError subclass with the project's message format."""
    who = f"{op} {name!r}" if name else op
    return cls(f"{who}: argument '{argument}': expected {_fmt(expected)}, given {_fmt(given)}")
