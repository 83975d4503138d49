"""The sparse family (Apple's MPSGraphSparseOps.h): sparseTensor, in both Swift forms
`sparseTensor(sparseTensorWithDescriptor:tensors:shape:name:)` and
`sparseTensor(sparseTensorWithType:tensors:shape:dataType:name:)`.

    tensors = [sparseVals [nnz], indexTensor0, indexTensor1]  ->  the matrix of `shape`
    [rows, columns] in `dataType`, DENSIFIED (mpsgraph has no sparse storage; every op takes the
    result as the dense matrix it represents).

Apple's index roles: COO: indexTensor0 is the x (column) index and indexTensor1 the y (row)
index, one per value; CSC: rowIndex [nnz] and colStarts [columns + 1]; CSR: colIndex [nnz] and
rowStarts [rows + 1]. Decisions (docs/semantics.md, "Resize, FFT, attention and quantization
decisions"): x is the column (MPSGraph's x is the fastest axis, as in strideInX), duplicate COO
coordinates are summed (scipy's todense), indices and starts are checked when the op runs (a
ShapeError naming the tensor), the values' dataType must equal `dataType`, and the op has no
gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..descriptors import CreateSparseOpDescriptor
from ..errors import DataTypeError, DescriptorError, GraphError, ShapeError, op_error
from ..types import DataType, ShapedType, SparseStorageType
from ._registry import InferContext, register_op

if TYPE_CHECKING:
    from ..graph import Tensor

__all__ = ["SparseOps", "SparseAttrs"]

_INDEX = (DataType.int32, DataType.int64)


@dataclass(frozen=True)
class SparseAttrs:
    storage: SparseStorageType
    shape: tuple[int, int]
    dataType: DataType
    name: str | None = None


def _infer(ctx: InferContext):
    a: SparseAttrs = ctx.attrs
    v = ctx.type_of("sparseVals")
    if v.dataType != a.dataType:
        raise ctx.error(DataTypeError, "sparseVals", f"{a.dataType!r} (the dataType)",
                        v.dataType)
    nnz = v.shape[0] if v.shape is not None and len(v.shape) == 1 else None
    if v.shape is not None and len(v.shape) != 1:
        raise ctx.error(ShapeError, "sparseVals", "a 1-D tensor [nnz]", f"shape {v.shape}")
    rows, cols = a.shape
    starts = {SparseStorageType.CSC: cols + 1, SparseStorageType.CSR: rows + 1}.get(a.storage)
    for arg, want in (("indexTensor0", nnz), ("indexTensor1",
                                               nnz if starts is None else starts)):
        t = ctx.type_of(arg)
        if t.dataType not in _INDEX:
            raise ctx.error(DataTypeError, arg, "an int32 or int64 tensor", t.dataType)
        if t.shape is not None and (len(t.shape) != 1 or (
                want is not None and want >= 0 and t.shape[0] >= 0 and t.shape[0] != want)):
            per = "column" if a.storage == SparseStorageType.CSC else "row"
            what = (f"[{want}] (one index per value)" if arg == "indexTensor0" or starts is None
                    else f"[{want}] (the starts: one per {per} and the end)")
            raise ctx.error(ShapeError, arg, f"a 1-D tensor {what}", f"shape {t.shape}")
    return [ShapedType(list(a.shape), a.dataType)], SparseAttrs(a.storage, a.shape, a.dataType,
                                                                ctx.name)


register_op("sparseTensor", _infer)


class SparseOps:
    """sparseTensor (mixed into `Graph`)."""

    def sparseTensor(self, sparseTensorWithDescriptor=None, tensors=None, shape=None, *,
                     dataType=None, sparseTensorWithType=None, name: str | None = None
                     ) -> Tensor:
        """The [rows, columns] matrix given by [sparseVals, indexTensor0, indexTensor1] in COO,
        CSC or CSR storage, densified. The first argument is a CreateSparseOpDescriptor, or a
        SparseStorageType together with `dataType=` (Swift `sparseTensorWithType:`)."""
        op = "sparseTensor"
        first = sparseTensorWithDescriptor if sparseTensorWithDescriptor is not None \
            else sparseTensorWithType
        if isinstance(first, CreateSparseOpDescriptor):
            if dataType is not None:
                raise op_error(GraphError, op, "dataType", "None with a descriptor (its "
                               "dataType is used)", dataType, name)
            storage, dataType, arg = first.sparseStorageType, first.dataType, "descriptor"
        else:
            storage, arg = first, "sparseTensorWithType"
        if isinstance(storage, (bool, np.bool_)) or not isinstance(storage, (int, np.integer)) \
                or int(storage) not in SparseStorageType._value2member_map_:
            raise op_error(DescriptorError, op, arg if arg != "descriptor" else
                           "descriptor.sparseStorageType", "a SparseStorageType (COO, CSC, CSR)",
                           storage, name)
        storage = SparseStorageType(int(storage))
        if not isinstance(dataType, DataType):
            raise op_error(DataTypeError, op, "dataType", "a DataType", dataType, name)
        if tensors is None or isinstance(tensors, (str, bytes)) or len(tensors) != 3:
            raise op_error(GraphError, op, "tensors", "[sparseVals, indexTensor0, "
                           "indexTensor1]", tensors, name)
        if shape is None or isinstance(shape, (str, bytes)) or len(shape) != 2 or not all(
                isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_))
                and s >= 0 for s in shape):
            raise op_error(ShapeError, op, "shape", "[rows, columns] (two ints >= 0)", shape,
                           name)
        attrs = SparseAttrs(storage, (int(shape[0]), int(shape[1])), dataType)
        return self._add(op, list(zip(("sparseVals", "indexTensor0", "indexTensor1"), tensors)),
                         attrs, name)[0]
