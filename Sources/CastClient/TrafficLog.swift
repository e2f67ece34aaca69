import CastProtocol
import Logging

/// A device's Cast traffic in its log: at `debug` one line per message in and out (heartbeats
/// left out) with its namespace, type and size; at `trace` every message, heartbeats included,
/// with its payload — credentials, tokens and passwords masked, device-auth payloads never
/// written. Nothing is parsed or built unless the device's logger is at one of those levels
/// (`log.devices` raises one device to `trace`, docs/configuration.md).
enum TrafficLog {
    /// Keys whose values never reach a log (compared in lower case, as a substring).
    static let secretKeys = ["credential", "token", "password", "secret", "authorization", "cookie", "apikey", "api_key"]
    static let maxPayload = 8192

    static func log(_ logger: Logger, direction: String, _ message: CastMessage) {
        let level = logger.logLevel
        guard level <= .debug else { return }
        let heartbeat = message.namespace == CastNamespace.heartbeat
        guard level == .trace || !heartbeat else { return }
        var metadata: Logger.Metadata = [
            "cast.direction": "\(direction)",
            "cast.namespace": "\(message.namespace)",
            "cast.type": "\(CastPayloadHeader.parse(message.payload)?.type ?? "-")",
            "cast.bytes": "\(CastTraffic.size(message.payload))",
            "cast.endpoint": "\(direction == "in" ? message.sourceID : message.destinationID)",
        ]
        if level == .trace { metadata["cast.payload"] = "\(payload(message))" }
        logger.log(level: level == .trace ? .trace : .debug, "cast message \(direction)", metadata: metadata)
    }

    /// The payload as it may be logged.
    static func payload(_ message: CastMessage) -> String {
        if message.namespace == CastNamespace.deviceAuth { return "(device auth, not logged)" }
        switch message.payload {
        case .binary(let bytes): return "(binary, \(bytes.count) bytes)"
        case .string(let text):
            guard let value = JSONValue.parse(text) else {
                return String(text.prefix(maxPayload))
            }
            return String(String(decoding: redacted(value).jsonBytes, as: UTF8.self).prefix(maxPayload))
        }
    }

    /// `value` with the values of secret-looking keys replaced by `***`, at any depth.
    static func redacted(_ value: JSONValue, depth: Int = 0) -> JSONValue {
        guard depth < 64 else { return .string("…") }
        switch value {
        case .object(let object):
            var out: [String: JSONValue] = [:]
            for (key, inner) in object {
                let lower = key.lowercased()
                out[key] = secretKeys.contains(where: lower.contains) ? .string("***") : redacted(inner, depth: depth + 1)
            }
            return .object(out)
        case .array(let list):
            return .array(list.map { redacted($0, depth: depth + 1) })
        default:
            return value
        }
    }
}
