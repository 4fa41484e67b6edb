"""A stand-in for the parts of ``torch.cuda`` a traced program touches: streams, events, synchronisation and
the current device, so a program written for GPUs runs unchanged on a CPU-only torch.

While a trace runs, ``torch.cuda.Stream``, ``Event``, ``stream``, ``current_stream``, ``default_stream``,
``set_stream``, ``synchronize``, ``set_device``, ``current_device``, ``device_count`` and the ``nvtx`` ranges are
replaced by the fakes below (and restored afterwards). The fakes record what the program asked for:

- every op is issued to the current stream (``compute`` is the default stream; side streams are ``stream1``,
  ``stream2``, ... in the order the program makes them);
- ``a.wait_stream(b)``, ``a.wait_event(e)`` and ``e.wait(a)`` make the next op on ``a`` wait for the last op
  issued on ``b`` (or recorded by ``e``), as ``cudaStreamWaitEvent`` does;
- ``torch.cuda.synchronize()``, ``Stream.synchronize()`` and ``Event.synchronize()`` are host waits.

Names imported before the trace (``from torch.cuda import Stream`` at the top of a module) keep the real classes,
which need a GPU: use ``torch.cuda.Stream`` in traced programs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["FakeEvent", "FakeStream", "Streams", "fake_cuda"]

DEFAULT_STREAM = "compute"


class Streams:
    """The streams of a trace: the current one, the last call issued to each, and waits not yet attached to a
    call (they attach to the next call issued to their stream)."""

    def __init__(self) -> None:
        self.current = DEFAULT_STREAM
        self.last: dict[str, int] = {}
        self.pending: dict[str, set[int]] = {}
        self._made = 0
        self.objects: dict[str, FakeStream] = {}
        self.host_sync: Callable[[tuple[int | None, ...]], None] = lambda calls: None

    def new_name(self) -> str:
        self._made += 1
        return f"stream{self._made}"

    def issue(self, index: int) -> tuple[str, tuple[int, ...]]:
        """Issue call ``index`` to the current stream: ``(stream, calls it waits for)``."""
        stream = self.current
        after = tuple(sorted(self.pending.pop(stream, ())))
        self.last[stream] = index
        return stream, after

    def wait(self, stream: str, call: int | None) -> None:
        if call is not None:
            self.pending.setdefault(stream, set()).add(call)

    def stream(self, name: str) -> FakeStream:
        if name not in self.objects:
            self.objects[name] = FakeStream(self, _name=name)
        return self.objects[name]


class FakeStream:
    """``torch.cuda.Stream`` during a trace (any constructor arguments are accepted and ignored)."""

    def __init__(self, streams: Streams, *args: Any, _name: str | None = None, **kwargs: Any) -> None:
        self._streams = streams
        self.name = _name or streams.new_name()
        self.priority = int(kwargs.get("priority", 0))
        self.cuda_stream = 0
        streams.objects.setdefault(self.name, self)
        self._saved: list[str] = []

    def wait_stream(self, other: FakeStream) -> None:
        self._streams.wait(self.name, self._streams.last.get(other.name))

    def wait_event(self, event: FakeEvent) -> None:
        self._streams.wait(self.name, event.call)

    def record_event(self, event: FakeEvent | None = None) -> FakeEvent:
        event = event or FakeEvent(self._streams)
        event.record(self)
        return event

    def synchronize(self) -> None:
        self._streams.host_sync((self._streams.last.get(self.name),))

    def query(self) -> bool:
        return True

    def __enter__(self) -> FakeStream:
        self._saved.append(self._streams.current)
        self._streams.current = self.name
        return self

    def __exit__(self, *exc: object) -> None:
        self._streams.current = self._saved.pop()

    def __repr__(self) -> str:
        return f"<rooflib fake CUDA stream {self.name!r}>"


class FakeEvent:
    """``torch.cuda.Event`` during a trace: remembers the last op of the stream it was recorded on."""

    def __init__(self, streams: Streams, *args: Any, **kwargs: Any) -> None:
        self._streams = streams
        self.call: int | None = None

    def record(self, stream: FakeStream | None = None) -> None:
        name = stream.name if stream is not None else self._streams.current
        self.call = self._streams.last.get(name)

    def wait(self, stream: FakeStream | None = None) -> None:
        self._streams.wait(stream.name if stream is not None else self._streams.current, self.call)

    def synchronize(self) -> None:
        self._streams.host_sync((self.call,))

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: FakeEvent) -> float:
        return 0.0


def _ignored() -> Callable[..., None]:
    def ignored(*args: Any, **kwargs: Any) -> None:
        return None

    return ignored  # a new function per patched name (torch._dynamo refuses one object under two names)


def _nvtx(cuda: Any) -> list[tuple[Any, str, Any]]:
    nvtx = getattr(cuda, "nvtx", None)
    if nvtx is None:
        return []

    @contextlib.contextmanager
    def nvtx_range(*args: Any, **kwargs: Any) -> Iterator[None]:
        yield

    quiet = [(nvtx, name, _ignored()) for name in ("range_push", "range_pop", "mark")]
    return [*quiet, (nvtx, "range", nvtx_range)]


def fake_cuda(
    torch: Any, streams: Streams, host_sync: Callable[[tuple[int | None, ...]], None], world: int
) -> list[tuple[Any, str, Any]]:
    """``(object, attribute, fake)`` triples to patch onto ``torch.cuda`` for one trace.

    ``host_sync(calls)`` records a host wait for ``calls`` (``None`` entries: nothing issued there yet).
    """
    streams.host_sync = host_sync

    def make_stream(*args: Any, **kwargs: Any) -> FakeStream:
        return FakeStream(streams, *args, **kwargs)

    def make_event(*args: Any, **kwargs: Any) -> FakeEvent:
        return FakeEvent(streams, *args, **kwargs)

    @contextlib.contextmanager
    def stream(s: FakeStream | None) -> Iterator[FakeStream | None]:
        if s is None:
            yield None
            return
        with s:
            yield s

    def current_stream(device: Any = None) -> FakeStream:
        return streams.stream(streams.current)

    def default_stream(device: Any = None) -> FakeStream:
        return streams.stream(DEFAULT_STREAM)

    def set_stream(s: FakeStream) -> None:
        streams.current = s.name

    def synchronize(device: Any = None) -> None:
        host_sync(tuple(streams.last.values()))

    cuda = torch.cuda
    return [
        (cuda, "Stream", make_stream),
        (cuda, "Event", make_event),
        (cuda, "stream", stream),
        (cuda, "current_stream", current_stream),
        (cuda, "default_stream", default_stream),
        (cuda, "set_stream", set_stream),
        (cuda, "synchronize", synchronize),
        (cuda, "set_device", _ignored()),
        (cuda, "current_device", lambda: 0),
        (cuda, "device_count", lambda: world),
        *_nvtx(cuda),
    ]
