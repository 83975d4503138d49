"""The op table and the NumPy backend list the same ops: every op a graph can hold has a
kernel (the source ops are executed by the executable itself), and no kernel is orphaned."""

from __future__ import annotations

import mpsgraph as mg
from mpsgraph.backends.numpy import KERNELS
from mpsgraph.ops._registry import OPS
from mpsgraph.runtime.executable import BOUND_KERNELS

# ... and the kinds whose kernel each executable builds (control flow: ops/control_flow.py)
SOURCE_OPS = {"placeholder", "constant", "variable", "variableFromTensor", "assign"} | set(
    BOUND_KERNELS)


def test_every_op_has_a_numpy_kernel_and_back():
    mg.Device("cpu").backend()  # imports every family's kernels
    assert set(OPS) - SOURCE_OPS == set(KERNELS), (
        f"ops without kernels: {sorted(set(OPS) - SOURCE_OPS - set(KERNELS))}; "
        f"kernels without ops: {sorted(set(KERNELS) - set(OPS))}")


def test_every_graph_method_builds_a_registered_op():
    # each family's mixin methods are Graph methods
    for name in ("convolution2D", "LSTM", "LSTMGradients", "addition", "reLU",
                 "matrixMultiplication", "reductionSum", "reshape", "softMaxCrossEntropy",
                 "maxPooling2D", "adam", "gradientForPrimaryTensor"):
        assert callable(getattr(mg.Graph, name))
