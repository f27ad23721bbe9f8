"""The main job's picture: loss and train/validation accuracy per epoch
(examples/train_debian.py writes it next to its text output)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TrainingHistory:
    """One entry per epoch, in order."""
    loss: list[float] = field(default_factory=list)
    train_acc: list[float] = field(default_factory=list)
    val_acc: list[float] = field(default_factory=list)

    def record(self, loss: float, train_acc: float, val_acc: float) -> None:
        self.loss.append(loss)
        self.train_acc.append(train_acc)
        self.val_acc.append(val_acc)


def write_training_plot(history: TrainingHistory, path: str, *, title: str,
                        test_acc: float, baseline: float) -> None:
    """Writes a PNG of two panels: the training loss, and the train and
    validation accuracy with the test accuracy (of the best validation
    epoch) and the majority-class baseline as horizontal lines."""
    if not history.loss:
        raise ValueError("no epochs to plot")
    import matplotlib
    matplotlib.use("Agg")  # files only: no display on the build machines
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    epochs = range(1, len(history.loss) + 1)
    figure, (loss_axes, acc_axes) = plt.subplots(1, 2, figsize=(10, 4))
    loss_axes.plot(epochs, history.loss, color="tab:red")
    loss_axes.set(xlabel="epoch", ylabel="cross-entropy loss (train nodes)",
                  title="loss")
    acc_axes.plot(epochs, history.train_acc, label="train")
    acc_axes.plot(epochs, history.val_acc, label="validation")
    acc_axes.axhline(test_acc, color="tab:green", linestyle="-", linewidth=1,
                     label=f"test (best validation epoch) {test_acc:.3f}")
    acc_axes.axhline(baseline, color="gray", linestyle="--", linewidth=1,
                     label=f"majority class {baseline:.3f}")
    acc_axes.set(xlabel="epoch", ylabel="accuracy", title="accuracy", ylim=(0, 1))
    acc_axes.legend(loc="best", fontsize="small")
    for axes in (loss_axes, acc_axes):
        axes.grid(alpha=0.3)
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=100)
    plt.close(figure)
