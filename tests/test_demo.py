"""A short demo run (the README's first command, tiny): the loss falls, accuracy is far above
chance, and the PNG is written."""

from __future__ import annotations

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
