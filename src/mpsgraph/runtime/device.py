"""`Device`: where a graph runs. "cpu" is the NumPy backend; "cuda", "cuda:N" and "torch-cpu"
are the torch backend (imported only when used). The default comes from MPSGRAPH_DEVICE."""

from __future__ import annotations

import importlib
import os
from typing import Any

from ..errors import UnsupportedError

__all__ = ["Device", "resolve_device"]


class Device:
    """`Device("cpu")` (NumPy, the default), `Device("cuda")`, `Device("cuda:1")`,
    `Device("torch-cpu")`."""

    __slots__ = ("type", "index")

    def __init__(self, spec: str = "cpu"):
        if isinstance(spec, Device):
            self.type, self.index = spec.type, spec.index
            return
        if not isinstance(spec, str):
            raise UnsupportedError(f"Device: argument 'spec': expected a str such as 'cpu', "
                                   f"'cuda', 'cuda:1' or 'torch-cpu', given {spec!r}")
        s = spec.strip().lower()
        idx = None
        if s.startswith("cuda:"):
            try:
                idx = int(s[5:])
            except ValueError:
                idx = -1
            if idx < 0:
                raise UnsupportedError(f"Device: argument 'spec': expected 'cuda:N' with N >= 0, "
                                       f"given {spec!r}")
            s = "cuda"
        if s not in ("cpu", "numpy", "cuda", "torch-cpu"):
            raise UnsupportedError(f"Device: argument 'spec': expected 'cpu', 'cuda', 'cuda:N' "
                                   f"or 'torch-cpu', given {spec!r}")
        self.type = "cpu" if s == "numpy" else s
        self.index = idx

    @property
    def key(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    @property
    def backend_name(self) -> str:
        return "numpy" if self.type == "cpu" else "torch"

    def backend(self) -> Any:
        return get_backend(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Device({self.key!r})"


def resolve_device(device: Device | str | None) -> Device:
    """`device` as a Device; None means $MPSGRAPH_DEVICE, or "cpu" when that is unset/empty."""
    if device is None:
        spec = os.environ.get("MPSGRAPH_DEVICE", "").strip() or "cpu"
        try:
            return Device(spec)
        except UnsupportedError as e:
            raise UnsupportedError(f"environment variable MPSGRAPH_DEVICE={spec!r} names no "
                                   f"device ({e})") from None
    return device if isinstance(device, Device) else Device(device)


_BACKENDS: dict[str, Any] = {}


def get_backend(device: Device) -> Any:
    name = device.backend_name
    if name not in _BACKENDS:
        try:
            mod = importlib.import_module(f"mpsgraph.backends.{name}")
        except ImportError as e:
            raise UnsupportedError(f"Device({device.key!r}): the {name} backend is not "
                                   f"available ({e})") from e
        if not hasattr(mod, "Backend"):
            raise UnsupportedError(f"Device({device.key!r}): the {name} backend is not "
                                   f"implemented yet; use Device('cpu')")
        _BACKENDS[name] = mod
    return _BACKENDS[name].Backend.for_device(device)
