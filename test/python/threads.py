"""Runs a test's worker on several threads at once. An assertion failing in
a thread is invisible to pytest, so the first exception any worker raised
is raised again in the calling thread once all have finished."""

from __future__ import annotations

import threading


def run_in_threads(worker, count):
    """Calls worker(t) for t in range(count), each on its own thread."""
    errors = []

    def guarded(t):
        try:
            worker(t)
        except BaseException as e:  # noqa: BLE001 -- re-raised below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
