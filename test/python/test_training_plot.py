"""The main job's plot (examples/training_plot.py): a PNG of the loss and the
accuracies per epoch, for any number of epochs; no epochs is an error."""

import os
import struct
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from training_plot import TrainingHistory, write_training_plot  # noqa: E402


def png_size(path):
    """Width and height from the PNG signature and IHDR chunk."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    assert head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("epochs", [1, 2, 40])
def test_writes_a_png_per_history(tmp_path, epochs):
    history = TrainingHistory()
    for epoch in range(epochs):
        history.record(4.0 / (epoch + 1), 0.1 + epoch / 100, 0.1 + epoch / 120)
    path = tmp_path / "plot.png"
    write_training_plot(history, str(path), title="t", test_acc=0.4, baseline=0.1)
    assert png_size(path) == (1000, 400)  # 10 x 4 inches at 100 dpi
    assert path.stat().st_size > 10_000  # two panels drawn, not an empty canvas


def test_history_keeps_epochs_in_order():
    history = TrainingHistory()
    history.record(2.0, 0.5, 0.4)
    history.record(1.0, 0.6, 0.5)
    assert history.loss == [2.0, 1.0]
    assert history.train_acc == [0.5, 0.6]
    assert history.val_acc == [0.4, 0.5]


def test_no_epochs_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no epochs"):
        write_training_plot(TrainingHistory(), str(tmp_path / "p.png"), title="t",
                            test_acc=0.0, baseline=0.0)
    assert not (tmp_path / "p.png").exists()
