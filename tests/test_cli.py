"""`python -m mpsgraph check`: all PASS on a good install, exit status 1 when a kernel is
wrong, 2 on a bad device."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from mpsgraph import cli


def test_check_passes(capsys):
    assert cli.main(["check"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and out.count("PASS") >= 20 and "all PASS" in out


def test_check_fails_on_a_wrong_kernel(monkeypatch, capsys):
    from mpsgraph.backends.numpy import KERNELS, Backend

    Backend.for_device(None)  # the kernel families load with the backend

    good = KERNELS["convolution2DWeightsGradient"]
    monkeypatch.setitem(KERNELS, "convolution2DWeightsGradient",
                        lambda *a: (good(*a) * np.float32(1.001)).astype(good(*a).dtype))
    assert cli.main(["check", "--device", "cpu"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "convolution2DWeightsGradient" in out


def test_check_bad_device(capsys):
    assert cli.main(["check", "--device", "tpu"]) == 2
    assert "tpu" in capsys.readouterr().err


def test_module_entry_point():
    r = subprocess.run([sys.executable, "-m", "mpsgraph", "check", "--suite", "convolution"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all PASS" in r.stdout


def test_check_lstm_fails_on_a_wrong_gradient(monkeypatch, capsys):
    from mpsgraph.backends.numpy import KERNELS, Backend

    Backend.for_device(None)  # the kernel families load with the backend

    good = KERNELS["LSTMGradients"]

    def bad(*args):
        out = list(good(*args))
        out[1] = out[1] * np.float32(1.01)  # recurrentWeight gradient off by 1%
        return tuple(out)

    monkeypatch.setitem(KERNELS, "LSTMGradients", bad)
    assert cli.main(["check", "--device", "cpu", "--suite", "lstm"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "LSTMGradients" in out


def test_check_ops_fails_on_a_wrong_gradient_kernel(monkeypatch, capsys):
    from mpsgraph.backends.numpy import KERNELS, Backend

    Backend.for_device(None)  # the kernel families load with the backend

    good = KERNELS["sigmoidGradient"]
    monkeypatch.setitem(KERNELS, "sigmoidGradient",
                        lambda *a: (good(*a) * np.float32(1.01)).astype(good(*a).dtype))
    assert cli.main(["check", "--device", "cpu", "--suite", "ops"]) == 1
    assert "sigmoid" in capsys.readouterr().out


# ---------------------------------------------------------------- the rough edges (issue 24)
def _torch_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def test_version(capsys):
    import mpsgraph

    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"mpsgraph {mpsgraph.__version__}"


@pytest.mark.parametrize("argv", [["--help"], ["demo", "--help"], ["check", "--help"],
                                  ["draw", "--help"], ["tuning", "--help"]])
def test_one_prog_name(argv, capsys):
    with pytest.raises(SystemExit):
        cli.main(argv)
    usage = capsys.readouterr().out.splitlines()[0]
    assert usage.startswith("usage: mpsgraph" + ("" if argv == ["--help"] else f" {argv[0]}"))
    assert "python -m" not in usage


def test_prog_name_the_same_through_python_m_and_the_console_script():
    """`python -m mpsgraph` and the `mpsgraph` console script (cli:main, as pyproject.toml
    declares it, started the way its generated wrapper starts it) print the same usage."""
    m = subprocess.run([sys.executable, "-m", "mpsgraph", "--help"], capture_output=True,
                       text=True, timeout=120)
    wrapper = ("import sys; from mpsgraph.cli import main; sys.argv[0] = 'mpsgraph'; "
               "sys.exit(main())")
    s = subprocess.run([sys.executable, "-c", wrapper, "--help"], capture_output=True,
                       text=True, timeout=120)
    assert m.returncode == s.returncode == 0
    assert m.stdout == s.stdout and m.stdout.startswith("usage: mpsgraph ")


@pytest.mark.skipif(_torch_cuda(), reason="CUDA is available here")
def test_demo_without_cuda_is_one_clean_line():
    r = subprocess.run([sys.executable, "-m", "mpsgraph", "demo", "--device", "cuda"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("mpsgraph demo: error:") and "cuda" in line.lower()


@pytest.mark.parametrize("command", ["check", "demo"])
def test_bad_device_every_subcommand(command, capsys):
    assert cli.main([command, "--device", "tpu"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"mpsgraph {command}: error:") and "tpu" in line


def test_demo_missing_extra_is_one_clean_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn -> ImportError
    assert cli.main(["demo", "--epochs", "1"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("mpsgraph demo: error:")
    assert "pip install 'mpsgraph[demo]'" in line and "-e" not in line.split("pip")[1]


def test_missing_torch_is_one_clean_line(monkeypatch, capsys):
    from mpsgraph.runtime import device

    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(device, "_BACKENDS", {k: v for k, v in device._BACKENDS.items()
                                              if k != "torch"})
    monkeypatch.delitem(sys.modules, "mpsgraph.backends.torch", raising=False)
    assert cli.main(["check", "--device", "torch-cpu"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("mpsgraph check: error:") and "torch" in line


def test_unknown_suite(capsys):
    assert cli.main(["check", "--suite", "nope"]) == 2
    assert "unknown suite 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("kernel, suite, row", [
    ("HermiteanToRealFFT", "forward", "fft"),
    ("maxPooling2DGradientIndices", "gradient-ops", "pooling gradient ops"),
    ("nonMaximumSuppression", "exact", "NMS"),
    ("randomTensor", "random", "randomTensor"),
    ("sampleGridGradient", "ops", "sampleGrid"),
])
def test_check_new_suites_fail_on_a_wrong_kernel(monkeypatch, capsys, kernel, suite, row):
    """A kernel off by a little (floats x 1.001, the first integer + 1) makes its row FAIL."""
    from mpsgraph.backends.numpy import KERNELS, Backend

    Backend.for_device(None)  # the kernel families load with the backend

    cli.main(["check", "--device", "cpu", "--suite", suite])  # every kernel registered
    capsys.readouterr()
    good = KERNELS[kernel]

    def off(v):
        v = np.array(v)
        if v.dtype.kind == "f":
            return (v * np.float32(1.001)).astype(v.dtype)
        v.reshape(-1)[:1] += 1
        return v

    def bad(*args):
        out = good(*args)
        return tuple(off(v) for v in out) if isinstance(out, tuple) else off(out)

    monkeypatch.setitem(KERNELS, kernel, bad)
    assert cli.main(["check", "--device", "cpu", "--suite", suite]) == 1
    out = capsys.readouterr().out
    assert any("FAIL" in line and row in line for line in out.splitlines()), out


def test_tuning_shows_and_clears_the_cache(monkeypatch, tmp_path, capsys):
    """`mpsgraph tuning` prints each cached key with its choice and candidate times (this
    machine's section; --all every section), `--clear` deletes the file."""
    pytest.importorskip("torch")
    from mpsgraph.backends.torch import autotune

    path = tmp_path / "at.json"
    monkeypatch.setenv("MPSGRAPH_AUTOTUNE_CACHE", str(path))
    monkeypatch.setenv("MPSGRAPH_AUTOTUNE", "1")
    autotune.clear()
    autotune.set_timer(lambda fn, dev: {"fast": 1.0, "slow": 2.0}[fn()])
    try:
        k = autotune.key_string("conv2d.forward", [[1, 2, 3, 4]], "float32", {}, "ieee")
        assert autotune.choose(k, {"fast": lambda: "fast", "slow": lambda: "slow"}, "slow",
                               "cpu") == "fast"
    finally:
        autotune.set_timer(None)
    data = json.loads(path.read_text())
    data["sections"]["another GPU | torch 9"] = {"LSTM:[1]": {"choice": "cudnn"}}
    path.write_text(json.dumps(data))
    assert cli.main(["tuning"]) == 0
    out = capsys.readouterr().out
    assert str(path) in out and k in out
    assert "-> fast  (fast 1, slow 2 ms" in out and "another GPU" not in out
    assert cli.main(["tuning", "--all"]) == 0
    assert "another GPU | torch 9" in capsys.readouterr().out
    assert cli.main(["tuning", "--clear"]) == 0
    assert capsys.readouterr().out.startswith("removed") and not path.exists()
    assert cli.main(["tuning"]) == 0
    assert "(no file yet)" in capsys.readouterr().out
    autotune.clear()


def test_tuning_without_torch_is_one_clean_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert cli.main(["tuning"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("mpsgraph tuning: error:") and "mpsgraph[torch]" in line
