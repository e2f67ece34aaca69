"""How far the bridge's clock is from Home Assistant's, measured from the bridge's own timestamps.

A sample is `bridge time - Home Assistant time` at the moment a *fresh* message arrived: one the
bridge has just published because something happened (an event, a document whose content
changed). Retained replays and republished documents carry the time of an older change and would
read as a clock far behind, so the caller only offers fresh ones, and the estimate is the median
of the last samples (one late message among them does not move it).

It puts a command's deadline (`"expires"`) on the bridge's clock (until it is measured, the
deadline is relative: seconds the bridge counts from when it receives the command), corrects the
times the bridge stamps that Home Assistant reads against its own (a media position's
`position_updated_at`), and a skew beyond `CLOCK_SKEW_LIMIT` raises a repair issue.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime, timedelta
from statistics import median
from typing import Final

# Samples kept (the newest), and the fewest that give an estimate.
CLOCK_SAMPLES: Final = 15
CLOCK_MIN_SAMPLES: Final = 3
# A sample further off than this is not a clock: a corrupt or hostile timestamp.
CLOCK_SAMPLE_BOUND: Final = 366 * 86_400.0
# Below this the difference is network latency and clock jitter: times are used as stamped.
CLOCK_CORRECTION_MIN: Final = 1.0


class ClockSkew:
    """The median of recent `bridge - Home Assistant` clock samples, in seconds."""

    def __init__(self, size: int = CLOCK_SAMPLES, minimum: int = CLOCK_MIN_SAMPLES) -> None:
        self._samples: deque[float] = deque(maxlen=size)
        self._minimum = minimum

    def add(self, bridge_time: datetime, received_at: datetime) -> bool:
        """Add one sample (`bridge_time` stamped by the bridge just before it published what
        arrived at `received_at` by Home Assistant's clock); False when it is out of bounds."""
        offset = (bridge_time - received_at).total_seconds()
        if not -CLOCK_SAMPLE_BOUND < offset < CLOCK_SAMPLE_BOUND:
            return False
        self._samples.append(offset)
        return True

    @property
    def samples(self) -> int:
        return len(self._samples)

    @property
    def seconds(self) -> float | None:
        """The bridge's clock minus Home Assistant's; None until enough samples came."""
        if len(self._samples) < self._minimum:
            return None
        return float(median(self._samples))

    def to_local(self, bridge_time: datetime) -> datetime:
        """A time the bridge stamped, on Home Assistant's clock."""
        skew = self.seconds
        if skew is None or abs(skew) < CLOCK_CORRECTION_MIN:
            return bridge_time
        try:
            return bridge_time - timedelta(seconds=skew)
        except OverflowError:  # a hostile stamp at the edge of datetime's range: left as it is
            return bridge_time

    def to_bridge(self, local_time: datetime) -> datetime:
        """A time on Home Assistant's clock, on the bridge's."""
        skew = self.seconds
        if skew is None or abs(skew) < CLOCK_CORRECTION_MIN:
            return local_time
        try:
            return local_time + timedelta(seconds=skew)
        except OverflowError:
            return local_time

    def clear(self) -> None:
        self._samples.clear()
