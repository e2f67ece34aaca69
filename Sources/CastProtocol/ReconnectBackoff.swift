import Foundation

/// Exponential reconnect backoff: `initial` doubling per failed attempt up to `maximum`, with a
/// jitter factor supplied by the caller (random in production, fixed in tests).
public struct ReconnectBackoff: Sendable, Hashable {
    public var initial: Duration
    public var maximum: Duration
    public var multiplier: Double
    /// Spread of the jitter: the delay is scaled by a factor in `1 - spread ... 1 + spread`.
    public var jitterSpread: Double

    public init(initial: Duration = .milliseconds(500), maximum: Duration = .seconds(60),
                multiplier: Double = 2, jitterSpread: Double = 0.2) {
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
        self.jitterSpread = jitterSpread
    }

    /// The nominal delay before retry number `attempt` (1 = the first retry), without jitter.
    public func nominalDelay(attempt: Int) -> Duration {
        let base = initial.seconds
        let cap = maximum.seconds
        let exponent = Double(max(0, attempt - 1))
        let value = min(cap, base * Foundation.pow(multiplier, min(exponent, 64)))
        return .seconds(clamping: value)
    }

    /// The delay before retry number `attempt`; `jitter` in 0...1 picks a point in the spread
    /// (0.5 = no change). Never more than `maximum`, never negative.
    public func delay(attempt: Int, jitter: Double) -> Duration {
        let j = min(max(jitter, 0), 1)
        let factor = 1 - jitterSpread + 2 * jitterSpread * j
        let value = min(maximum.seconds, nominalDelay(attempt: attempt).seconds * factor)
        // Millisecond resolution: plenty for reconnects, and exact to compare.
        return .seconds(clamping: value)
    }
}

extension Duration {
    /// This duration in seconds as a Double.
    public var seconds: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) / 1e18
    }
}
