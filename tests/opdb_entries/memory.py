"""Entries of the MemoryOps added by issue 17 (graph.py): variableFromTensor. (complexConstant
makes a `constant` op: tests/ops/test_random.py checks it.)

variableFromTensor(t) runs through OpInfo.run: a variable initialised from the value of a
tensor computed from the fed input (the input itself, negated for numbers) is read in a first
run, then read again in a second run fed other data, then assigned and read: the reference
(SPEC 1.6) is the first run's value twice (the initial value is taken once), then the assigned
value."""

from __future__ import annotations

import numpy as np

from opdb import ALL, OpInfo, Sample, add, arr, n_samples, shape

from ._common import host
from ._common import mg_module as _mg


def _build(g, x):
    return g.variableFromTensor(x)


def _init_of(g, x):
    mg = _mg()
    return g.negative(x) if x.dataType not in (mg.bool,) and x.dataType.name[0] != "u" else x


def _run(device, s, inputs):
    mg = _mg()
    g = mg.Graph()
    a = host(inputs[0])
    x = g.placeholder(list(a.shape), mg.DataType.from_numpy(a.dtype))
    v = g.variableFromTensor(_init_of(g, x))
    r = g.read(v)
    first = g.run({x: inputs[0]}, [v, r], device=device)
    other = host(inputs[1])
    second = g.run({x: other}, [r], device=device)[r].numpy()
    w = g.assign(v, g.placeholder(list(a.shape), mg.DataType.from_numpy(a.dtype)))
    val = w.inputTensors[1]
    g.run({x: other, val: other}, [], [w], device=device)
    third = g.run({x: other}, [r], device=device)[r].numpy()
    return [first[v].numpy(), first[r].numpy(), second, third]


def _ref(x, y):
    x = np.asarray(x)
    init = -x if x.dtype.kind in "fic" or x.dtype.name == "bfloat16" else x
    init = np.asarray(init, x.dtype)
    return [init, init, init, np.asarray(y)]


def _samples(rng, dt):
    for _ in range(n_samples()):
        shp = shape(rng)
        yield Sample([arr(rng, shp, dt), arr(rng, shp, dt)])


add(OpInfo("variableFromTensor", build=_build, ref=_ref, samples=_samples, dtypes=ALL,
           run=_run, nan=False, broadcast_ok=False))
