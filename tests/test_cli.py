"""`python -m mpsgraph check`: all PASS on a good install, exit status 1 when a kernel is
wrong, 2 on a bad device."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from mpsgraph import cli


def test_check_passes(capsys):
    assert cli.main(["check"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and out.count("PASS") >= 20 and "all PASS" in out


def test_check_fails_on_a_wrong_kernel(monkeypatch, capsys):
    from mpsgraph.backends.numpy import KERNELS

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
    from mpsgraph.backends.numpy import KERNELS

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
    from mpsgraph.backends.numpy import KERNELS

    good = KERNELS["sigmoidGradient"]
    monkeypatch.setitem(KERNELS, "sigmoidGradient",
                        lambda *a: (good(*a) * np.float32(1.01)).astype(good(*a).dtype))
    assert cli.main(["check", "--device", "cpu", "--suite", "ops"]) == 1
    assert "sigmoid" in capsys.readouterr().out
