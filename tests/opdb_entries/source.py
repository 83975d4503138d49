"""Entries of the source ops (graph.py): constant, variable, read, assign.

`constant` and `variable` take their data as sample kwargs in every form the builder accepts
(a NumPy array whose dtype gives the dataType, an array of another dtype cast to `dataType`, a
nested list, a Python scalar of shape [] or filling `shape`, an array reshaped to `shape`,
little-endian bytes with shape and dataType, a torch tensor through DLPack); the reference
rebuilds the value from the definition in docs/semantics.md ("The graph model"). The data
holds NaN, infinities and -0.0 for the float types: the NaN test of tests/test_opdb.py has no
input to poison for these ops, so the samples carry their own.

`read` reads a variable made from sample kwargs (once, twice, or after a run that assigned
it); `assign` runs through OpInfo.run: one run with the assign(s) as targetOperations that also
reads the variable (SPEC 1.6: a read sees the value at the start of the run), then a run that
reads it again (the committed value; of several targeted assigns the last in
targetOperations order wins)."""

from __future__ import annotations

import numpy as np

from opdb import (
    ALL,
    DT,
    ErrorInput,
    OpInfo,
    Sample,
    add,
    arr,
    is_float,
    n_samples,
    np_dtype,
    shape,
)

from ._common import mg_module as _mg
from ._common import ref_value as _val


def _data(rng, dt, shp):
    """Random data of `dt` with NaN, +-inf and -0.0 mixed into floats."""
    a = np.array(arr(rng, shp, dt))  # (arr gives NumPy scalars for shape ())
    if is_float(a) and a.size:
        flat = a.reshape(-1)
        for v in (np.nan, np.inf, -np.inf, -0.0):
            if rng.random() < 0.5:
                flat[int(rng.integers(a.size))] = v
    return a


_FORMS = ("array", "list", "bytes", "scalar", "fill", "reshape", "cast", "torch")


def _torch_ok(dt: DT) -> bool:
    # torch.from_numpy takes neither ml_dtypes' bfloat16 nor the wide unsigned types
    return dt not in (DT.bFloat16, DT.uInt16, DT.uInt32, DT.uInt64)


def _value_samples(rng, dt):
    """(kwargs of constant/variable, expected array) in each form of the builder."""
    forms = [f for f in _FORMS if f != "torch" or _torch_ok(dt)]
    for k in range(max(n_samples(), len(forms))):
        form = forms[k % len(forms)]
        shp = shape(rng)
        a = _data(rng, dt, shp)
        kw = {"form": form, "dt": dt}
        if form == "array":
            kw.update(value=a)
        elif form == "list":
            kw.update(value=a.tolist(), dataType=dt)
        elif form == "bytes":
            kw.update(value=a.astype(a.dtype.newbyteorder("<")).tobytes(), shape=list(shp),
                      dataType=dt)
        elif form == "scalar":
            a = _data(rng, dt, ())
            kw.update(value=a.item(), dataType=dt)
        elif form == "fill":
            a = _data(rng, dt, ())
            kw.update(value=a.item(), shape=list(shp), dataType=dt)
        elif form == "reshape":  # the data's count, another shape
            flat = a.reshape(-1)
            kw.update(value=flat, shape=list(shp))
        elif form == "cast":  # the same (exact) values in another dtype, cast to dataType
            src = np.float64 if is_float(a) else np.int8 if dt == DT.bool else np.int64
            kw.update(value=np.asarray(_val(a)).astype(src), dataType=dt)
        elif form == "torch":
            kw.update(value=a, dataType=dt)  # made a torch tensor at build time
        yield Sample([], kw)


def _value(form, value, dt, shape=None, dataType=None):
    """What constant / variable hold: the definition (docs/semantics.md)."""
    npdt = np_dtype(dt)
    if form == "bytes":
        out = np.frombuffer(value, dtype=npdt.newbyteorder("<")).astype(npdt).reshape(shape)
    elif form == "fill":
        out = np.full(shape, value, dtype=npdt)
    elif form in ("scalar", "list", "cast"):
        out = np.array(value, dtype=npdt)
    else:
        out = np.array(value).reshape(shape if shape is not None else np.shape(value))
    return _val(out)


def _make(g, method, form, value, dt, shape=None, dataType=None):
    if form == "torch":
        import torch

        value = torch.from_numpy(np.array(value))
    kw = {}
    if shape is not None:
        kw["shape"] = shape
    if dataType is not None:
        kw["dataType"] = dataType
    return getattr(g, method)(value, **kw)


def _source_errors(method):
    def gen(rng):
        mg = _mg()
        E = ErrorInput
        ok = {"form": "error", "dt": DT.float32}
        yield E(Sample([], {**ok, "value": b"\0" * 7, "shape": [2], "dataType": DT.float32}),
                mg.ShapeError, "data")
        yield E(Sample([], {**ok, "value": b"\0" * 8, "dataType": DT.float32}), mg.ShapeError,
                "shape")
        yield E(Sample([], {**ok, "value": [1.0, 2.0]}), mg.DataTypeError, "dataType")
        yield E(Sample([], {**ok, "value": 1.0}), mg.DataTypeError, "dataType")
        yield E(Sample([], {**ok, "value": ["a", "b"], "dataType": DT.float32}),
                mg.DataTypeError, "data")
        yield E(Sample([], {**ok, "value": [[1, 2], [3]], "dataType": DT.float32}),
                mg.DataTypeError, "data")
        yield E(Sample([], {**ok, "value": np.ones(6, np.float32), "shape": [4, 2]}),
                mg.ShapeError, "shape")
        yield E(Sample([], {**ok, "value": 1.0, "shape": [2, -1], "dataType": DT.float32}),
                mg.ShapeError, "shape")
        yield E(Sample([], {**ok, "value": 1.0, "shape": "ab", "dataType": DT.float32}),
                mg.ShapeError, "shape")
        for bad in (DT.invalid, DT.unorm8, DT.complexFloat16, "float32", True):
            yield E(Sample([], {**ok, "value": 1.0, "dataType": bad}), mg.DataTypeError,
                    "dataType")
        yield E(Sample([], {**ok, "value": np.ones(2, np.float64)}), mg.DataTypeError,
                "dataType")
        yield E(Sample([], {**ok, "value": 1.0, "dataType": DT.float32, "name": 3}),
                mg.GraphError, "name")
    return gen


def _source_build(method):
    def build(g, form, value, dt, shape=None, dataType=None, name=None):
        if form == "error":
            kw = {k: v for k, v in (("shape", shape), ("dataType", dataType), ("name", name))
                  if v is not None}
            return getattr(g, method)(value, **kw)
        return _make(g, method, form, value, dt, shape, dataType)
    return build


def _source_ref(form, value, dt, shape=None, dataType=None, name=None):
    return _value(form, value, dt, shape, dataType)


for _method in ("constant", "variable"):
    add(OpInfo(_method, build=_source_build(_method), ref=_source_ref, samples=_value_samples,
               dtypes=ALL, errors=_source_errors(_method),
               notes="no inputs: the data are sample kwargs in each form of the builder"))


# ---------------------------------------------------------------------------- read
def _read_samples(rng, dt):
    forms = ("once", "twice", "alias", "after_assign")
    for k in range(n_samples()):
        a = _data(rng, dt, shape(rng))
        kw = {"data": a, "form": forms[k % len(forms)]}
        if kw["form"] == "after_assign":
            kw["new"] = _data(rng, dt, a.shape)
        yield Sample([], kw)


def _devices() -> list[str]:
    try:
        import torch
    except ImportError:
        return ["cpu"]
    return ["cpu", "torch-cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _read_build(g, data, form, new=None):
    dt = DT.from_numpy(np.asarray(data).dtype)
    if form == "not_variable":
        return g.read(g.constant(data))
    v = g.variable(data, dataType=dt)
    if form == "once":
        return g.read(v)
    if form == "alias":
        return g.readVariable(v, name="r")
    if form == "twice":
        return [g.read(v), g.read(v)]
    if form == "after_assign":
        # a run that commits `new` first, on every device present (a variable's state is
        # per device): then the read sees it wherever the graph runs
        op = g.assign(v, g.constant(new))
        for dev in _devices():
            g.run({}, [], targetOperations=[op], device=dev)
        return g.read(v)
    raise AssertionError(form)


def _read_ref(data, form, new=None):
    if form == "twice":
        return [_val(data), _val(data)]
    return _val(new if form == "after_assign" else data)


def _read_errors(rng):
    mg = _mg()
    yield ErrorInput(Sample([], {"data": np.ones(2, np.float32), "form": "not_variable"}),
                     mg.GraphError, "variable")


add(OpInfo("read", build=_read_build, ref=_read_ref, samples=_read_samples, dtypes=ALL,
           errors=_read_errors,
           notes="the variable's data are sample kwargs; after_assign reads a committed value"))


# ---------------------------------------------------------------------------- assign
def _assign_samples(rng, dt):
    forms = ("once", "last_wins", "alias", "first_of_two", "self_reversed")
    for k in range(max(n_samples(), len(forms))):
        form = forms[k % len(forms)]
        shp = shape(rng)
        n = {"last_wins": 2, "first_of_two": 2, "self_reversed": 0}.get(form, 1)
        yield Sample([_data(rng, dt, shp)] + [_data(rng, dt, shp) for _ in range(n)],
                     {"form": form})


_BIG = 2**31 - 1


def _run_assign(device, s, inputs):
    """[the variable read in the assigning run (its old value), read in the next run]."""
    mg = _mg()
    form = s.kwargs["form"]
    g = mg.Graph()
    dt = DT.from_numpy(s.inputs[0].dtype)
    if form == "not_variable":
        target = g.placeholder(list(s.inputs[0].shape), dt)
    else:
        target = g.variable(inputs[0], dataType=dt)
    phs = [g.placeholder(list(a.shape), DT.from_numpy(a.dtype)) for a in s.inputs[1:]]
    if form == "alias":
        ops = [g.assignVariable(target, withValueOfTensor=phs[0], name="a")]
    elif form == "self_reversed":  # a value that views the storage it overwrites
        r = len(s.inputs[0].shape)
        rev = g.sliceTensor(g.read(target), starts=[-1] * r, ends=[-_BIG] * r,
                            strides=[-1] * r)
        ops = [g.assign(target, rev)]
    else:
        ops = [g.assign(target, p) for p in phs]
    if form == "first_of_two":
        ops = ops[::-1]  # targetOperations order decides: the first placeholder's value wins
    r = g.read(target)
    feeds = dict(zip(phs, inputs[1:]))
    old = g.run(feeds, [r], targetOperations=ops, device=device)[r].numpy()
    new = g.run({}, [r], device=device)[r].numpy()
    return [old, new]


def _assign_ref(init, *values, form):
    if form == "self_reversed":
        return [_val(init), _val(init)[(slice(None, None, -1),) * init.ndim]]
    new = values[0] if form == "first_of_two" else values[-1]
    return [_val(init), _val(new)]


def _assign_errors(rng):
    mg = _mg()
    f32 = np.ones((2, 3), np.float32)
    E = ErrorInput
    yield E(Sample([f32, np.ones((2, 3), np.float16)], {"form": "once"}), mg.DataTypeError,
            "tensor")
    yield E(Sample([f32, np.ones((2, 3), np.int32)], {"form": "alias"}), mg.DataTypeError,
            "tensor")
    yield E(Sample([f32, np.ones((3, 2), np.float32)], {"form": "once"}), mg.ShapeError,
            "tensor")
    yield E(Sample([f32, np.ones((2, 3, 1), np.float32)], {"form": "once"}), mg.ShapeError,
            "tensor")
    yield E(Sample([f32, np.ones((2, 3), np.float32)], {"form": "not_variable"}),
            mg.GraphError, "variable")


add(OpInfo("assign", build=lambda g, *xs, form: None, ref=_assign_ref,
           samples=_assign_samples, dtypes=ALL, run=_run_assign, errors=_assign_errors,
           notes="run: [the value read while assigning (the old one), the value after]"))
