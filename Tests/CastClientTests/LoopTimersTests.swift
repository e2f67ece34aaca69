@testable import CastClient
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// The connections' deadlines, coalesced per event loop: never early, late by at most the grid
/// of their scale, and many deadlines in one slot share one of the loop's timers.
@Suite(.timeLimit(.minutes(1)))
struct LoopTimersTests {
    static let ms: UInt64 = 1_000_000

    @Test func theGridIsAPowerOfTwoMillisecondsAtMostASixteenthOfTheDelay() {
        #expect(LoopTimers.granularity(forDelay: 0) == Self.ms)
        #expect(LoopTimers.granularity(forDelay: 31 * Self.ms) == Self.ms)
        #expect(LoopTimers.granularity(forDelay: 32 * Self.ms) == 2 * Self.ms)
        #expect(LoopTimers.granularity(forDelay: 100 * Self.ms) == 4 * Self.ms)
        #expect(LoopTimers.granularity(forDelay: 12_500 * Self.ms) == 256 * Self.ms)
        #expect(LoopTimers.granularity(forDelay: UInt64.max) == 256 * Self.ms)
        for delay in [0, 1, 999_999, 7 * Self.ms, 100 * Self.ms, 4_096 * Self.ms, 12_500 * Self.ms, 86_400_000 * Self.ms] {
            let grid = LoopTimers.granularity(forDelay: delay)
            #expect(grid == Self.ms || grid <= delay / 16, "delay \(delay)")
            #expect((grid / Self.ms).nonzeroBitCount == 1 && grid % Self.ms == 0, "a power of two milliseconds")
        }
    }

    @Test func aSlotIsNeverEarlyAndAtMostOneGridLate() {
        let now: UInt64 = 5_000_000_123_456
        for delay in [0, 1, 999_999, 7 * Self.ms + 3, 100 * Self.ms, 12_500 * Self.ms + 17] as [UInt64] {
            let slot = LoopTimers.slot(now: now, delay: delay)
            let grid = LoopTimers.granularity(forDelay: delay)
            #expect(slot >= now + delay, "delay \(delay)")
            #expect(slot - (now + delay) < grid, "delay \(delay)")
            #expect(slot % grid == 0)
        }
        #expect(LoopTimers.slot(now: UInt64.max - 5, delay: 10) == UInt64.max, "no overflow")
    }

    /// 500 deadlines spread over 200 ms of a 1 s-scale delay share a few slots of the loop's
    /// timers, every body runs, and none before its deadline.
    @Test func deadlinesOfOneSlotShareOneTimerAndRunNoEarlier() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let early = NIOLockedValueBox(0)
        let ran = NIOLockedValueBox(0)
        let slots = try await loop.submit {
            let timers = LoopTimers.on(loop)
            for i in 0..<500 {
                // 1.0 s + up to 200 ms: a 64 ms grid.
                let delay = Duration.milliseconds(1_000) + .microseconds(i * 400)
                let due = loop.now + .nanoseconds(Int64(delay.clampedNanoseconds))
                timers.schedule(in: delay) {
                    if loop.now < due { early.withLockedValue { $0 += 1 } }
                    ran.withLockedValue { $0 += 1 }
                }
            }
            #expect(LoopTimers.on(loop) === timers, "one instance per loop")
            return timers.pendingSlots
        }.get()
        // Scheduled over ~200 ms of delays on a 64 ms grid: a handful of slots; more when the
        // loop is preempted while it schedules (a busy machine), but far fewer than 500 timers.
        #expect(slots <= 50, "500 deadlines in \(slots) slots")
        #expect(await waitUntil(timeout: .seconds(30)) { ran.withLockedValue { $0 } == 500 })
        #expect(early.withLockedValue { $0 } == 0)
        let left = try await loop.submit { LoopTimers.on(loop).pendingSlots }.get()
        #expect(left == 0)
        try await group.shutdownGracefully()
    }
}
