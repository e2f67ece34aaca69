import Synchronization
import NIOCore

/// The time source of a simulated device's media clock, in seconds.
///
/// Only media positions, ad breaks, end-of-media and the page and display timeouts (with the
/// Lovelace receiver's image reloads) use it; network latencies and heartbeats always run on
/// real time (the event loop's timers).
public protocol SimulatorClock: Sendable {
    /// Seconds since an arbitrary, fixed origin. Never goes backwards.
    func now() -> Double
}

/// Real monotonic time (the default).
public struct SystemSimulatorClock: SimulatorClock {
    public init() {}
    public func now() -> Double { Double(NIODeadline.now().uptimeNanoseconds) / 1_000_000_000 }
}

/// A clock that only moves when told to; lets tests advance media time without sleeping.
/// Several devices may share one.
public final class ManualSimulatorClock: SimulatorClock {
    private let seconds: Mutex<Double>

    public init(start: Double = 1_000) { seconds = Mutex(start) }

    public func now() -> Double { seconds.withLock { $0 } }

    /// Moves the clock forward by `delta` seconds (negative values are ignored).
    public func advance(by delta: Double) {
        guard delta.isFinite, delta > 0 else { return }
        seconds.withLock { $0 += delta }
    }
}
