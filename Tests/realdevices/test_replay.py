"""Every message of the corpus of real Cast messages (Tests/Fixtures/real-devices), replayed by
cast-sim as the real device sent it, and what the bridge publishes for it checked field by field
against the contract (each fixture's `expect`; README.md here)."""

from __future__ import annotations

from runner import Replay


def test_replay(case, env):
    Replay(env, case).run()
