import NIOCore
import Synchronization

/// Bounds the TLS handshakes in flight across a fleet of clients that share it. A handshake is
/// the expensive part of a connect (key exchange, certificate parsing: hundreds of microseconds
/// of CPU on each side); ten thousand devices starting at once would otherwise queue ten
/// thousand of them on the event loops, and the loop the core shares, the MQTT side and the
/// commands to devices already online would wait behind them. The TCP connect itself is not
/// gated (it costs nothing here, and a device that is switched off would hold a place for the
/// whole connect timeout); the handshake starts when a place is free and gives it back when it
/// ends, whichever way (done, failed, timed out, abandoned) — with device authentication, when
/// the challenge is answered (or not), as the device signs it during the connect too.
///
/// Waiters are served in order, each on its own event loop.
public final class HandshakeGate: Sendable {
    /// At most this many handshakes at once.
    public let limit: Int

    private struct State {
        var inFlight = 0
        var peak = 0
        var granted = 0
        var waiting = CircularBuffer<(loop: any EventLoop, start: @Sendable () -> Void)>()

        mutating func take() {
            inFlight += 1
            granted += 1
            peak = max(peak, inFlight)
        }
    }

    private let state = Mutex(State())

    public init(limit: Int) {
        precondition(limit > 0, "a handshake gate needs room for at least one handshake")
        self.limit = limit
    }

    /// Handshakes in flight now, the most there ever were at once, and how many were started.
    public var counts: (inFlight: Int, peak: Int, granted: Int, waiting: Int) {
        state.withLock { ($0.inFlight, $0.peak, $0.granted, $0.waiting.count) }
    }

    /// Runs `start` on `loop` once a place is free (at once when one is). `start` owns the place:
    /// every call is matched by exactly one `leave()`.
    public func enter(on loop: any EventLoop, _ start: @escaping @Sendable () -> Void) {
        let now: Bool = state.withLock { s in
            guard s.inFlight < limit else {
                s.waiting.append((loop, start))
                return false
            }
            s.take()
            return true
        }
        if now { loop.execute(start) }
    }

    /// A handshake ended: its place goes to the next waiter.
    public func leave() {
        let next: (loop: any EventLoop, start: @Sendable () -> Void)? = state.withLock { s in
            precondition(s.inFlight > 0, "HandshakeGate.leave() without enter()")
            s.inFlight -= 1
            guard !s.waiting.isEmpty else { return nil }
            s.take()
            return s.waiting.removeFirst()
        }
        if let next { next.loop.execute(next.start) }
    }
}
