"""`mpsgraph demo` (or `python -m mpsgraph demo`): train a small CNN and an LSTM classifier on
scikit-learn's handwritten digits (8x8 images, 10 classes), built only from mpsgraph ops and
trained with `gradientForPrimaryTensor` and the `adam` optimizer op, as an MPSGraph program
would be. Prints one summary line per model (`--verbose`: one line per epoch too; a progress
bar only when stderr is a terminal) and writes the loss and accuracy curves to a PNG.

Needs the `demo` extra (scikit-learn, matplotlib, tqdm).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .descriptors import Convolution2DOpDescriptor, LSTMDescriptor
from .graph import Graph, Operation, Tensor
from .runtime.device import Device
from .types import DataType, LossReductionType, PaddingStyle, ShapedType
from .types import TensorNamedDataLayout as L

F32 = DataType.float32


@dataclass
class History:
    loss: list[float] = field(default_factory=list)  # mean training loss of each epoch
    test_loss: list[float] = field(default_factory=list)  # on the held-out images, after it
    train_acc: list[float] = field(default_factory=list)
    test_acc: list[float] = field(default_factory=list)
    seconds: float = 0.0


def load_digits_split(seed: int = 0):
    """Images in [0, 1] as [N, 8, 8], labels [N]; a fixed, stratified 75/25 split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)
    y = d.target.astype(np.int32)
    return train_test_split(x, y, test_size=0.25, random_state=seed, stratify=y)


class Model:
    """A classifier as an MPSGraph graph: variables, a training step (forward, loss,
    gradientForPrimaryTensor, adam on every variable) and an evaluation graph sharing the
    variables."""

    def __init__(self, batch: int, eval_batch: int, lr: float, seed: int, device: Device,
                 distributed: bool = False, regularize: bool | None = None):
        self.g = Graph()
        self.rng = np.random.default_rng(seed)
        self.params: list[Tensor] = []
        # batch norm + dropout (the CNN); off by default when data parallel: per-rank batch
        # statistics and masks would make the ranks' training differ from one process's
        self.regularize = (not distributed) if regularize is None else regularize
        self.stat_updates: list[tuple[Tensor, Tensor]] = []  # (running statistic, new value)
        self.device = device
        g = self.g
        self.x = g.placeholder(self.input_shape(batch), F32, name="x")
        self.labels = g.placeholder([batch], DataType.int32, name="labels")
        logits = self.forward(self.x, batch)
        onehot = g.oneHot(self.labels, 10, dataType=F32)
        self.loss = g.softMaxCrossEntropy(logits, onehot, -1,
                                          reductionType=LossReductionType.mean, name="loss")
        grads = g.gradientForPrimaryTensor(self.loss, self.params)
        if distributed:  # data parallel: the mean gradient over the ranks (each a batch)
            from . import distributed as dist

            grads = dist.allReduce(g, grads)
        self.b1p = g.placeholder([], F32, name="beta1Power")
        self.b2p = g.placeholder([], F32, name="beta2Power")
        c = lambda v: g.constant(v, dataType=F32)  # noqa: E731
        lr_t, b1, b2, eps = c(lr), c(0.9), c(0.999), c(1e-7)
        self.updates: list[Operation] = [g.assign(v, t) for v, t in self.stat_updates]
        for p in self.params:
            m = g.variable(np.zeros(p.shape, np.float32), p.shape, F32)
            v = g.variable(np.zeros(p.shape, np.float32), p.shape, F32)
            new_p, new_m, new_v = g.adam(learningRate=lr_t, beta1=b1, beta2=b2, epsilon=eps,
                                         beta1Power=self.b1p, beta2Power=self.b2p, values=p,
                                         momentum=m, velocity=v, gradient=grads[p])
            self.updates += [g.assign(p, new_p), g.assign(m, new_m), g.assign(v, new_v)]
        self.correct = self._correct(logits, batch)
        self.x_eval = g.placeholder(self.input_shape(eval_batch), F32, name="x_eval")
        self.labels_eval = g.placeholder([eval_batch], DataType.int32, name="labels_eval")
        logits_eval = self.forward(self.x_eval, eval_batch, build=False)
        self.pred_eval = self._argmax(logits_eval)
        self.loss_eval = g.softMaxCrossEntropy(
            logits_eval, g.oneHot(self.labels_eval, 10, dataType=F32), -1,
            reductionType=LossReductionType.mean, name="loss_eval")
        self.step = 0
        if distributed:  # every rank starts from rank 0's weights
            dist.broadcastVariables(g)
        self.train_exe = g.compile(
            {self.x: ShapedType(self.input_shape(batch), F32),
             self.labels: ShapedType([batch], DataType.int32),
             self.b1p: ShapedType([], F32), self.b2p: ShapedType([], F32)},
            [self.loss, self.correct], self.updates, device=device)
        self.eval_exe = g.compile({self.x_eval: ShapedType(self.input_shape(eval_batch), F32),
                                   self.labels_eval: ShapedType([eval_batch], DataType.int32)},
                                  [self.pred_eval, self.loss_eval], device=device)

    # subclasses: input_shape(batch), to_input(images [n, 8, 8]) and
    # forward(x, batch, build) -> logits [batch, 10]
    def param(self, shape: list[int], fan_in: int, name: str, zero: bool = False,
              fill: float | None = None) -> Tensor:
        """A trainable variable (He-initialised unless zero or `fill`), created once."""
        init = (np.full(shape, fill) if fill is not None else np.zeros(shape) if zero else
                self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        t = self.g.variable(init, shape, F32, name=name)
        self.params.append(t)
        return t

    def batch_norm(self, h: Tensor, channels: int, name: str, training: bool) -> Tensor:
        """Batch normalization over N, H, W of NHWC `h` (normalize with gamma and beta):
        batch statistics in the training graph, which also move the running statistics
        (momentum 0.9), and the running statistics in the evaluation graph."""
        g = self.g
        if training:
            gamma = self.param([channels], 1, f"{name}_gamma", fill=1.0)
            beta = self.param([channels], 1, f"{name}_beta", zero=True)
            rm = g.variable(np.zeros([1, 1, 1, channels], np.float32), name=f"{name}_mean")
            rv = g.variable(np.ones([1, 1, 1, channels], np.float32), name=f"{name}_var")
            self.bn[name] = (gamma, beta, rm, rv)
            m = g.mean(h, [0, 1, 2])
            v = g.variance(h, mean=m, axes=[0, 1, 2])
            k = g.constant(0.9, dataType=F32)
            k1 = g.constant(0.1, dataType=F32)
            for run, new in ((rm, m), (rv, v)):
                self.stat_updates.append(
                    (run, g.addition(g.multiplication(run, k), g.multiplication(new, k1))))
        else:
            gamma, beta, m, v = self.bn[name]
        return g.normalize(h, m, v, gamma=gamma, beta=beta, epsilon=1e-3)

    def _argmax(self, logits: Tensor) -> Tensor:
        g = self.g
        mx = g.reductionMaximum(logits, axis=-1)
        return g.equal(logits, mx)  # one-hot of the maximum (ties: several)

    def _correct(self, logits: Tensor, batch: int) -> Tensor:
        g = self.g
        hit = g.multiplication(g.cast(self._argmax(logits), F32),
                               g.oneHot(self.labels, 10, dataType=F32))
        return g.reductionSum(hit, axes=[0, 1])

    def train_step(self, xb: np.ndarray, yb: np.ndarray) -> tuple[float, float]:
        self.step += 1
        loss, correct = self.train_exe.run([self.to_input(xb), yb, np.float32(0.9 ** self.step),
                                            np.float32(0.999 ** self.step)])
        return float(loss.numpy().reshape(-1)[0]), float(correct.numpy().reshape(-1)[0])

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """(accuracy, mean loss) on images `x` with labels `y` (the eval batch size)."""
        pred, loss = self.eval_exe.run([self.to_input(x), y.astype(np.int32)])
        p = pred.numpy()
        return float(np.mean(np.argmax(p, axis=-1) == y)), float(loss.numpy().reshape(-1)[0])

    def accuracy(self, x: np.ndarray, y: np.ndarray) -> float:
        return self.evaluate(x, y)[0]


class CNN(Model):
    """conv 3x3 (1->16, TF_SAME) + bias + batch norm + reLU -> conv 3x3 stride 2 (16->32,
    TF_SAME) + bias + batch norm + reLU -> dropout 0.25 -> dense 512->10. NHWC data, HWIO
    weights. Batch norm and dropout only with `regularize` (the default, except data
    parallel)."""

    def input_shape(self, batch: int) -> list[int]:
        return [batch, 8, 8, 1]

    def to_input(self, images: np.ndarray) -> np.ndarray:
        return images.reshape(len(images), 8, 8, 1)

    def forward(self, x: Tensor, batch: int, build: bool = True) -> Tensor:
        g = self.g
        if build:
            self.w1 = self.param([3, 3, 1, 16], 9, "conv1")
            self.b1 = self.param([16], 1, "conv1_bias", zero=True)
            self.w2 = self.param([3, 3, 16, 32], 144, "conv2")
            self.b2 = self.param([32], 1, "conv2_bias", zero=True)
            self.w3 = self.param([512, 10], 512, "dense")
            self.b3 = self.param([10], 1, "dense_bias", zero=True)
            self.bn: dict[str, tuple[Tensor, ...]] = {}
        d1 = Convolution2DOpDescriptor(paddingStyle=PaddingStyle.TF_SAME, dataLayout=L.NHWC,
                                       weightsLayout=L.HWIO)
        d2 = Convolution2DOpDescriptor(strideInX=2, strideInY=2,
                                       paddingStyle=PaddingStyle.TF_SAME, dataLayout=L.NHWC,
                                       weightsLayout=L.HWIO)
        h = g.addition(g.convolution2D(x, self.w1, d1), self.b1)
        if self.regularize:
            h = self.batch_norm(h, 16, "bn1", build)
        h = g.reLU(h)
        h = g.addition(g.convolution2D(h, self.w2, d2), self.b2)
        if self.regularize:
            h = self.batch_norm(h, 32, "bn2", build)
        h = g.reshape(g.reLU(h), shape=[batch, 512])
        if self.regularize and build:  # dropout in training only (a fresh mask every step)
            h = g.dropout(h, 0.25)
        return g.addition(g.matrixMultiplication(h, self.w3), self.b3)


class LSTMClassifier(Model):
    """Each image is a sequence of 8 rows of 8 pixels: LSTM (H=64) over the rows, the last
    state -> dense 64->10."""

    H = 64

    def input_shape(self, batch: int) -> list[int]:
        return [8, batch, 8]  # time-major [T, N, I]

    def forward(self, x: Tensor, batch: int, build: bool = True) -> Tensor:
        g, H = self.g, self.H
        if build:
            self.wr = self.param([4 * H, H], H, "recurrentWeight")
            self.wi = self.param([4 * H, 8], 8, "inputWeight")
            bias = np.zeros(4 * H, np.float32)
            bias[H:2 * H] = 1.0  # forget gate bias 1 (a common LSTM initialisation)
            self.bias = g.variable(bias, [4 * H], F32, name="bias")
            self.params.append(self.bias)
            self.wd = self.param([H, 10], H, "dense")
            self.bd = self.param([10], 1, "dense_bias", zero=True)
        (state,) = g.LSTM(x, self.wr, inputWeight=self.wi, bias=self.bias,
                          descriptor=LSTMDescriptor())
        last = g.reshape(g.sliceTensor(state, dimension=0, start=7, length=1), shape=[batch, H])
        return g.addition(g.matrixMultiplication(last, self.wd), self.bd)

    def to_input(self, images: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(images.transpose(1, 0, 2))  # rows are the time steps


MODELS = {"cnn": (CNN, 0.005, 20), "lstm": (LSTMClassifier, 0.01, 30)}  # class, lr, epochs


def train(kind: str, data, epochs: int | None, device: Device, seed: int = 0, batch: int = 32,
          progress: bool | None = None, limit_batches: int | None = None,
          verbose: bool = False, distributed: bool = False,
          regularize: bool | None = None) -> History:
    """Train one model; returns the per-epoch history. `progress`: a tqdm bar on stderr (None:
    only when stderr is a terminal); `verbose`: print one line per epoch. `distributed`: data
    parallel over the ranks of mpsgraph.distributed (initialised by the caller): each step's
    global batch of `batch` images is split over the ranks (`batch / worldSize` each, so the
    training matches one process's), the gradients are averaged by allReduce, and only rank 0
    prints."""
    world = 1
    if distributed:
        from . import distributed as dist

        world = dist.context().worldSize
        if batch % world:
            raise ValueError(f"demo: a batch of {batch} does not split over {world} ranks")
        verbose = verbose and dist.isMain()
        progress = False if not dist.isMain() else progress
    if progress is None:
        progress = sys.stderr.isatty()
    if progress:
        try:
            from tqdm import tqdm
        except ImportError:  # the bar is a nicety
            progress = False
    x_tr, x_te, y_tr, y_te = data
    cls, lr, default_epochs = MODELS[kind]
    epochs = default_epochs if epochs is None else epochs
    local = batch // world
    model = cls(local, len(x_te), lr, seed, device, distributed=distributed,
                regularize=regularize)
    rng = np.random.default_rng(seed)
    hist = History()
    t0 = time.perf_counter()
    n_batches = len(x_tr) // batch
    if limit_batches:
        n_batches = min(n_batches, limit_batches)
    for epoch in range(epochs):
        perm = rng.permutation(len(x_tr))  # the same on every rank (the same seed)
        if distributed:  # this rank's slice of each global batch
            r = dist.context().rank
            perm = np.concatenate([perm[b * batch + r * local:b * batch + (r + 1) * local]
                                   for b in range(len(x_tr) // batch)] or [perm[:0]])
        losses, correct = [], 0.0
        bar = (tqdm(range(n_batches), desc=f"{kind} epoch {epoch + 1}/{epochs}", leave=False,
                    ncols=90, mininterval=0.5) if progress else None)
        for b in (bar if bar is not None else range(n_batches)):
            idx = perm[b * local:(b + 1) * local]
            loss, corr = model.train_step(x_tr[idx], y_tr[idx])
            losses.append(loss)
            correct += corr
            if bar is not None:
                bar.set_postfix(loss=f"{np.mean(losses):.4f}")
        hist.loss.append(float(np.mean(losses)))
        hist.train_acc.append(correct / (n_batches * local))  # this rank's share
        acc, test_loss = model.evaluate(x_te, y_te)
        hist.test_acc.append(acc)
        hist.test_loss.append(test_loss)
        if verbose:
            line = (f"{kind} epoch {epoch + 1:>2}/{epochs}: train loss {hist.loss[-1]:.4f}, "
                    f"test loss {hist.test_loss[-1]:.4f}, train acc {hist.train_acc[-1]:.3f}, "
                    f"test acc {hist.test_acc[-1]:.3f}")
            if progress:
                tqdm.write(line)
            else:
                print(line, flush=True)
    hist.seconds = time.perf_counter() - t0
    return hist


def accuracy_limits(histories: dict[str, History]) -> tuple[float, float]:
    """y limits of the accuracy panel: every curve strictly inside (1.0 included)."""
    vals = [v for h in histories.values() for v in h.train_acc + h.test_acc] or [0.5, 1.0]
    lo = min(vals)
    return max(0.0, np.floor((lo - 0.02) * 20) / 20 - 0.005), 1.0 + 0.02


def figure(histories: dict[str, History]):
    """The demo's figure: train and test loss (left), train and test accuracy (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = ("tab:blue", "tab:orange", "tab:green", "tab:red")
    for (name, h), color in zip(histories.items(), colors):
        ep = np.arange(1, len(h.loss) + 1)
        a1.plot(ep, h.loss, "--", color=color, label=f"{name} train")
        a1.plot(ep, h.test_loss, color=color, label=f"{name} test")
        a2.plot(ep, h.train_acc, "--", color=color, label=f"{name} train")
        a2.plot(ep, h.test_acc, color=color, label=f"{name} test")
    a1.set(xlabel="epoch", ylabel="softmax cross-entropy (mean)", yscale="log",
           title="loss (train: mean over the epoch; test: after it)")
    a2.set(xlabel="epoch", ylabel="accuracy", title="accuracy", ylim=accuracy_limits(histories))
    for a in (a1, a2):
        a.grid(alpha=0.3)
        a.legend(loc="best", fontsize="small")
        a.xaxis.get_major_locator().set_params(integer=True)
    fig.suptitle("mpsgraph demo: digits (8x8), trained with gradientForPrimaryTensor + adam")
    fig.tight_layout()
    return fig


def plot(histories: dict[str, History], path: str) -> None:
    import matplotlib.pyplot as plt

    fig = figure(histories)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The demo's options (on the `mpsgraph demo` subparser)."""
    p.add_argument("--device", default=None, help="cpu (default), torch-cpu, cuda, cuda:N")
    p.add_argument("--epochs", type=int, default=None,
                   help="epochs per model (default: cnn 20, lstm 30)")
    p.add_argument("--model", choices=["cnn", "lstm", "both"], default="both")
    p.add_argument("--out", default="out", help="folder for the PNG (default: ./out)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit-batches", type=int, default=None, metavar="N",
                   help="at most N training batches per epoch (a quick smoke run)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print one line per epoch")
    p.add_argument("--no-batch-norm", action="store_true",
                   help="the CNN without batch norm and dropout (as --distributed trains it: "
                        "per-rank batch statistics would differ from one process's)")
    p.add_argument("--distributed", action="store_true",
                   help="data parallel under torchrun (gloo on CPUs, NCCL with --device cuda): "
                        "torchrun --nproc_per_node=2 -m mpsgraph demo --distributed")


def run(args: argparse.Namespace) -> int:
    """`mpsgraph demo` with parsed arguments (CommandError for a missing extra or device)."""
    from .cli import open_device, require_extra

    require_extra("demo", "sklearn", "matplotlib")
    main_rank, where = True, ""
    if getattr(args, "distributed", False):
        require_extra("torch", "torch")
        from . import distributed as dist

        cuda = (args.device or "").startswith("cuda")
        ctx = dist.init("nccl" if cuda else "gloo",
                        None if cuda else open_device(args.device).key)
        device, main_rank = ctx.device, dist.isMain()
        where = f", {ctx.worldSize} ranks ({ctx.backend})"
    else:
        device = open_device(args.device)
    data = load_digits_split(args.seed)
    kinds = ["cnn", "lstm"] if args.model == "both" else [args.model]
    say = print if main_rank else (lambda *a, **k: None)
    say(f"digits: {len(data[0])} train / {len(data[1])} test images; device {device.key}"
        f"{where}", flush=True)
    hist = {}
    for k in kinds:
        h = hist[k] = train(k, data, args.epochs, device, args.seed, verbose=args.verbose,
                            limit_batches=args.limit_batches,
                            distributed=getattr(args, "distributed", False),
                            regularize=False if getattr(args, "no_batch_norm", False) else None)
        say(f"{k}: test accuracy {100 * h.test_acc[-1]:.1f}%, test loss "
            f"{h.test_loss[-1]:.4f} after {len(h.loss)} epochs ({h.seconds:.1f} s)",
            flush=True)
    if main_rank:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "demo_curves.png")
        plot(hist, path)
        print(f"curves: {path}")
    if getattr(args, "distributed", False):
        dist.barrier()
        dist.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    """`mpsgraph demo ARGS` (kept for callers of the module)."""
    from .cli import main as cli_main

    return cli_main(["demo", *(sys.argv[1:] if argv is None else argv)])
