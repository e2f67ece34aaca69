/// Conversions of numbers that come from outside (a device, MQTT, the configuration) that never
/// trap: `Int(someDouble)` and `Int64(x * 1e9)` crash the process on an out-of-range value, and a
/// single hostile message must not be able to do that.

extension Int {
    /// The integer a JSON number stands for: nil when it is fractional, not finite, or outside
    /// `Int`'s range (`1e19`, `99999999999999999999`).
    public init?(jsonNumber value: Double) {
        guard let exact = Int(exactly: value) else { return nil }
        self = exact
    }
}

extension Duration {
    /// The longest duration any timer of the bridge takes: about 31 years. Longer is "never".
    public static let maximumTimer: Duration = .seconds(1_000_000_000)

    /// `seconds` as a duration, clamped to `0 ... maximumTimer` (NaN counts as 0). Never traps.
    public static func seconds(clamping seconds: Double) -> Duration {
        guard seconds.isFinite, seconds > 0 else { return seconds == .infinity ? maximumTimer : .zero }
        let capped = min(seconds, maximumTimer.seconds)
        return .milliseconds(Int64((capped * 1000).rounded()))
    }

    /// Whole nanoseconds, clamped to `0 ... Int64.max` (for timer APIs that take nanoseconds).
    public var clampedNanoseconds: Int64 {
        let c = components
        guard c.seconds >= 0 else { return 0 }
        let (whole, overflow) = c.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (sum, overflow2) = whole.addingReportingOverflow(c.attoseconds / 1_000_000_000)
        return overflow2 ? .max : sum
    }
}
