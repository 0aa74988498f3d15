"""The store's writes as a process to kill: batches of observations through
``MemoryStore.add_observations``, each batch's ids printed once the call has returned.

A printed batch is acknowledged: it must survive any kill that comes after it. Batches depend only
on ``--seed`` and their number, so running the driver again with the same arguments re-adds the
same observations, which the store must write once. Dates span the last 90 days, so old days keep
appearing in ``observations.md`` for ``om reflect`` to archive.

Usage: python crash_driver.py HOME --seed S --batches N --size K
"""

from __future__ import annotations

import argparse
import random
from datetime import date, timedelta

from obsmem.memory.model import Observation, Provenance
from obsmem.memory.store import MemoryStore, new_observation

_WORDS = ("alder", "birch", "cedar", "larch", "maple", "rowan", "spruce", "willow", "hazel", "yew")


def batch(seed: int, number: int, size: int) -> list[Observation]:
    """The observations of batch ``number`` (the same on every run)."""
    rng = random.Random(f"{seed}-{number}")
    today = date.today()
    out = []
    for n in range(size):
        day = (today - timedelta(days=rng.randrange(0, 90))).isoformat()
        words = " ".join(rng.choice(_WORDS) + str(rng.randrange(10_000)) for _ in range(6))
        out.append(
            new_observation(
                f"Driver wrote {words} as d{seed}b{number}n{n}",
                date=day,
                time=f"{rng.randrange(24):02d}:{rng.randrange(60):02d}",
                type="fact",
                importance=0.5,
                confidence=0.9,
                provenance=Provenance(
                    path=f"/driver/{seed}.jsonl", line_start=number * size + n + 1, agent="driver"
                ),
            )
        )
    return out


def main() -> None:
    """Write the batches, printing ``ack <ids>`` after each."""
    parser = argparse.ArgumentParser()
    parser.add_argument("home")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--size", type=int, default=10)
    args = parser.parse_args()
    store = MemoryStore(args.home)
    print("ready", flush=True)
    for number in range(args.batches):
        items = batch(args.seed, number, args.size)
        store.add_observations(items)
        print("ack", *(o.id for o in items), flush=True)


if __name__ == "__main__":
    main()
