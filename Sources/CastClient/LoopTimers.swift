import NIOCore
import NIOPosix

/// The deadlines of the Cast connections that share an event loop, coalesced into a few of the
/// loop's own timers.
///
/// Every connection has a deadline most of the time (the next look at a device's heartbeat, a
/// request's timeout, the handshake's limit, the next reconnect). As one NIO scheduled task each,
/// ten thousand devices kept ten thousand tasks in each loop's timer heap: every timer that fired
/// cost a pop and a push of that heap, every cancelled one a linear search through it (NIO finds
/// the task to cancel by scanning), and every distinct deadline a wake-up of the loop. A profile
/// of 1000 idle devices put a tenth of the daemon's CPU in that heap.
///
/// Here a deadline is rounded up to a grid of its own scale (a power of two milliseconds, at
/// most 1/16 of the delay and at most 256 ms), and all deadlines that meet on the same point
/// share one NIO task: a 12.5 s look fires at most 256 ms late, together with every other look
/// due in that slot; a 100 ms request timeout at most 4 ms late. Nothing is ever early. A timer
/// is not cancelled here: its owner keeps a token and ignores a call that is no longer wanted
/// (a superseded entry stays until its slot fires, bounded by the longest delay in use).
///
/// The bodies of a slot run one pass of the selector after it fires (1 ms later): after a long
/// turn of the loop a device's bytes may wait unread, and a deadline is to be judged on what
/// arrived, not on what was read.
///
/// Not `Sendable` in use: one instance per thread, reached through `on(_:)` from the loop's own
/// thread (`@unchecked` only so that the thread-specific slot can be a static). Both entry
/// points check that they run on the loop, in release builds too (as `NIOLoopBoundBox` does).
final class LoopTimers: @unchecked Sendable {
    private static let perThread = ThreadSpecificVariable<LoopTimers>()

    /// The coalesced timers of `loop`; call on `loop`.
    static func on(_ loop: any EventLoop) -> LoopTimers {
        loop.preconditionInEventLoop()
        if let timers = perThread.currentValue, timers.loop === loop { return timers }
        // A thread runs one event loop; a new loop on this thread (tests start and stop groups)
        // gets a new instance, while the old one's slots still fire on the loop they were made on.
        let timers = LoopTimers(loop: loop)
        perThread.currentValue = timers
        return timers
    }

    private let loop: any EventLoop
    /// Slot (the loop's uptime in nanoseconds) → what runs then.
    private var slots: [UInt64: [() -> Void]] = [:]

    private init(loop: any EventLoop) {
        self.loop = loop
    }

    /// Slots with something due, for tests and gauges.
    var pendingSlots: Int { slots.count }

    /// The grid a deadline `nanoseconds` away is rounded up to: the largest power of two
    /// milliseconds not above 1/16 of it, between 1 and 256 ms.
    static func granularity(forDelay nanoseconds: UInt64) -> UInt64 {
        let millisecond: UInt64 = 1_000_000
        var grid = millisecond
        while grid < 256 * millisecond, grid * 2 <= nanoseconds / 16 { grid *= 2 }
        return grid
    }

    /// The slot a deadline `delay` after `now` (the loop's uptime in nanoseconds) runs in.
    static func slot(now: UInt64, delay: UInt64) -> UInt64 {
        let grid = granularity(forDelay: delay)
        let (at, overflow) = now.addingReportingOverflow(delay)
        guard !overflow, at <= UInt64.max - grid else { return UInt64.max }
        return (at + grid - 1) / grid * grid
    }

    /// Runs `body` on the loop no earlier than `delay` from now (see the type's note for how late).
    func schedule(in delay: Duration, _ body: @escaping () -> Void) {
        loop.preconditionInEventLoop()
        let nanoseconds = UInt64(max(0, delay.clampedNanoseconds))
        let slot = Self.slot(now: loop.now.uptimeNanoseconds, delay: nanoseconds)
        if slots[slot] != nil {
            slots[slot, default: []].append(body)
            return
        }
        slots[slot] = [body]
        let deadline = NIODeadline.uptimeNanoseconds(min(slot, UInt64(Int64.max)))
        loop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            guard let bodies = slots.removeValue(forKey: slot) else { return }
            loop.assumeIsolated().scheduleTask(in: .milliseconds(1)) {
                for body in bodies { body() }
            }
        }
    }
}
