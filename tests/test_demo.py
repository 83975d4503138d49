"""A short demo run (the README's first command, tiny): the loss falls, accuracy is far above
chance, and the PNG is written."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")
pytest.importorskip("tqdm")

from mpsgraph import demo  # noqa: E402
from mpsgraph.runtime.device import Device  # noqa: E402


@pytest.mark.parametrize("kind", ["cnn", "lstm"])
def test_training_loss_falls(kind):
    data = demo.load_digits_split(0)
    h = demo.train(kind, data, epochs=3, device=Device("cpu"), progress=False,
                   limit_batches=15)
    assert h.loss[-1] < 0.7 * h.loss[0], h.loss
    assert h.test_acc[-1] > 0.5  # chance is 0.1


def test_demo_cli_writes_png(tmp_path, capsys):
    assert demo.main(["--model", "cnn", "--epochs", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "cnn: test accuracy" in out
    png = tmp_path / "demo_curves.png"
    assert png.exists() and png.stat().st_size > 10_000


def test_demo_prints_one_summary_line_per_model(tmp_path, capsys):
    """Not a terminal: no progress bar, no per-epoch lines, one line per model."""
    argv = ["--epochs", "2", "--limit-batches", "3", "--out", str(tmp_path)]
    assert demo.main(argv) == 0
    cap = capsys.readouterr()
    assert "\r" not in cap.out + cap.err and cap.err == ""
    lines = cap.out.strip().splitlines()
    assert len(lines) == 4, lines  # data line, cnn, lstm, curves
    assert lines[1].startswith("cnn: test accuracy") and "test loss" in lines[1]
    assert lines[2].startswith("lstm: test accuracy") and "after 2 epochs" in lines[2]
    assert "epoch 1/" not in cap.out
    assert demo.main(argv + ["--model", "cnn", "--verbose"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines[1:3]] == ["cnn epoch  1/2", "cnn epoch  2/2"]
    assert "test loss" in lines[1] and len(lines) == 5


def test_progress_bar_only_on_a_terminal(monkeypatch, capsys):
    data = demo.load_digits_split(0)
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    demo.train("cnn", data, epochs=1, device=Device("cpu"), limit_batches=2)
    assert "cnn epoch 1/1" in capsys.readouterr().err  # the tqdm bar
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    demo.train("cnn", data, epochs=1, device=Device("cpu"), limit_batches=2)
    assert capsys.readouterr().err == ""


def test_plot_has_test_loss_and_keeps_accuracy_inside_the_axes():
    h = demo.History(loss=[2.0, 0.5, 0.1], test_loss=[1.5, 0.6, 0.3],
                     train_acc=[0.31, 0.97, 1.0], test_acc=[0.4, 0.9, 0.95])
    h2 = demo.History(loss=[1.0, 0.2], test_loss=[0.9, 0.4], train_acc=[0.8, 1.0],
                      test_acc=[0.7, 0.99])
    fig = demo.figure({"cnn": h, "lstm": h2})
    loss_ax, acc_ax = fig.axes
    labels = [ln.get_label() for ln in loss_ax.get_lines()]
    assert labels == ["cnn train", "cnn test", "lstm train", "lstm test"]
    assert list(loss_ax.get_lines()[1].get_ydata()) == h.test_loss
    lo, hi = acc_ax.get_ylim()
    for ln in acc_ax.get_lines():
        y = np.asarray(ln.get_ydata())
        assert np.all(y > lo) and np.all(y < hi), (ln.get_label(), y, lo, hi)
    assert hi - 1.0 >= 0.01  # a curve at 1.0 stays visible below the top edge
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_cnn_trains_with_batch_norm_and_dropout():
    """The demo's CNN: batch norm (mean, variance, normalize with gamma and beta) and dropout
    in the training step, differentiated by gradientForPrimaryTensor; the evaluation graph
    uses the running statistics and no dropout; a data-parallel model has neither."""
    pytest.importorskip("sklearn")
    import mpsgraph as mg
    from mpsgraph import demo

    data = demo.load_digits_split(0)
    m = demo.CNN(32, len(data[1]), 0.005, 0, mg.Device("cpu"))
    train_kinds = {st.kind for st in m.train_exe._steps}
    eval_kinds = {st.kind for st in m.eval_exe._steps}
    assert {"normalize", "variance", "dropout", "normalizationGradients"} <= train_kinds
    assert "normalize" in eval_kinds and not {"dropout", "variance"} & eval_kinds
    names = {p.name for p in m.params}
    assert {"bn1_gamma", "bn1_beta", "bn2_gamma", "bn2_beta"} <= names
    rm = m.bn["bn1"][2]
    before = m.g.run({}, [rm])[rm].numpy().copy()
    losses = [m.train_step(data[0][i * 32:(i + 1) * 32], data[2][i * 32:(i + 1) * 32])[0]
              for i in range(12)]
    after = m.g.run({}, [rm])[rm].numpy()
    assert not np.array_equal(before, after)  # the running mean moved
    assert np.mean(losses[-4:]) < np.mean(losses[:4])  # it learns
    plain = demo.CNN(32, 8, 0.005, 0, mg.Device("cpu"), distributed=False, regularize=False)
    assert not {"normalize", "dropout"} & {st.kind for st in plain.train_exe._steps}
