"""Run a PyTorch function with no GPU and record every op it issues: :func:`capture` returns a :class:`Trace`.

How the program runs:

- **Device tensors are fake tensors on the ``meta`` device.** A CPU-only torch cannot run ``cuda`` fake tensors
  far (``.contiguous()``, ``.to()``, indexing and autograd need a CUDA device guard and fail or abort), so while
  tracing, every ``device="cuda"``, ``torch.device("cuda", i)``, ``.cuda()`` and ``.to("cuda")`` is rewritten
  to ``meta`` (a TorchFunctionMode), and the meta tensors are the GPU's. Host (``cpu``) tensors stay host
  tensors; ops that touch no GPU tensor are host work and are not device ops. ``x.is_cuda`` is True for them
  (code that branches on it takes its GPU path), but ``x.device`` reads ``meta``.
- **INPUTS runs on the meta device** (``torch.device("meta")`` is the default device while it runs, and the
  ``device`` it receives is ``torch.device("cuda")``, rewritten as above): modules and tensors it makes hold no
  data and cost no memory, whatever their size. FUNC runs under ``FakeTensorMode``, which gives every op its
  output's shape, dtype and strides without computing anything; the ops it would only hand to their meta
  kernel run on that kernel directly (:mod:`rooflib.trace.fastfake`: the same outputs, several times faster).
- **A fake process group** (torch's ``fake`` backend, ``world`` ranks, this one ``rank``) answers every c10d
  collective without communicating; ``init_process_group`` and ``destroy_process_group`` called by the program
  are ignored. ``Work.wait()`` is recorded (``c10d.wait``), so the async/wait structure is known.
- **``torch.cuda`` streams, events and synchronisation** are faked (:mod:`rooflib.trace.cuda`).
- **Data-dependent values are unknown**: ``.item()``, ``.tolist()``, ``int(t)``, ``bool(t)`` of a device tensor
  return 1 (1.0, True) per element (and record a host sync); ops whose output shape depends on values take
  their upper bound (``nonzero``, ``masked_select``, boolean indexing: every element selected; ``unique``:
  every element distinct; ``bincount``: ``minlength`` bins) and say so in ``Trace.notes``. Pass split sizes and
  counts as Python values from INPUTS to keep them exact.
- **A run with values** (``values=True``): the same, but device tensors are real host tensors (``cuda`` becomes
  ``cpu``, every host tensor counts as the GPU's) and FUNC computes for real, so sizes that come from tensor
  values (``bincount(...).tolist()`` split sizes, ``int(t.sum())`` allocations, numpy round trips) are exact;
  collectives fill their outputs as if every rank held this rank's data (:mod:`rooflib.trace.values`). It costs
  the host the program's arithmetic: for small or data-dependent programs only.
- ``F.scaled_dot_product_attention`` and ``F.rms_norm`` are recorded whole, as the fused kernel a GPU build runs
  (a CPU-only build would decompose them; the decomposition is not recorded).

Tracing holds global state (the default process group, patched ``torch.cuda`` functions): one trace at a time
per process (a lock serialises them), and none while the process has a real process group.

>>> import torch  # doctest: +SKIP
>>> def mm(a, b):  # doctest: +SKIP
...     return a @ b
>>> t = capture(mm, lambda rank, world, device: (torch.randn(8, 16, device=device),  # doctest: +SKIP
...                                              torch.randn(16, 4, device=device)), world=1)
>>> t.names()  # doctest: +SKIP
['aten.mm']
"""

from __future__ import annotations

import contextlib
import inspect
import os
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from rooflib.trace.autograd import BACKWARD
from rooflib.trace.cuda import fake_cuda
from rooflib.trace.errors import TraceError, import_torch
from rooflib.trace.intercept import Intercepts, make_modes
from rooflib.trace.recorder import _ACTIVE, Recorder
from rooflib.trace.records import Trace

__all__ = ["capture"]

_LOCK = threading.Lock()


def label(fn: Callable[..., Any]) -> str:
    """``file.py:qualname`` of a function, for messages."""
    try:
        where = os.path.basename(inspect.getsourcefile(fn) or "")
    except TypeError:
        where = ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return f"{where}:{name}" if where else str(name)


# --- the process group, patches and the run --------------------------------------------------------------------
@contextlib.contextmanager
def _patched(patches: list[tuple[Any, str, Any]]) -> Iterator[None]:
    saved = [(obj, attr, getattr(obj, attr)) for obj, attr, _ in patches]
    try:
        for obj, attr, value in patches:
            setattr(obj, attr, value)
        yield
    finally:
        for obj, attr, value in reversed(saved):
            setattr(obj, attr, value)


GRAD_MODE_CALL = "python.no_grad"
"""The recorded name of entering a grad-mode context (``@torch.no_grad()``, ``with torch.no_grad():``,
``torch.enable_grad``): host-only Python work, costed as ``HostSpec.ops['python.no_grad']``. A call of
``torch.autograd.backward`` (``Tensor.backward``) or ``torch.autograd.grad`` is recorded as
``python.backward`` (:mod:`rooflib.trace.autograd`)."""


def _grad_mode_patches(torch: Any, recorder: Recorder) -> list[tuple[Any, str, Any]]:
    """Patches recording each entry into a grad-mode context while the recorder is active (host-only calls)."""
    patches: list[tuple[Any, str, Any]] = []
    for cls in (torch.no_grad, torch.enable_grad):
        enter = cls.__enter__

        def entering(self: Any, _enter: Any = enter) -> Any:
            if recorder.active:
                recorder.add(GRAD_MODE_CALL, {})
            return _enter(self)

        patches.append((cls, "__enter__", entering))
    for name in ("backward", "grad"):  # Tensor.backward calls torch.autograd.backward
        start = getattr(torch.autograd, name)

        def starting(*args: Any, _start: Any = start, **kwargs: Any) -> Any:
            if recorder.active and not recorder.suppress:
                recorder.add(BACKWARD, {})
            return _start(*args, **kwargs)

        patches.append((torch.autograd, name, starting))
    return patches


NEW_GROUP_CALL = "python.new_group"
"""The recorded name of a ``dist.new_group`` call made while tracing: host-only work (the ``host`` family's
``new_group`` record), charged to the next op that launches a kernel."""


def _new_group(make: Callable[..., Any], recorder: Recorder) -> Callable[..., Any]:
    def new_group(*args: Any, **kwargs: Any) -> Any:
        if recorder.active and not recorder.suppress:
            recorder.add(NEW_GROUP_CALL, {})
        return make(*args, **kwargs)

    return new_group


@contextlib.contextmanager
def _process_group(torch: Any, world: int, rank: int, recorder: Recorder) -> Iterator[None]:
    import torch.distributed as dist

    if not dist.is_available():
        raise TraceError("this PyTorch build has no torch.distributed; rooflib trace needs it")
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        raise TraceError(
            "torch.distributed is already initialised in this process; rooflib trace runs its own fake process "
            "group, so trace in a process without one"
        )
    # the fake backend serves meta tensors too (the GPU's here): batch_isend_irecv looks it up by device
    capability = dist.Backend.backend_capability
    saved = capability.get("fake")
    capability["fake"] = [*(saved or ()), "meta"]
    try:
        dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world)
    except BaseException:
        _restore(capability, saved)
        raise
    c10d = torch._C._distributed_c10d
    patches: list[tuple[Any, str, Any]] = []
    for cls in (c10d.Work, getattr(c10d, "FakeWork", None)):
        if cls is not None and "wait" in cls.__dict__:
            patches.append((cls, "wait", _waiting(cls.__dict__["wait"], recorder)))

    def ignored(*args: Any, **kwargs: Any) -> None:
        return None

    for module in (dist, dist.distributed_c10d):
        patches += [(module, "init_process_group", ignored), (module, "destroy_process_group", ignored)]
        patches.append((module, "new_group", _new_group(module.new_group, recorder)))
    try:
        with _patched(patches):
            yield
    finally:
        dist.destroy_process_group()
        _restore(capability, saved)


@contextlib.contextmanager
def _active(recorder: Recorder) -> Iterator[None]:
    _ACTIVE.append(recorder)
    try:
        yield
    finally:
        _ACTIVE.remove(recorder)


def _restore(capability: dict[str, Any], saved: Any) -> None:
    if saved is None:
        capability.pop("fake", None)
    else:
        capability["fake"] = saved


def _waiting(original: Any, recorder: Recorder) -> Callable[..., Any]:
    def wait(work: Any, *args: Any, **kwargs: Any) -> Any:
        recorder.wait_work(work)
        return original(work, *args, **kwargs)

    return wait


def _example(
    torch: Any,
    inputs: Callable[..., Any] | None,
    rank: int,
    world: int,
    params: Mapping[str, Any],
    mode: Any,
    device: str = "meta",
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """INPUTS' example arguments (made on the meta device) as ``(args, kwargs)``."""
    if inputs is None:
        if params:
            raise TraceError(f"parameters {sorted(params)} given but no INPUTS function to receive them")
        return (), {}
    try:
        with mode, torch.device(device):
            got = inputs(rank, world, torch.device("cuda"), **params)
    except TraceError:
        raise
    except Exception as exc:
        raise TraceError(f"INPUTS {label(inputs)} raised {type(exc).__name__}: {exc}") from exc
    if isinstance(got, Mapping):
        bad = [k for k in got if not isinstance(k, str)]
        if bad:
            raise TraceError(f"INPUTS {label(inputs)} returned a dict with non-string keys {bad!r}")
        return (), dict(got)
    if isinstance(got, tuple | list):
        return tuple(got), {}
    if isinstance(got, torch.Tensor):
        return (got,), {}
    raise TraceError(
        f"INPUTS {label(inputs)} must return a tuple of arguments or a dict of keyword arguments (tensors and "
        f"plain values), got {type(got).__name__}"
    )


def _where(exc: BaseException, func: Callable[..., Any]) -> str:
    """`` (at file.py:LINE)`` of the deepest frame in the traced function's file, if any."""
    try:
        source = inspect.getsourcefile(func)
    except TypeError:
        return ""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if source and f.filename == source]
    return f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""


def capture(
    func: Callable[..., Any],
    inputs: Callable[..., Any] | None = None,
    *,
    world: int,
    rank: int = 0,
    params: Mapping[str, Any] | None = None,
    name: str | None = None,
    values: bool = False,
    stop_on_values: bool = False,
) -> Trace:
    """Run ``func(*args)`` (or ``func(**kwargs)``), ``inputs(rank, world, device, **params)`` giving the
    arguments, as rank ``rank`` of ``world`` with fake tensors (real host tensors with ``values``) and a fake
    process group; record every op. ``stop_on_values`` (fake tensors only): raise a :class:`TraceError` at the
    first read of a device value or data-dependent shape, for a caller that then reruns with values."""
    if isinstance(world, bool) or not isinstance(world, int) or world < 1:
        raise TraceError(f"world must be a whole number >= 1, got {world!r}")
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world:
        raise TraceError(f"rank must be a whole number in [0, {world}), got {rank!r}")
    if not callable(func):
        raise TraceError(f"the function to trace must be callable, got {type(func).__name__}")
    torch = import_torch()
    from torch._subclasses.fake_tensor import FakeTensorMode

    with _LOCK:
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)  # before the patches: it imports torch._dynamo
        device = "cpu" if values else "meta"
        recorder = Recorder(
            torch, world, rank, values=values, stop_on_values=stop_on_values and not values, fake_mode=fake_mode
        )
        intercepts = Intercepts(torch, recorder, device)
        with (
            _active(recorder),
            _process_group(torch, world, rank, recorder),
            _patched(fake_cuda(torch, recorder.streams, recorder.host_sync, world)),
            _patched(_grad_mode_patches(torch, recorder)),
        ):
            setup_mode, _ = make_modes(torch, intercepts)
            args, kwargs = _example(torch, inputs, rank, world, dict(params or {}), setup_mode, device)
            function_mode, dispatch_mode = make_modes(torch, intercepts)
            with contextlib.nullcontext() if values else fake_mode, function_mode, dispatch_mode:
                recorder.active = True
                try:
                    func(*args, **kwargs)
                except TraceError as exc:  # from the recorder: say where the program asked for it
                    raise TraceError(f"{label(func)}: {exc}{_where(exc, func)}") from exc
                except Exception as exc:
                    raise TraceError(f"{label(func)} raised {type(exc).__name__}: {exc}{_where(exc, func)}") from exc
                finally:
                    recorder.active = False
        precision = torch.get_float32_matmul_precision()
        return Trace(
            name or str(getattr(func, "__name__", "program")),
            world,
            rank,
            tuple(recorder.calls),
            source=label(func),
            float32_matmul="fp32" if precision == "highest" else "tf32",
            notes=tuple(dict.fromkeys([*recorder.notes, *(["run with values on the host"] if values else [])])),
        )
