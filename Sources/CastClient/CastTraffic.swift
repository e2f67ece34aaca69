import CastProtocol
import CoreMetrics

/// Cast messages and their payload bytes, in and out, for the daemon's `/metrics` (docs/metrics.md).
/// The counters come from swift-metrics' global `MetricsSystem`, which the daemon bootstraps
/// before it creates any client; where nothing bootstrapped it (tests), they count nothing.
struct CastTraffic: Sendable {
    static let shared = CastTraffic()

    let messagesIn = Counter(label: "cast2mqtt_cast_messages_total", dimensions: [("direction", "in")])
    let messagesOut = Counter(label: "cast2mqtt_cast_messages_total", dimensions: [("direction", "out")])
    let bytesIn = Counter(label: "cast2mqtt_cast_bytes_total", dimensions: [("direction", "in")])
    let bytesOut = Counter(label: "cast2mqtt_cast_bytes_total", dimensions: [("direction", "out")])

    func received(_ message: CastMessage) {
        messagesIn.increment()
        bytesIn.increment(by: Self.size(message.payload))
    }

    func sent(_ message: CastMessage) {
        messagesOut.increment()
        bytesOut.increment(by: Self.size(message.payload))
    }

    static func size(_ payload: CastPayload) -> Int {
        switch payload {
        case .string(let text): return text.utf8.count
        case .binary(let bytes): return bytes.count
        }
    }
}
