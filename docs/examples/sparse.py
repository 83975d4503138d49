"""Sparse: a [3, 4] matrix from COO and CSR storage (values [nnz], index tensors), densified."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
vals = g.constant(np.array([1, 2, 3], np.float32))
coo = g.sparseTensor(mg.CreateSparseOpDescriptor(mg.SparseStorageType.COO, mg.float32),
                     [vals, g.constant(np.array([0, 3, 1], np.int32)),         # x: column
                      g.constant(np.array([0, 0, 2], np.int32))], [3, 4])      # y: row
csr = g.sparseTensor(mg.SparseStorageType.CSR, [vals, g.constant(np.array([0, 3, 1], np.int32)),
                     g.constant(np.array([0, 2, 2, 3], np.int32))], [3, 4],   # rowStarts
                     dataType=mg.float32)
out = g.run(feeds={}, targetTensors=[coo, csr])
print("COO", out[coo].numpy().tolist())
print("CSR equal:", np.array_equal(out[coo].numpy(), out[csr].numpy()))
