"""`Executable.run`'s per-call path (runtime/executable.py, the backends' `feeds_converter` and
kernel choice by compiled input dtypes): every check it had still holds on the lean path, the
results match independent references, and the CUDA-graph auto mode hands over to op by op.
(Timing is benchmarks/run_overhead.py's business: no timed test here.)"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES

DT = mg.DataType
F32 = DT.float32


def _add_exe(device, shape=(2, 3)):
    g = mg.Graph()
    x = g.placeholder(list(shape), F32, name="x")
    y = g.placeholder(list(shape), F32, name="y")
    z = g.addition(x, y, name="z")
    return g.compile({x: x.shapedType, y: y.shapedType}, [z], device=device)


def _arrays(device, *arrays):
    """The arrays as the device's raw kind (ndarray on cpu, torch tensors elsewhere)."""
    if device == "cpu":
        return list(arrays)
    import torch

    return [torch.from_numpy(np.ascontiguousarray(a)).to(
        "cuda" if device == "cuda" else "cpu") for a in arrays]


@pytest.mark.parametrize("device", DEVICES)
def test_every_kind_of_feed_gives_the_reference_result(device, rng):
    exe = _add_exe(device)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((2, 3)).astype(np.float32)
    want = a.astype(np.float64) + b.astype(np.float64)
    raw = _arrays(device, a, b)
    kinds = [raw, tuple(raw), [mg.TensorData(r, device=device) for r in raw], [a, b],
             [a.tolist(), b.tolist()], [mg.TensorData(a), mg.TensorData(b)]]  # host TensorData
    if device != "cpu":
        import torch

        kinds.append([r.clone().requires_grad_(True) for r in raw])
        kinds.append([torch.from_numpy(np.asfortranarray(a)).to(raw[0].device),  # strided
                      raw[1]])
    for inputs in kinds:
        for _ in range(2):  # the second run reuses the first's plan
            (res,) = exe.run(inputs)
            assert isinstance(res, mg.TensorData) and res.dataType == F32
            assert res.shape == [2, 3] and res.device == mg.Device(device)
            np.testing.assert_allclose(res.numpy().astype(np.float64), want, rtol=1e-6,
                                       atol=1e-6)
    if device != "cpu":
        assert not exe.run(kinds[-2])[0].array.requires_grad  # fed detached


@pytest.mark.parametrize("device", DEVICES)
def test_wrong_feeds_still_raise_a_feed_error(device):
    exe = _add_exe(device)
    ok = np.ones((2, 3), np.float32)
    raw = _arrays(device, ok, ok)
    bad_shape = _arrays(device, np.ones((3, 2), np.float32))[0]
    bad_dtype = _arrays(device, np.ones((2, 3), np.float64))[0]
    with pytest.raises(mg.FeedError, match=r"feeds\[x\]': expected shape \[2, 3\]"):
        exe.run([bad_shape, raw[1]])
    with pytest.raises(mg.FeedError, match=r"feeds\[y\]': expected shape \[2, 3\].*given \[1\]"):
        exe.run([raw[0], _arrays(device, np.ones(1, np.float32))[0]])
    with pytest.raises(mg.FeedError, match=r"feeds\[y\]': expected DataType.float32 data"):
        exe.run([raw[0], bad_dtype])
    half = mg.TensorData(np.ones((2, 3), np.float16), device=device)
    with pytest.raises(mg.FeedError, match=r"feeds\[x\]'.*float16 data"):
        exe.run([half, raw[1]])
    with pytest.raises(mg.FeedError, match="expected 2 values"):
        exe.run([raw[0]])
    with pytest.raises(mg.FeedError, match="argument 'inputs'"):
        exe.run({0: raw[0], 1: raw[1]})
    with pytest.raises(mg.FeedError, match="argument 'inputs'"):
        exe.run(raw[0] if device == "cpu" else 3)
    assert exe.run(raw)[0].shape == [2, 3]  # and it still runs after the errors


@pytest.mark.parametrize("device", DEVICES)
def test_tensordata_of_another_datatype_is_refused_even_with_the_same_storage(device):
    """int4 lives in int8 storage on torch: an int4 TensorData fed for an int8 placeholder is
    refused (it was accepted on torch devices before the feed checks were redone)."""
    g = mg.Graph()
    x = g.placeholder([3], DT.int8, name="x")
    y = g.identity(x)
    exe = g.compile({x: x.shapedType}, [y], device=device)
    td = mg.TensorData(np.array([1, -2, 7], ml_dtypes.int4), device=device)
    with pytest.raises(mg.FeedError, match=r"feeds\[x\]': expected DataType.int8 data"):
        exe.run([td])
    ok = mg.TensorData(np.array([1, -2, 7], np.int8), device=device)
    np.testing.assert_array_equal(exe.run([ok])[0].numpy(), [1, -2, 7])


@pytest.mark.parametrize("device", DEVICES)
def test_plans_with_constants_variables_absent_inputs_and_several_results(device, rng):
    """The stateful tail (a constant target is a copy, assigns commit), an op with an absent
    optional input, a multi-output op and several targets, against float64 NumPy."""
    g = mg.Graph()
    x = g.placeholder([2, 3], F32, name="x")
    c = g.constant(np.arange(6, dtype=np.float32).reshape(2, 3), dataType=F32)
    v = g.variable(np.zeros((2, 3), np.float32), [2, 3], F32, name="v")
    s = g.addition(x, c)
    inc = g.assign(v, g.addition(g.read(v), s))
    parts = g.split(s, numSplits=3, axis=1)
    exe = g.compile({x: x.shapedType}, [s, c, parts[2], g.read(v)], [inc], device=device)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    want_s = a.astype(np.float64) + np.arange(6).reshape(2, 3)
    total = np.zeros((2, 3))
    for _ in range(3):
        rs, rc, rp, rv = (r.numpy() for r in exe.run(_arrays(device, a)))
        np.testing.assert_allclose(rs, want_s, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(rc, np.arange(6).reshape(2, 3))
        np.testing.assert_allclose(rp, want_s[:, 2:], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(rv, total, rtol=1e-6, atol=1e-6)  # read before the assign
        total = total + want_s
        if rc.flags.writeable:  # writing into a result (the NumPy backend's is read-only) ...
            rc[...] = -1
    np.testing.assert_array_equal(exe.run(_arrays(device, a))[1].numpy(),
                                  np.arange(6).reshape(2, 3))  # ... never changes the constant

    # an op with an absent optional input (leakyReLU with a number: no alphaTensor) reads
    # the plan's spare None slot; next to a multi-output op (split) and a reduction
    g = mg.Graph()
    x = g.placeholder([4, 6], F32, name="x")
    lr = g.leakyReLU(x, alpha=0.25)
    halves = g.split(lr, numSplits=2, axis=1)
    total = g.reductionSum(halves[1], axes=[0, 1])
    exe = g.compile({x: x.shapedType}, [halves[0], total], device=device)
    xv = rng.standard_normal((4, 6)).astype(np.float32)
    x64 = xv.astype(np.float64)
    want = np.where(x64 >= 0, x64, 0.25 * x64)
    for _ in range(2):
        r0, r1 = (r.numpy() for r in exe.run(_arrays(device, xv)))
        np.testing.assert_allclose(r0, want[:, :3], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(r1.reshape(()), want[:, 3:].sum(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("graph_wins", [False, True])
def test_auto_replay_hands_over_to_op_by_op_and_stops_timing_once_decided(graph_wins):
    """The automatic CUDA-graph mode calls `on_eager` once op by op has won (the executable
    then calls op by op directly), and once the graph has won replays it with no timing."""
    from mpsgraph.runtime import executable as ex

    calls, syncs, handed = [], [], []

    def slow_if(loser):  # the losing way "takes" two more ticks of the fake clock
        if loser:
            ex.time.perf_counter(), ex.time.perf_counter()

    def eager(feeds):
        calls.append("eager")
        slow_if(graph_wins)
        return ["e"]

    def replayer(feeds, bindable):
        calls.append("graph")
        slow_if(not graph_wins)
        return ["g"]

    auto = ex._AutoReplay(replayer, eager, ex._Calibration(lambda: syncs.append(1)),
                          lambda: handed.append(1))
    clock = iter(range(10 ** 6))
    real = ex.time.perf_counter
    ex.time.perf_counter = lambda: float(next(clock))
    try:
        for _ in range(ex._Calibration.WARM + ex._Calibration.TIMED):
            auto([1])
        assert auto.calibration.decided == ("graph" if graph_wins else "eager")
        assert calls == ["eager", "graph"] * 5
        calls.clear()
        n_syncs = len(syncs)
        assert [auto([1]) for _ in range(3)] == [["g" if graph_wins else "e"]] * 3
    finally:
        ex.time.perf_counter = real
    assert calls == ["graph" if graph_wins else "eager"] * 3 and len(syncs) == n_syncs
    assert handed == ([] if graph_wins else [1])


def test_an_executable_switches_to_the_direct_path_when_op_by_op_wins():
    """`Executable.run` calls `_execute` itself once `on_eager` fired (no replay wrapper)."""
    from mpsgraph.runtime import executable as ex

    exe = _add_exe("cpu")
    assert exe._direct is ex.Executable._execute  # no CUDA graph here: always direct
    eager_calls = []

    def eager(feeds):
        eager_calls.append(1)
        return exe._execute(feeds)

    def replayer(feeds, bindable):
        raise RuntimeError("capture failed")

    exe._direct = None

    def on_eager():
        exe._direct = lambda self, feeds: eager(feeds)

    exe._replay = ex._AutoReplay(replayer, eager, ex._Calibration(lambda: None), on_eager)
    a = np.ones((2, 3), np.float32)
    exe.run([a, a])  # run 0: op by op, timed
    with pytest.warns(RuntimeWarning, match="capture failed"):
        exe.run([a, a])  # run 1: the capture fails: op by op for good
    assert exe._direct is not None
    exe._replay = None  # (never called again)
    np.testing.assert_array_equal(exe.run([a, a])[0].numpy(), 2 * a)
    assert len(eager_calls) == 3


# ---------------------------------------------------------------- kernels by compiled dtypes
def _torch_sample(torch, dtype, gen):
    if dtype == torch.bool:
        return torch.rand(2, 3, generator=gen) > 0.5
    if dtype.is_complex:
        return torch.complex(torch.randn(2, 3, generator=gen), torch.randn(2, 3, generator=gen))
    if dtype.is_floating_point:
        x = torch.randn(2, 3, generator=gen) * 3
        x[0, 0] = 0.0
        return x.to(dtype)
    lo = 0 if dtype in (torch.uint8, torch.uint16, torch.uint32, torch.uint64) else -5
    x = torch.randint(lo, 6, (2, 3), generator=gen)
    x[0, 0] = 0
    return x.to(dtype)


def _elementwise_rows():
    from mpsgraph.ops.arithmetic import ELEMENTWISE

    return sorted(ELEMENTWISE)


@pytest.mark.parametrize("kind", _elementwise_rows())
def test_kernels_chosen_for_the_compiled_dtypes_compute_the_same(kind):
    """For every elementwise row and dtype: the kernel the torch backend picks for those input
    dtypes gives exactly the generic kernel's result (bit for bit, NaN where it has NaN); the
    generic kernel is checked against float64 references by the op database's tests."""
    torch = pytest.importorskip("torch")
    from mpsgraph.backends.torch import KERNELS, TORCH_DTYPES, Backend
    from mpsgraph.ops.arithmetic import ELEMENTWISE

    row = ELEMENTWISE[kind]
    be = Backend.for_device(mg.Device("torch-cpu"))
    gen = torch.Generator().manual_seed(0)
    generic = KERNELS[kind]
    for dt in row.dtypes:
        if dt not in TORCH_DTYPES:
            continue
        in_dts = [DT.bool if kind == "select" and i == 0 else dt for i in range(len(row.args))]
        types = [mg.ShapedType([2, 3], d) for d in in_dts]
        xs = [_torch_sample(torch, TORCH_DTYPES[d], gen) for d in in_dts]
        try:
            want = generic(*xs, None)
        except (RuntimeError, TypeError, NotImplementedError):
            continue  # (a dtype this torch cannot compute: not the choice's business)
        got = be.kernel(kind, types)(*xs, None)
        assert got.dtype == want.dtype and got.shape == want.shape, (kind, dt)
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True,
                                   msg=f"{kind} {dt!r}")


def test_kernel_choice_keeps_the_host_wrapper_only_where_it_does_something():
    torch = pytest.importorskip("torch")
    from mpsgraph.backends.torch import KERNELS, Backend

    u32 = [mg.ShapedType([2], DT.uInt32)] * 2
    f32 = [mg.ShapedType([2], F32)] * 2
    wrapped = KERNELS["addition"]
    assert getattr(wrapped, "on_device", None) is not None
    cpu = Backend.for_device(mg.Device("torch-cpu"))
    gpu = Backend(torch.device("cuda", 0))  # (not run: only which function it picks)
    assert cpu.kernel("addition") is wrapped and gpu.kernel("addition") is wrapped
    assert getattr(cpu.kernel("addition", u32), "on_device", None) is None  # CPU: no wrapper
    assert gpu.kernel("addition", u32) is wrapped  # uint32 on a GPU: computed on the host
    assert getattr(gpu.kernel("addition", f32), "on_device", None) is None
    assert gpu.kernel("addition", [None, None]) is not None  # unknown dtypes: still a kernel
    a = torch.tensor([4294967295, 7], dtype=torch.uint32)
    b = torch.tensor([1, 2], dtype=torch.uint32)
    assert cpu.kernel("addition", u32)(a, b, None).tolist() == [0, 9]  # wraps modulo 2^32


@pytest.mark.parametrize("dtype", ["float32", "complex64", "float16", "bfloat16",
                                   "int32", "uint8"])
def test_matmul_chosen_for_the_compiled_dtypes_matches_float64(dtype):
    torch = pytest.importorskip("torch")
    from mpsgraph.backends.torch import DATA_TYPES, Backend

    tdt = getattr(torch, dtype)
    be = Backend.for_device(mg.Device("torch-cpu"))
    gen = torch.Generator().manual_seed(1)
    a, b = _torch_sample(torch, tdt, gen), _torch_sample(torch, tdt, gen).T.contiguous()
    types = [mg.ShapedType(list(t.shape), DATA_TYPES[tdt]) for t in (a, b)]
    got = be.kernel("matrixMultiplication", types)(a, b, None)
    assert got.dtype == tdt and list(got.shape) == [2, 2]
    if tdt.is_complex:
        want = a.to(torch.complex128) @ b.to(torch.complex128)
    elif tdt.is_floating_point:
        want = a.double() @ b.double()
    else:  # integers wrap in their own type
        want = (a.to(torch.int64) @ b.to(torch.int64)).to(tdt)
    tol = {"float16": 1e-2, "bfloat16": 5e-2}.get(dtype, 1e-6)
    torch.testing.assert_close(got.to(want.dtype), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_a_dropped_executable_is_freed_without_the_cycle_collector(device):
    """The run path holds no reference cycle through the executable: dropping the last
    reference frees it (and its device constants) at once."""
    import gc
    import weakref

    g = mg.Graph()
    x = g.placeholder([2], F32, name="x")
    y = g.addition(x, g.constant(np.ones(2, np.float32), dataType=F32))
    exe = g.compile({x: x.shapedType}, [y], device=device, cuda_graph=False) \
        if device == "cuda" else g.compile({x: x.shapedType}, [y], device=device)
    exe.run(_arrays(device, np.ones(2, np.float32)))
    ref = weakref.ref(exe)
    was = gc.isenabled()
    gc.disable()
    try:
        del exe
        assert ref() is None
    finally:
        if was:
            gc.enable()
