"""What the executors' tests share: a progress display that remembers what it was told."""

from __future__ import annotations

import pytest


class Recording:
    """A progress display that remembers what it was told, and the most runs it saw going at once."""

    def __init__(self):
        self.events, self.active, self.most_active = [], set(), 0

    def start(self, total_runs):
        self.events.append(("start", total_runs))

    def run_started(self, spec):
        self.active.add(spec.run_id)
        self.most_active = max(self.most_active, len(self.active))
        self.events.append(("run", spec.run_id))

    def step(self, spec, done, total):
        self.events.append(("step", spec.run_id, done, total))

    def run_finished(self, spec, ok):
        self.active.discard(spec.run_id)
        self.events.append(("finished", spec.run_id, ok))

    def stop(self):
        self.events.append(("stop",))


@pytest.fixture
def recording() -> Recording:
    return Recording()
