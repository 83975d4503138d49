"""An autotuning cache for the torch backend's path choices (as cudnn.benchmark does).

A kernel with several ways to compute the same result (the LSTM: cuDNN, the cluster kernels,
the persistent kernels under a few tilings, the per-step path; the GRU / single-gate RNN: our
kernels or cuDNN; a convolution: the Triton depthwise kernels or cuDNN, NCHW or
channels_last, with the Triton weight transpose) asks `choose(key, candidates, fallback)`.
The first call of a new key times every candidate once, device-only (`default_timer`: a
warm-up call, then the candidate captured in a private CUDA graph and replayed `REPLAYS` times
between CUDA events, the median; MPSGRAPH_AUTOTUNE_GRAPH=0 times eager calls instead), times
the candidates within `REFINE_RATIO` of the fastest `REFINE_ROUNDS` more times round-robin
(each keeps its best), keeps the fastest and records it in memory and in a small JSON file;
later calls (and later processes on the same machine and versions) read the answer back.
The hand rules stay the fallback: they answer

- when tuning is off (MPSGRAPH_AUTOTUNE=0; the default is on for CUDA devices, off
  elsewhere; =1 turns it on on any device, which the CPU tests use);
- inside a CUDA-graph capture (no timing, no synchronisation may happen there; the capture
  records the hand rule's choice unless the key was tuned before: the executables' warm-up
  runs before their capture (runtime/executable.py `_AutoReplay`, the backend's
  GraphReplayer) tune at their first call);
- when every candidate fails.

The file: MPSGRAPH_AUTOTUNE_CACHE, else $XDG_CACHE_HOME/mpsgraph/autotune.json, else
~/.cache/mpsgraph/autotune.json. It holds one section per machine identity (`identity`: the
GPU name and the torch / Triton / mpsgraph versions), so a driver, library or GPU change
retunes. A file that cannot be read or parsed is ignored with a warning (and rewritten at
the next save); a file that cannot be written leaves the in-memory cache working.

Tuning costs compile-time: `events()` lists every decision (key, choice, candidate times,
tuning ms, whether it came from the cache) and `tuning_ms()` sums the tuning time, so the
benchmarks can show it.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

__all__ = ["enabled", "capturing", "choose", "cache_path", "cached_sections", "identity",
           "events", "tuning_ms", "clear", "key_string", "REPLAYS"]

REPLAYS = 3          # timed calls per candidate (after one warm-up call)
# close calls are timed again: the candidates within REFINE_RATIO of the fastest get
# REFINE_ROUNDS more timings, round-robin (so that clock or cache drift between candidates
# timed one after the other cannot decide), and keep their best round
REFINE_RATIO = 1.25
REFINE_ROUNDS = 2
_VERSION = 1         # of the file format

_lock = threading.RLock()
_memory: dict[str, dict[str, Any]] = {}     # key string -> entry (this identity's)
_loaded_from: str | None = None             # the file _memory was read from
_events: list[dict[str, Any]] = []
# the callers' cheap tuple keys -> the answer (no key text, no candidate list, no file read on
# the hot path: a decided call costs one dict lookup)
_fast: dict[Any, str] = {}


# ----------------------------------------------------------------------------------------------
# switches


def enabled(device: torch.device | str | None = None) -> bool:
    """MPSGRAPH_AUTOTUNE: '0' off, '1' on (any device); unset: on for CUDA devices only."""
    v = os.environ.get("MPSGRAPH_AUTOTUNE", "").strip()
    if v == "0":
        return False
    if v == "1":
        return True
    if v:
        raise ValueError(f"MPSGRAPH_AUTOTUNE={v!r}: expected 0 or 1")
    dev = torch.device(device) if device is not None else None
    return dev is not None and dev.type == "cuda"


def capturing() -> bool:
    """Whether the current CUDA stream is capturing a graph (no timing may run now)."""
    if not torch.cuda.is_available():
        return False
    try:
        return bool(torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001 - a broken CUDA context: never tune
        return True


# ----------------------------------------------------------------------------------------------
# keys and identity


def _norm(v: Any) -> Any:
    if isinstance(v, torch.dtype):
        return str(v).replace("torch.", "")
    if isinstance(v, torch.device):
        return v.type
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _norm(v[k]) for k in sorted(v, key=str)}
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if hasattr(v, "value") and isinstance(v.value, (int, str)):  # enums
        return v.value
    return str(v)


def key_string(op: str, *parts: Any) -> str:
    """A stable text form of a key: the op name, then the shape, dtype, options and precision
    parts as JSON (dtypes as their names, tuples as lists, mappings sorted)."""
    return op + ":" + json.dumps(_norm(list(parts)), separators=(",", ":"), sort_keys=True)


def identity() -> str:
    """The machine and versions a cache section belongs to."""
    gpu = "cpu"
    if torch.cuda.is_available():
        try:
            gpu = torch.cuda.get_device_name()
        except Exception:  # noqa: BLE001
            gpu = "cuda"
    try:
        import triton
        tv = triton.__version__
    except Exception:  # noqa: BLE001
        tv = "none"
    try:
        from ... import __version__ as mv
    except Exception:  # noqa: BLE001
        mv = "unknown"
    return f"{gpu} | torch {torch.__version__} | triton {tv} | mpsgraph {mv}"


def cache_path() -> Path:
    p = os.environ.get("MPSGRAPH_AUTOTUNE_CACHE", "").strip()
    if p:
        return Path(p).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "mpsgraph" / "autotune.json"


# ----------------------------------------------------------------------------------------------
# the file


def _read_file(path: Path) -> dict[str, Any]:
    """The whole file's sections ({} when absent; a warning and {} when unreadable)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as e:
        warnings.warn(f"mpsgraph autotune: cannot read {path} ({e}); ignored", RuntimeWarning,
                      stacklevel=3)
        return {}
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != _VERSION or not isinstance(
                data.get("sections"), dict):
            raise ValueError("not an mpsgraph autotune cache of version "
                             f"{_VERSION}")
        sections = data["sections"]
        for sec in sections.values():
            if not isinstance(sec, dict) or not all(
                    isinstance(e, dict) and isinstance(e.get("choice"), str)
                    for e in sec.values()):
                raise ValueError("malformed entries")
        return sections
    except ValueError as e:
        warnings.warn(f"mpsgraph autotune: the cache file {path} is corrupt ({e}); ignored "
                      "(it is rewritten at the next tuning)", RuntimeWarning, stacklevel=3)
        return {}


def _load() -> None:
    """Fill the in-memory cache from the file once per path (the path may change: tests)."""
    global _loaded_from, _memory
    path = str(cache_path())
    if _loaded_from == path:
        return
    sec = _read_file(Path(path)).get(identity(), {})
    _memory = {k: dict(v, cached=True) for k, v in sec.items()}
    _loaded_from = path


def _save(key: str, entry: dict[str, Any]) -> None:
    path = cache_path()
    try:
        sections = _read_file(path)
        sec = sections.setdefault(identity(), {})
        sec[key] = {k: v for k, v in entry.items() if k != "cached"}
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".autotune.", dir=str(path.parent))
        with os.fdopen(fd, "w") as f:
            json.dump({"version": _VERSION, "sections": sections}, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError as e:
        warnings.warn(f"mpsgraph autotune: cannot write {path} ({e}); the choice is kept in "
                      "memory only", RuntimeWarning, stacklevel=3)


def cached_sections() -> dict[str, dict[str, Any]]:
    """Every machine section of the cache file ({} when there is none): identity -> key ->
    entry (choice, times_ms, fallback, tune_ms). `mpsgraph tuning` prints them."""
    return _read_file(cache_path())


def clear(memory_only: bool = True) -> None:
    """Forget the in-memory cache and the events (and delete the file unless memory_only)."""
    global _loaded_from
    with _lock:
        _memory.clear()
        _events.clear()
        _fast.clear()
        _loaded_from = None
        if not memory_only:
            try:
                cache_path().unlink()
            except FileNotFoundError:
                pass


# ----------------------------------------------------------------------------------------------
# timing


def _events_median(run: Callable[[], Any]) -> float:
    ts = []
    for _ in range(REPLAYS):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def default_timer(fn: Callable[[], Any], device: torch.device) -> float:
    """Milliseconds of one call of `fn`. On CUDA device-only: a warm-up call on a side stream
    (it compiles what needs compiling), then `fn` captured in a private CUDA graph and
    replayed REPLAYS times between CUDA events, the median (what a captured executable
    replays; host launch gaps excluded); where the capture fails, REPLAYS eager calls between
    events. On other devices perf_counter around each call."""
    if device.type == "cuda":
        cur = torch.cuda.current_stream(device)
        side = torch.cuda.Stream(device)
        side.wait_stream(cur)
        with torch.cuda.stream(side):
            fn()
        cur.wait_stream(side)
        torch.cuda.synchronize(device)
        graph = None
        if os.environ.get("MPSGRAPH_AUTOTUNE_GRAPH", "1").strip() != "0":
            try:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    fn()
                graph.replay()
                torch.cuda.synchronize(device)
            except Exception:  # noqa: BLE001 - not capturable: time it eagerly
                graph = None
                torch.cuda.synchronize(device)
        try:
            return _events_median(graph.replay if graph is not None else fn)
        finally:
            del graph
    fn()
    ts = []
    for _ in range(REPLAYS):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


_timer: Callable[[Callable[[], Any], torch.device], float] = default_timer


def set_timer(timer: Callable[[Callable[[], Any], torch.device], float] | None) -> None:
    """Replace the timer (tests: a deterministic fake clock); None restores the default."""
    global _timer
    _timer = default_timer if timer is None else timer


# ----------------------------------------------------------------------------------------------
# the choice


def choose(key: str | Callable[[], str],
           candidates: Mapping[str, Callable[[], Any]] | Callable[[], Mapping[str, Any]],
           fallback: str, device: torch.device | str, fast_key: Any = None) -> str:
    """The fastest of `candidates` (name -> a call running that path once) for `key`, tuned at
    the first call of the key, else the cached answer; `fallback` (the hand rule's choice)
    when tuning is off, a CUDA graph is being captured, or every candidate fails. A cached
    answer that is no longer among the candidates is retuned. `key` and `candidates` may be
    callables that build them (only called when needed); with `fast_key` (a hashable tuple
    that determines the key) a decided call answers from a dict."""
    device = torch.device(device)
    if not enabled(device):
        return fallback
    if fast_key is not None:
        hit = _fast.get(fast_key)
        if hit is not None:
            return hit
    if callable(candidates):
        candidates = candidates()
    if len(candidates) <= 1:
        return fallback if fallback in candidates or not candidates else next(iter(candidates))
    if callable(key):
        key = key()
    with _lock:
        choice = _choose(key, candidates, fallback, device)
        if choice is not None and fast_key is not None:
            _fast[fast_key] = choice
        return fallback if choice is None else choice


def _choose(key: str, candidates: Mapping[str, Callable[[], Any]], fallback: str,
            device: torch.device) -> str | None:
    """choose's body (under the lock); None: the fallback, not to be remembered (capture)."""
    _load()
    hit = _memory.get(key)
    if hit is not None and hit["choice"] in candidates:
        if hit.get("cached") and not hit.get("reported"):
            hit["reported"] = True
            _events.append({"key": key, "choice": hit["choice"], "times_ms":
                            hit.get("times_ms", {}), "tune_ms": 0.0, "cached": True})
        return hit["choice"]
    if capturing():
        return None
    t0 = time.perf_counter()
    times: dict[str, float] = {}
    errors: dict[str, str] = {}
    for name, fn in candidates.items():
        try:
            times[name] = float(_timer(fn, device))
        except Exception as e:  # noqa: BLE001 - a candidate that cannot run is no choice
            errors[name] = f"{type(e).__name__}: {str(e)[:120]}"
            if device.type == "cuda":
                try:
                    torch.cuda.synchronize(device)
                except Exception:  # noqa: BLE001
                    pass
    ok = {k: v for k, v in times.items() if math.isfinite(v)}
    if len(ok) > 1:
        best = min(ok.values())
        close = [k for k, v in ok.items() if v <= best * REFINE_RATIO]
        for _ in range(REFINE_ROUNDS if len(close) > 1 else 0):
            for name in close:
                try:
                    t = float(_timer(candidates[name], device))
                except Exception:  # noqa: BLE001 - it ran before: keep that timing
                    continue
                if math.isfinite(t):
                    ok[name] = times[name] = min(ok[name], t)
    tune_ms = (time.perf_counter() - t0) * 1e3
    choice = min(ok, key=ok.get) if ok else fallback
    entry = {"choice": choice, "times_ms": {k: round(v, 5) for k, v in times.items()},
             "fallback": fallback, "tune_ms": round(tune_ms, 3)}
    if errors:
        entry["errors"] = errors
    _memory[key] = entry
    _events.append({"key": key, "choice": choice, "times_ms": entry["times_ms"],
                    "tune_ms": tune_ms, "cached": False})
    if ok:
        _save(key, entry)
    return choice


def lookup(key: str | Callable[[], str], fast_key: Any = None) -> str | None:
    """The cached choice of `key` (memory or file), or None; never tunes (`key` and
    `fast_key` as in `choose`)."""
    if fast_key is not None:
        hit = _fast.get(fast_key)
        if hit is not None:
            return hit
    if callable(key):
        key = key()
    with _lock:
        _load()
        hit = _memory.get(key)
        if hit is None:
            return None
        if fast_key is not None:
            _fast[fast_key] = hit["choice"]
        return hit["choice"]


def events() -> list[dict[str, Any]]:
    """Every decision since the last `clear` / `reset_events`: key, choice, times_ms (per
    candidate), tune_ms (0 for an answer read from the file), cached."""
    with _lock:
        return [dict(e) for e in _events]


def reset_events() -> None:
    with _lock:
        _events.clear()


def tuning_ms() -> float:
    """Total time spent tuning since the last `clear` / `reset_events` (compile-time cost)."""
    with _lock:
        return sum(e["tune_ms"] for e in _events)
