"""Compile and execution descriptors and mpsgraph packages (issue 17, item 4):
CompilationDescriptor / ExecutionDescriptor / ExecutableExecutionDescriptor /
ExecutableSerializationDescriptor with Apple's properties and defaults (MPSGRAPH_CLASSES.tsv),
accepted by compile, run and Executable.run; `Executable.serialize(package, descriptor)` and
`Executable(mpsgraphPackageAt=)`, round-tripped in a NEW process; corrupt and foreign packages
raise GraphError; loading never unpickles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES

F32 = mg.float32
CPU_DEVICES = [d for d in DEVICES if d.values[0] in ("cpu", "torch-cpu")]


def _present() -> list[str]:
    """The device names usable here (cuda only where a GPU is)."""
    names = [d.values[0] for d in DEVICES]
    if "cuda" in names:
        import torch

        if not torch.cuda.is_available():
            names.remove("cuda")
    return names
SRC = str(Path(mg.__file__).resolve().parents[1])


def _f(*xs):
    return np.array(xs, np.float32)


# ------------------------------------------------------------------------------ descriptors
def test_descriptor_defaults_are_apples():
    cd = mg.CompilationDescriptor()
    assert cd.optimizationLevel == mg.Optimization.level1
    assert cd.optimizationProfile == mg.OptimizationProfile.performance
    assert cd.waitForCompilationCompletion is False
    assert cd.compilationCompletionHandler is None and cd.dispatchQueue is None
    assert cd.callables is None
    assert cd.reducedPrecisionFastMath == mg.ReducedPrecisionFastMath.none
    cd.disableTypeInference()
    cd.convertLayoutToNHWC()
    for cls in (mg.ExecutionDescriptor, mg.ExecutableExecutionDescriptor):
        d = cls()
        assert d.waitUntilCompleted is False
        assert d.completionHandler is None and d.scheduledHandler is None
        d.waitForEvent(object(), 3)
        d.signalEvent(object(), atExecutionEvent=mg.ExecutionStage.completed, value=4)
    assert mg.ExecutionDescriptor().compilationDescriptor is None
    sd = mg.ExecutableSerializationDescriptor()
    assert sd.append is False and sd.deploymentPlatform == mg.DeploymentPlatform.macOS
    assert sd.minimumDeploymentTarget == ""


def test_descriptors_refuse_unknown_properties_and_bad_values():
    with pytest.raises(AttributeError, match="optimizationLevel"):
        mg.CompilationDescriptor(optimisationLevel=mg.Optimization.level0)
    d = mg.ExecutionDescriptor()
    with pytest.raises(mg.GraphError, match="waitUntilCompleted"):
        d.waitUntilComplete = True
    with pytest.raises(mg.DescriptorError, match="optimizationLevel"):
        mg.CompilationDescriptor(optimizationLevel=7)
    with pytest.raises(mg.DescriptorError, match="completionHandler"):
        mg.ExecutableExecutionDescriptor(completionHandler=3)
    g = mg.Graph()
    x = g.placeholder([2], F32)
    with pytest.raises(mg.DescriptorError, match="compilationDescriptor"):
        g.compile({x: mg.ShapedType([2], F32)}, [x], compilationDescriptor=mg.ExecutionDescriptor())
    with pytest.raises(mg.GraphError, match="options"):
        g.compile({x: mg.ShapedType([2], F32)}, [x], optimizationLevel=1)  # still refused
    with pytest.raises(TypeError):
        g.run({x: _f(1, 2)}, [x], compilationDescriptor=mg.CompilationDescriptor())
    cd = mg.CompilationDescriptor()
    cd.optimizationLevel = 9  # checked again where it is used
    with pytest.raises(mg.DescriptorError, match="optimizationLevel"):
        g.compile({x: mg.ShapedType([2], F32)}, [x], compilationDescriptor=cd)


@pytest.mark.parametrize("device", DEVICES)
def test_descriptors_are_accepted_and_handlers_called(device):
    g = mg.Graph()
    x = g.placeholder([2], F32)
    y = g.multiplication(x, x)
    seen = []
    cd = mg.CompilationDescriptor(
        optimizationLevel=mg.Optimization.level0, waitForCompilationCompletion=True,
        reducedPrecisionFastMath=mg.ReducedPrecisionFastMath.allowConvertingOperandsFromFP32ToFP19,
        compilationCompletionHandler=lambda exe, err: seen.append(("compiled", exe, err)))
    exe = g.compile({x: mg.ShapedType([2], F32)}, [y], device=device, compilationDescriptor=cd)
    assert seen == [("compiled", exe, None)]
    ed = mg.ExecutableExecutionDescriptor(
        waitUntilCompleted=True,
        scheduledHandler=lambda res, err: seen.append(("scheduled", res, err)),
        completionHandler=lambda res, err: seen.append(("completed", res, err)))
    out = exe.run([_f(2, 3)], executionDescriptor=ed)
    np.testing.assert_array_equal(out[0].numpy(), _f(4, 9))
    assert [s[0] for s in seen[1:]] == ["scheduled", "completed"]
    assert seen[2][1] is out and seen[2][2] is None
    got = []
    red = mg.ExecutionDescriptor(completionHandler=lambda res, err: got.append((res, err)),
                                 compilationDescriptor=mg.CompilationDescriptor())
    res = g.run({x: _f(1, 5)}, [y], device=device, executionDescriptor=red)
    np.testing.assert_array_equal(res[y].numpy(), _f(1, 25))
    assert got == [(res, None)]
    with pytest.raises(mg.DescriptorError, match="executionDescriptor"):
        exe.run([_f(2, 3)], executionDescriptor=red)  # the executable's kind is needed


# ------------------------------------------------------------------------------ packages
def _model():
    """A graph with a variable, control flow, an int8 and a bfloat16 constant, a descriptor op."""
    g = mg.Graph()
    x = g.placeholder([1, 1, 4, 4], F32, name="x")
    p = g.placeholder([], mg.bool, name="p")
    w = g.variable(np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3) / 10, name="w")
    d = mg.Convolution2DOpDescriptor(paddingStyle=mg.PaddingStyle.TF_SAME)
    c = g.convolution2D(x, w, descriptor=d)
    k = g.cast(g.constant(np.array([1, -2, 3, 4], np.int8)), F32)
    b = g.cast(g.constant(np.array([0.5, 1.5, np.nan, np.inf], ml_dtypes.bfloat16)), F32)
    r, = g.if_(p, then=lambda: [g.addition(c, k)], elseBlock=lambda: [g.multiplication(c, b)])
    f, = g.for_(g.constant(2, [], mg.int32), [r],
                lambda i, a: [g.addition(a[0], g.cast(i, F32))])
    return g, x, p, w, f


def _inputs(rng):
    return [rng.standard_normal((1, 1, 4, 4)).astype(np.float32), np.array(True)]


def _load_in_new_process(pkg: Path, device: str, inputs: list[np.ndarray], tmp: Path):
    for i, a in enumerate(inputs):
        np.save(tmp / f"in{i}.npy", a)
    code = (
        "import sys, numpy as np, mpsgraph as mg\n"
        f"exe = mg.Executable(mpsgraphPackageAt={str(pkg)!r}, device={device!r})\n"
        f"ins = [np.load({str(tmp)!r} + f'/in{{i}}.npy') for i in range({len(inputs)})]\n"
        "outs = exe.run(ins)\n"
        f"np.save({str(tmp)!r} + '/out.npy', outs[0].numpy())\n"
        "print([t.name for t in exe.feedTensors], 'mpsgraph_test' in sys.modules)\n")
    env = dict(os.environ, PYTHONPATH=SRC)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tmp, timeout=300)
    assert done.returncode == 0, done.stderr
    return np.load(tmp / "out.npy"), done.stdout


@pytest.mark.parametrize("device", DEVICES)
def test_package_round_trip_in_a_new_process(device, tmp_path, rng):
    g, x, p, w, f = _model()
    exe = g.compile({x: mg.ShapedType([1, 1, 4, 4], F32), p: mg.ShapedType([], mg.bool)}, [f],
                    device=device)
    # train the variable a little: the package holds its CURRENT value
    g.run({}, [], targetOperations=[g.assign(w, g.multiplication(w, g.constant(2.0, [], F32)))],
          device=device)
    ins = _inputs(rng)
    want = exe.run(ins)[0].numpy()
    pkg = tmp_path / "model.mpsgraphpackage"
    exe.serialize(pkg, descriptor=mg.ExecutableSerializationDescriptor())
    man = json.loads((pkg / "manifest.json").read_text())
    assert man["format"] == "mpsgraph-package" and man["version"] == 1
    assert all(p.suffix == ".npy" for p in (pkg / "arrays").iterdir())
    assert not any(b"pickle" in p.read_bytes()[:200] for p in (pkg / "arrays").iterdir())
    # bitwise on the CPUs; on CUDA another process may pick another cuDNN algorithm
    same = (np.testing.assert_array_equal if device != "cuda" else
            lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6))
    got, out = _load_in_new_process(pkg, device, ins, tmp_path)
    assert out.split()[0] == "['x',"  # feed order kept
    same(got, want)
    ins[1] = np.array(False)  # the else branch, with NaN and inf from the bfloat16 constant
    want = exe.run(ins)[0].numpy()
    got, _ = _load_in_new_process(pkg, device, ins, tmp_path)
    same(got, want)
    # ... and in this process, on every device
    for dev in _present():
        e2 = mg.Executable(mpsgraphPackageAt=pkg, device=dev)
        np.testing.assert_allclose(e2.run(ins)[0].numpy(), want, rtol=1e-5, atol=1e-6)


def test_package_with_a_controlDependency_and_call(tmp_path):
    h = mg.Graph()
    a = h.placeholder([2], F32)
    callee = h.compile({a: mg.ShapedType([2], F32)}, [h.square(a)])
    g = mg.Graph()
    v = g.variable(_f(1, 2), name="v")
    x = g.placeholder([2], F32, name="x")
    r, = g.controlDependency([g.assign(v, g.addition(v, x))],
                             dependentBlock=lambda: [g.read(v)])
    s, = g.call("sq", inputTensors=[r], outputTypes=[mg.ShapedType([2], F32)])
    cd = mg.CompilationDescriptor(callables={"sq": callee})
    exe = g.compile({x: mg.ShapedType([2], F32)}, [s], compilationDescriptor=cd)
    exe.serialize(tmp_path / "p")
    e2 = mg.Executable(mpsgraphPackageAt=tmp_path / "p", compilationDescriptor=cd)
    np.testing.assert_array_equal(e2.run([_f(1, 1)])[0].numpy(), _f(4, 9))
    np.testing.assert_array_equal(e2.run([_f(1, 1)])[0].numpy(), _f(9, 16))  # its own state
    with pytest.raises(mg.GraphError, match="sq"):
        mg.Executable(mpsgraphPackageAt=tmp_path / "p")  # the callable is needed


def _saved(tmp_path) -> Path:
    g = mg.Graph()
    x = g.placeholder([2], F32, name="x")
    y = g.addition(x, g.constant(_f(1, 2)))
    pkg = tmp_path / "ok"
    g.compile({x: mg.ShapedType([2], F32)}, [y]).serialize(pkg)
    return pkg


def _edit(pkg: Path, fn) -> None:
    m = json.loads((pkg / "manifest.json").read_text())
    fn(m)
    (pkg / "manifest.json").write_text(json.dumps(m))


@pytest.mark.parametrize("damage", [
    "no_manifest", "not_json", "foreign", "newer", "unknown_kind", "forward_ref", "bad_class",
    "main_module", "missing_array", "pickled_array", "bad_shape", "bad_dtype", "outputs"])
def test_corrupt_or_foreign_packages_raise_graph_errors(tmp_path, damage):
    pkg = _saved(tmp_path)
    arr = next((pkg / "arrays").iterdir())
    if damage == "no_manifest":
        (pkg / "manifest.json").unlink()
    elif damage == "not_json":
        (pkg / "manifest.json").write_text("{ not json")
    elif damage == "foreign":
        _edit(pkg, lambda m: m.update(format="coreml"))
    elif damage == "newer":
        _edit(pkg, lambda m: m.update(version=99))
    elif damage == "unknown_kind":
        _edit(pkg, lambda m: m["ops"][-1].update(kind="os.system"))
    elif damage == "forward_ref":
        _edit(pkg, lambda m: m["ops"][-1].update(inputs=[[5, 0], [0, 0]]))
    elif damage == "bad_class":
        _edit(pkg, lambda m: m["ops"][0].update(attrs={"$enum": "os:system", "value": 1}))
    elif damage == "main_module":  # naming a module must not import (run) it
        _edit(pkg, lambda m: m["ops"][0].update(attrs={"$enum": "mpsgraph.__main__:main",
                                                        "value": 1}))
    elif damage == "missing_array":
        arr.unlink()
    elif damage == "pickled_array":
        np.save(arr, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    elif damage == "bad_shape":
        np.save(arr, np.ones((3, 3), np.float32))
    elif damage == "bad_dtype":
        _edit(pkg, lambda m: m["ops"][0]["attrs"]["$shapedType"].update(dataType="float99"))
    elif damage == "outputs":
        _edit(pkg, lambda m: m["ops"][-1].update(outputs=3))
    with pytest.raises(mg.GraphError, match="mpsgraph package|mpsgraphPackageAt"):
        mg.Executable(mpsgraphPackageAt=pkg)


def test_serialize_refuses_bad_destinations(tmp_path):
    g = mg.Graph()
    x = g.placeholder([2], F32)
    exe = g.compile({x: mg.ShapedType([2], F32)}, [g.negative(x)])
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    with pytest.raises(mg.GraphError, match="package"):
        exe.serialize(tmp_path / "full")
    with pytest.raises(mg.UnsupportedError, match="append"):
        exe.serialize(tmp_path / "a", descriptor=mg.ExecutableSerializationDescriptor(append=True))
    with pytest.raises(mg.GraphError, match="neither"):
        mg.Executable()


def test_every_opdb_graph_round_trips_through_a_package(tmp_path):
    """One sample of every op of the database (custom runners aside): compiled, saved,
    loaded and run again, the results are bitwise equal (every attribute kind survives)."""
    import opdb

    opdb._load_entries()
    rng = np.random.default_rng(17)
    n = 0
    for info in opdb.OPDB.values():
        if info.run is not None:
            continue
        s = next(iter(info.samples(rng, info.dtypes[0])))
        g = mg.Graph()
        phs = [g.placeholder(list(a.shape), mg.DataType.from_numpy(a.dtype)) for a in s.inputs]
        out = info.build(g, *phs, **s.kwargs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        exe = g.compile({p: mg.ShapedType(list(a.shape), p.dataType)
                         for p, a in zip(phs, s.inputs)}, outs)
        want = [o.numpy() for o in exe.run(list(s.inputs))]
        exe.serialize(tmp_path / info.name)
        got = mg.Executable(mpsgraphPackageAt=tmp_path / info.name).run(list(s.inputs))
        for a, b in zip(want, got):
            assert b.numpy().shape == a.shape, info.name
            np.testing.assert_array_equal(b.numpy(), a, err_msg=info.name)
        n += 1
    assert n > 100
