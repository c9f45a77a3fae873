"""Load from a Dask cluster: a load's shares on Dask workers, merged as `--workers` merges.

`--cluster local:N` starts a `LocalCluster` of N worker processes (one thread
each) for the command and stops it after; `--cluster tcp://HOST:PORT` uses a
running scheduler, whose workers must have loadcmp installed. Each share runs
in a worker as it would in a `--workers` process (`workers.run_here`: one event
loop, pinned where asked). All start at one planned instant: the parent plans
it on its monotonic clock, turns it into wall-clock time, and each worker gets
it corrected by its own clock's offset (measured here, half a round trip
exact), which the run stores. Live lines come back through a Dask queue, a
stop goes out through a Dask event, and a worker that dies or leaves the
scheduler mid-load makes the load partial, naming what was lost; it is never
silently fewer requests. Dask is imported only when a cluster is asked for.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ...errors import LoadcmpError, LoadError, UsageError
from ...units import parse_cluster
from ..driver import Live, LiveFn, LoadSpec, now
from .limits import raise_nofile
from ..record.recorder import Result
from .workers import SPAWN_DELAY, Gathered, Stopper, pin, run_here, sum_live

if TYPE_CHECKING:  # distributed: only when a cluster is asked for
    from distributed import Client, Event, Future, LocalCluster, Queue

log = logging.getLogger("loadcmp")

CONNECT_TIMEOUT_S = 5.0
"""How long to wait for a scheduler before saying it cannot be reached."""
CHECK_EVERY_S = 0.5
"""How often the parent asks the scheduler which workers are still there."""


class DaskFleet:
    """A Dask cluster as a `workers.Fleet`: open it once per command (`with`), run many loads."""

    start_delay = SPAWN_DELAY

    def __init__(self, address: str) -> None:
        self.address, self.n_local = parse_cluster(address)
        self.client: Client | None = None
        self.local: LocalCluster | None = None
        self.workers: list[str] = []
        self.hosts: dict[str, str] = {}
        self.offsets: dict[str, float] = {}
        """Each worker's wall clock minus ours (seconds), measured before each load."""

    @property
    def open_client(self) -> Client:
        """The client, between `with`'s enter and exit (a fleet is used only there)."""
        if self.client is None:
            raise LoadError(f"the Dask cluster {self.address} is not open")
        return self.client

    @property
    def size(self) -> int:
        """The workers there are now (asked each time: `run_load` splits the load by it)."""
        self.refresh()
        return len(self.workers)

    def __enter__(self) -> DaskFleet:
        from distributed import Client, LocalCluster

        try:
            if self.n_local is not None:
                self.local = LocalCluster(n_workers=self.n_local, threads_per_worker=1, processes=True,
                                          host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                          silence_logs=logging.ERROR)
                self.client = Client(self.local)
            else:
                self.client = Client(self.address, timeout=CONNECT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - Dask raises OSError, TimeoutError, RuntimeError ("Nanny failed to start")
            self.close()
            raise LoadError(f"cannot reach the Dask scheduler at {self.address}: {type(e).__name__}: {e}") from None
        try:
            self.refresh()
            if not self.workers:
                raise LoadError(f"the Dask scheduler at {self.address} has no workers")
        except BaseException:
            self.close()
            raise
        return self

    def refresh(self) -> None:
        """The workers the scheduler has now (a nanny restarts a dead one under a new address),
        their hosts, and the clock offsets of any new ones."""
        info = self.open_client.scheduler_info()["workers"]
        self.workers = sorted(info)
        self.hosts = {w: info[w].get("host", "") for w in self.workers}
        for w in self.workers:
            if w not in self.offsets:
                self.measure_offset(w)

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for thing in (self.client, self.local):
            if thing is not None:
                with contextlib.suppress(Exception):
                    thing.close()
        self.client = self.local = None

    @property
    def dashboard(self) -> str | None:
        """The Dask dashboard's address (None when bokeh is missing on the scheduler)."""
        with contextlib.suppress(Exception):
            return str(self.open_client.dashboard_link) or None
        return None

    def elsewhere(self) -> list[str]:
        """Workers on another machine than this one's loopback (their host addresses)."""
        return sorted({h for h in self.hosts.values() if not is_loopback(h)})

    def check_reach(self, target_host: str) -> None:
        """A target on loopback is this machine's only: workers elsewhere would load their own."""
        if is_loopback(target_host) and self.elsewhere():
            raise UsageError(f"the target {target_host} is this machine's loopback, but {self.address} has workers on "
                             f"{', '.join(self.elsewhere())}, which would load their own; give an address they reach "
                             "(run: put the stacks there with --docker-host and --server-address)")

    def describe(self) -> dict[str, Any]:
        """For run.json's provenance: the scheduler, its workers and their clock offsets."""
        return {
            "address": self.address,
            "scheduler": self.client.scheduler.address if self.client is not None else None,
            "dashboard": self.dashboard,
            "workers": [{"address": w, "host": self.hosts.get(w, ""), "clock_offset_s": self.offsets.get(w)}
                        for w in self.workers],
        }

    def measure_offset(self, w: str) -> float:
        """A worker's wall clock minus ours, from one round trip (the middle of it)."""
        t0 = time.time()
        theirs = self.open_client.run(time.time, workers=[w])[w]
        t1 = time.time()
        self.offsets[w] = round(theirs - (t0 + t1) / 2, 6)
        return self.offsets[w]

    def run_shares(self, shares: list[LoadSpec], t_load0: float, cpus: str | None, live: LiveFn | None,
                   stopper: Stopper) -> Gathered:
        from distributed import Event, Queue

        if len(shares) > len(self.workers):
            raise LoadError(f"the Dask cluster has {len(self.workers)} workers left, the load needs {len(shares)}")
        for w in self.workers[:len(shares)]:  # clocks drift: measured again before each load
            self.measure_offset(w)
        tag = uuid.uuid4().hex[:12]
        q, stop = Queue(f"loadcmp-live-{tag}", client=self.client), Event(f"loadcmp-stop-{tag}", client=self.client)
        t_wall = time.time() + (t_load0 - now())
        futures = {}
        for share, w in zip(shares, self.workers, strict=False):
            futures[share.worker_index] = (w, self.open_client.submit(
                _share, share, t_wall + self.offsets[w], cpus, q.name, stop.name, key=f"loadcmp-{tag}-{w}",
                workers=[w], allow_other_workers=False, pure=False, retries=0))
        try:
            return self._gather(futures, shares, t_load0, q, stop, live, stopper)
        finally:
            with contextlib.suppress(Exception):
                stop.set()
            for _, f in futures.values():
                with contextlib.suppress(Exception):
                    f.cancel()

    def _gather(self, futures: dict[int, tuple[str, Future]], shares: list[LoadSpec], t_load0: float, q: Queue,
                stop: Event, live: LiveFn | None, stopper: Stopper) -> Gathered:
        """Wait for every share's result, passing on live lines, a stop, and the loss of a worker."""
        got = Gathered()
        pending = dict(futures)
        latest: dict[int, Live] = {}
        seen: dict[int, float] = {}
        spec = shares[0]
        deadline = t_load0 + spec.warmup + spec.duration + 30
        next_check = now() + CHECK_EVERY_S
        while pending:
            if stopper.requested:
                stop.set()
            time.sleep(0.1)
            with contextlib.suppress(TimeoutError):
                fresh = q.get(batch=True) or []  # what is there, without waiting
                for lv in fresh:
                    latest[lv.worker] = lv
                    seen[lv.worker] = lv.elapsed
                if live is not None and fresh and len(latest) == len(futures):
                    live(sum_live(list(latest.values())))
            for i, (w, f) in list(pending.items()):
                if f.status == "finished":
                    got.results[i] = f.result()
                    del pending[i]
                elif f.status == "error":
                    got.failures.append(_failed(i, w, f.exception()))
                    del pending[i]
            if now() >= next_check and pending:
                next_check = now() + CHECK_EVERY_S
                present = set(self.open_client.scheduler_info()["workers"])
                for i, (w, f) in list(pending.items()):
                    if w not in present or f.status in ("cancelled", "lost"):
                        got.lost.append(_lost_text(w, self.hosts.get(w, ""), shares[i], seen.get(i)))
                        del pending[i]
            if now() > deadline:
                for i, (w, _) in pending.items():
                    got.lost.append(f"Dask worker {w} sent no result within 30 s of the window's end; the requests "
                                    f"of its {shares[i].schedule.connections:,} clients are missing from these figures")
                break
        return got


def is_loopback(host: str) -> bool:
    return host.startswith("127.") or host in ("localhost", "::1")


def _lost_text(worker: str, host: str, share: LoadSpec, last_seen: float | None) -> str:
    when = (f"after its last report {last_seen:.1f} s into the window" if last_seen is not None and last_seen >= 0
            else "before it reported from the window")
    return (f"Dask worker {worker}{f' on {host}' if host else ''} left the cluster {when}; the requests of its "
            f"{share.schedule.connections:,} clients are missing from these figures")


def _failed(index: int, worker: str, e: BaseException | None) -> LoadcmpError:
    if isinstance(e, LoadcmpError):
        return e
    return LoadError(f"load share {index} on Dask worker {worker} failed: {type(e).__name__}: {e}")


SCHEDULER_GONE_S = 5.0
"""How long a share's stop watch waits for a scheduler that does not answer before it stops the share."""


def forward_live(lines: queue.SimpleQueue[Live | None], q: Queue, dropped: list[str]) -> int:
    """The share's live lines to the scheduler's queue, from a thread (the load's loop must not wait
    for the scheduler); returns how many it did not take, and keeps the first error in `dropped`."""
    lost = 0
    while (lv := lines.get()) is not None:
        try:
            q.put(lv)
        except Exception as e:  # noqa: BLE001 - Dask's comm errors have no common base; counted, said once
            lost += 1
            if not dropped:
                dropped.append(f"{type(e).__name__}: {e}")
            dropped[1:] = [str(lost)]
    return lost


def watch_stop(stop: Event, stopper: Stopper, done: threading.Event, gone: list[str]) -> None:
    """Pass the parent's stop (a Dask Event) on to the share. A scheduler that stops answering for
    SCHEDULER_GONE_S stops the share, since nothing it measures could be handed back, and says why
    in `gone`: the watch neither spins on the error nor swallows the stop."""
    answered = now()  # a call to a gone scheduler may itself take Dask's connect timeout: count from here
    while not done.is_set():
        try:
            if stop.wait(timeout=0.2):
                stopper.stop()
                return
            answered = now()
        except Exception as e:  # noqa: BLE001 - as above: the scheduler is gone or unreachable
            if now() - answered >= SCHEDULER_GONE_S:
                gone.append(f"{type(e).__name__}: {e}")
                stopper.stop()
                return
            done.wait(0.2)


def _share(spec: LoadSpec, t_wall: float, cpus: str | None, queue_name: str, stop_name: str) -> Result:
    """A Dask task: one share of the load on this worker, from the wall-clock instant `t_wall`."""
    from distributed import Event, Queue, get_client

    client = get_client()
    q, stop = Queue(queue_name, client=client), Event(stop_name, client=client)
    t_load0 = now() + (t_wall - time.time())
    stopper = Stopper()
    raise_nofile(spec.schedule.connections)
    pin(cpus)
    lines: queue.SimpleQueue[Live | None] = queue.SimpleQueue()
    done = threading.Event()
    dropped: list[str] = []  # the first error of the live lines the scheduler did not take
    gone: list[str] = []  # the stop watch lost the scheduler: why

    threads = [threading.Thread(target=forward_live, args=(lines, q, dropped), daemon=True),
               threading.Thread(target=watch_stop, args=(stop, stopper, done, gone), daemon=True)]
    for t in threads:
        t.start()
    try:
        result = run_here(spec, t_load0, lines.put, stopper)
    finally:
        done.set()
        lines.put(None)
        for t in threads:
            t.join(timeout=2)
    if gone:
        result.warnings.append(f"the Dask scheduler stopped answering for {SCHEDULER_GONE_S:g} s ({gone[0]}): "
                               "this share stopped early")
    if dropped:
        result.warnings.append(f"{dropped[-1] if len(dropped) > 1 else 1} live line(s) of this share could not be "
                               f"sent to the scheduler ({dropped[0]}): the live display missed them; the figures "
                               "are whole")
    return result


@contextlib.contextmanager
def open_fleet(address: str | None, say: Callable[[str], object] | None = None) -> Iterator[DaskFleet | None]:
    """The cluster of `--cluster` for the length of a command (None: no cluster), saying where its dashboard is."""
    if address is None:
        yield None
        return
    with DaskFleet(address) as fleet:
        if say is not None:
            hosts = sorted(set(fleet.hosts.values()))
            say(f"Dask cluster {address}: {fleet.size} workers on {', '.join(hosts) or 'unknown hosts'}; "
                f"dashboard {fleet.dashboard or 'not available (bokeh is not installed there)'}")
        yield fleet
