"""Entry of sparseTensor (ops/sparse.py): COO, CSC and CSR matrices densified, against a
reference that loops over the stored values (duplicates of COO summed). Both Swift forms (a
CreateSparseOpDescriptor, or a SparseStorageType with dataType); nnz, rows and columns 0 and 1.
"""

from __future__ import annotations

import numpy as np

from opdb import DT, FLOAT, ErrorInput, OpInfo, Sample, add, arr, n_samples

from ._common import cycle, size
from ._common import mg_module as _mg

mg = _mg()
S = mg.SparseStorageType


def _ref(vals, **kw):
    i0, i1 = kw["i0"], kw["i1"]
    rows, cols = kw["shape"]
    out = np.zeros((rows, cols), np.float64 if vals.dtype.kind == "f" or
                   vals.dtype == DT.bFloat16.numpy_dtype else object)
    out[...] = 0
    v = vals.astype(np.float64) if out.dtype == np.float64 else vals.astype(object)
    for j in range(vals.shape[0]):
        if kw["storage"] == S.COO:
            r, c = int(i1[j]), int(i0[j])
        else:
            outer = int(np.searchsorted(i1, j, side="right") - 1)
            r, c = (int(i0[j]), outer) if kw["storage"] == S.CSC else (outer, int(i0[j]))
        out[r, c] += v[j]
    if out.dtype == object:  # integers wrap in their type
        bits = 8 * vals.dtype.itemsize
        lo = int(np.iinfo(vals.dtype).min)
        return np.array([[((int(t) - lo) % (1 << bits)) + lo for t in row] for row in out],
                        dtype=vals.dtype).reshape(rows, cols)
    return out


def _build(g, vals, *fed, **kw):
    # the indices are constants (the executable re-run shuffles fed inputs, which would break
    # the starts), or fed when the sample says so
    i0, i1 = fed if fed else (g.constant(kw["i0"]), g.constant(kw["i1"]))
    if kw["form"] == "descriptor":
        d = mg.CreateSparseOpDescriptor.descriptorWithStorageType(kw["storage"], kw["dataType"])
        return g.sparseTensor(d, tensors=[vals, i0, i1], shape=list(kw["shape"]))
    return g.sparseTensor(kw["storage"], tensors=[vals, i0, i1], shape=list(kw["shape"]),
                          dataType=kw["dataType"])


def _samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 2):
        storage = pick(k, "storage", list(S))
        rows, cols = size(rng, 0, 5), size(rng, 0, 5)
        nnz = 0 if rows * cols == 0 else size(rng, 0, 8)
        vals = arr(rng, (nnz,), dt)
        itype = np.int32 if rng.random() < 0.5 else np.int64
        if storage == S.COO:
            i0 = rng.integers(0, max(cols, 1), nnz)
            i1 = rng.integers(0, max(rows, 1), nnz)
        else:
            inner, outer = (rows, cols) if storage == S.CSC else (cols, rows)
            i0 = rng.integers(0, max(inner, 1), nnz)
            cuts = np.sort(rng.integers(0, nnz + 1, max(outer - 1, 0)))
            i1 = np.concatenate([[0], cuts, [nnz]]) if outer else np.array([nnz])
        kw = dict(storage=storage, shape=(rows, cols), dataType=dt,
                  form=pick(k, "form", ["descriptor", "type"]))
        kw.update(i0=i0.astype(itype), i1=i1.astype(itype))
        yield Sample([vals], kw, desc=storage.name)


def _err(vals, i0, i1, kw):
    return Sample([vals, i0, i1], dict(kw, i0=i0, i1=i1))


def _errors(rng):
    v = np.ones(2, np.float32)
    kw = dict(storage=S.COO, shape=(2, 3), dataType=DT.float32, form="type")
    yield ErrorInput(_err(v, np.array([0, 3], np.int32), np.array([0, 1], np.int32), kw),
                     mg.ShapeError, "indexTensor0")
    yield ErrorInput(_err(v, np.array([0, 1], np.int32), np.array([0, -1], np.int32), kw),
                     mg.ShapeError, "indexTensor1")
    yield ErrorInput(_err(v, np.array([0, 1], np.int32), np.array([0], np.int32), kw),
                     mg.ShapeError, "indexTensor1")
    yield ErrorInput(_err(v, np.array([0, 1], np.float32), np.array([0, 1], np.int32), kw),
                     mg.DataTypeError, "indexTensor0")
    yield ErrorInput(Sample([v.astype(np.float16), np.array([0, 1], np.int32),
                             np.array([0, 1], np.int32)], kw), mg.DataTypeError, "sparseVals")
    csr = dict(kw, storage=S.CSR)
    yield ErrorInput(_err(v, np.array([0, 1], np.int32), np.array([0, 2, 1], np.int32), csr),
                     mg.ShapeError, "indexTensor1")
    yield ErrorInput(_err(v, np.array([0, 1], np.int32), np.array([0, 1, 2, 2], np.int32),
                          csr), mg.ShapeError, "indexTensor1")


add(OpInfo("sparseTensor", build=_build, ref=_ref, samples=_samples,
           dtypes=FLOAT + (DT.int32, DT.int64, DT.int8), errors=_errors, views=True))
