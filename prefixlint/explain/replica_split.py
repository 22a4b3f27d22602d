"""One job: the replicas of the routing policies that can be split (routing.SPLITTABLE) simulated
as Dask tasks, one chain of tasks per replica, while the router's choices are made in arrival order
in this process (explain/routing.py `Routing`).

A split policy's choice never reads a replica's cache, so replica k's cache sees exactly the
requests routed to it, in their order, whatever the others do: a chain of tasks, each feeding the
replica as the previous one left it (routing.Replica, the ordered run's own code) the next of its
requests, gives the ordered run's hit tokens, and a route's figures are its replicas' sums, as there.

What travels: each batch of BATCH requests' packed ids once (scattered to a worker; the
tasks of the replicas that got some of them fetch the batch there) and, per replica, the indices
of its requests in the batch. The replica's cache never travels: each chain is placed on one
worker (the replicas dealt over the workers in turn; another worker only if that one left), and
only its two totals come back. A bounded number of batches are in flight, so a replica slower
than the log does not pile the log up in memory.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from prefixlint.engines import Engine
from prefixlint.explain.dask_stage import Connection
from prefixlint.explain.routing import Replica

# Requests per batch: a scatter and a task per replica that got some of them cost the driver about
# what the ordered run spends on a few hundred requests of these policies (bench/routing_split.py:
# the driver's CPU 1.4x the ordered run's at 256 and 512, 1.1-1.2x at 1,024 to 4,096).
BATCH = 1024


def replay(replica: Replica, seqs: list[bytes], indices: list[int]) -> Replica:
    """A Dask task: `replica` fed the batch's requests at `indices`, in order. It is changed in
    place, not copied (a copy of a cache per batch): only a chain's latest future is ever read."""
    for index in indices:
        replica.feed(seqs[index])
    return replica


def tally(replica: Replica) -> tuple[int, int]:
    """A Dask task: the replica's (hit tokens, tokens)."""
    return replica.hit_tokens, replica.tokens


class ReplicaSplit:
    """`count` replica simulations on the connection's workers, fed by `send` in arrival order."""

    def __init__(self, dask: Connection, engine: Engine, capacity: int, count: int) -> None:
        self.client = dask.client
        workers = dask.addresses
        self.homes = [[workers[k % len(workers)]] for k in range(count)]
        # Each replica built on its worker: the latest future of each chain.
        self.chains = [self._submit(k, Replica, engine, capacity) for k in range(count)]
        self.window = 2 * len(workers) + 2  # batches in flight
        self.in_flight: deque[list[Any]] = deque()
        self.seqs: list[bytes] = []
        self.picks: list[list[int]] = [[] for _ in range(count)]

    def _submit(self, k: int, func: Any, *args: Any) -> Any:
        # Loose restrictions: replica k's worker, another only if it is gone.
        return self.client.submit(func, *args, workers=self.homes[k], allow_other_workers=True, pure=False)

    def send(self, replicas: list[int], seq: bytes) -> None:
        """One request (its packed ids), sent to each of `replicas` (one per split route)."""
        for k in replicas:
            self.picks[k].append(len(self.seqs))
        self.seqs.append(seq)
        if len(self.seqs) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        if not self.seqs:
            return
        from distributed import wait

        (batch,) = self.client.scatter([self.seqs], hash=False)
        sent = []
        for k, indices in enumerate(self.picks):
            if indices:
                self.chains[k] = self._submit(k, replay, self.chains[k], batch, indices)
                sent.append(self.chains[k])
        self.seqs, self.picks = [], [[] for _ in self.picks]
        self.in_flight.append(sent)
        if len(self.in_flight) > self.window:
            wait(self.in_flight.popleft())

    def totals(self) -> list[tuple[int, int]]:
        """Every replica's (hit tokens, tokens), once the requests sent so far are simulated."""
        self._flush()
        self.in_flight.clear()
        return self.client.gather([self._submit(k, tally, chain) for k, chain in enumerate(self.chains)])
