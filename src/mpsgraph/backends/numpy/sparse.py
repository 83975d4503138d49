"""NumPy kernel of sparseTensor (ops/sparse.py): checks the fed indices, then one scatter-add
(`np.add.at`) of the values into a zero matrix; CSR / CSC rows / columns come from the starts
by `np.repeat`."""

from __future__ import annotations

import numpy as np

from ...errors import ShapeError, op_error
from ...types import SparseStorageType as S
from . import kernel
from .arithmetic import finish, work


def coordinates(vals_n, i0, i1, a, xp=np):
    """(row, column) index arrays, after checking every index and start (ShapeError)."""
    rows, cols = a.shape

    def bad(arg, expected, given):
        return op_error(ShapeError, "sparseTensor", arg, expected, given, a.name)

    def check(idx, n, arg, what):
        if idx.shape[0] and bool(((idx < 0) | (idx >= n)).any()):
            raise bad(arg, f"{what} indices in [0, {n})", f"min {int(idx.min())}, max "
                      f"{int(idx.max())}")

    if a.storage == S.COO:
        check(i0, cols, "indexTensor0", "column (x)")
        check(i1, rows, "indexTensor1", "row (y)")
        return i1, i0
    inner, n_outer = (rows, cols) if a.storage == S.CSC else (cols, rows)
    check(i0, inner, "indexTensor0", "row" if a.storage == S.CSC else "column")
    st = i1
    d = st[1:] - st[:-1]
    if int(st[0]) != 0 or int(st[-1]) != vals_n or bool((d < 0).any()):
        raise bad("indexTensor1", f"starts from 0, non-decreasing, ending at nnz = {vals_n}",
                  [int(s) for s in st[:8]] + (["..."] if st.shape[0] > 8 else []))
    if xp is np:
        outer = np.repeat(np.arange(n_outer), d)
    else:
        outer = xp.repeat_interleave(xp.arange(n_outer, device=st.device), d)
    return (i0, outer) if a.storage == S.CSC else (outer, i0)


@kernel("sparseTensor")
def sparseTensor(vals, i0, i1, a):
    r, c = coordinates(vals.shape[0], i0.astype(np.int64), i1.astype(np.int64), a)
    w = work(vals)  # half types accumulate in float32 and round once
    out = np.zeros(a.shape, w.dtype)
    np.add.at(out, (r, c), w)
    return finish(out, vals.dtype)
