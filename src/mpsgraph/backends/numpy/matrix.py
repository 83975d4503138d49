"""NumPy kernel of the matrix family: `numpy.matmul` (BLAS sgemm per matrix for float32;
half types are widened to float32, multiplied, and rounded once)."""

from __future__ import annotations

import numpy as np

from . import kernel
from .arithmetic import finish, work


@kernel("matrixMultiplication")
def matrixMultiplication(a: np.ndarray, b: np.ndarray, attrs: None) -> np.ndarray:
    return finish(np.matmul(work(a), work(b)), a.dtype)
