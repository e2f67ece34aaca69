/// Just the routing fields every JSON payload shares: `type` and (usually) `requestId`.
/// Decoded first so a message can be dispatched without knowing its whole shape.
///
/// Some receiver apps and firmware name the kind `responseType` (the app-availability answer
/// does, and statuses have been seen so): without a `type`, a string `responseType` is the kind.
public struct CastPayloadHeader: Decodable, Sendable, Hashable {
    public var type: String?
    public var requestId: Int?

    enum CodingKeys: String, CodingKey { case type, responseType, requestId, launchRequestId }

    public init(type: String?, requestId: Int?) {
        self.type = type
        self.requestId = requestId
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if c.contains(.type) {
            type = try? c.decodeIfPresent(String.self, forKey: .type)
        } else {
            type = try? c.decodeIfPresent(String.self, forKey: .responseType)
        }
        // Some firmware answers a LAUNCH with `launchRequestId` instead of `requestId`; numbers
        // occasionally arrive as floats (`3.0`). A fractional or out-of-range id (`1.5`, `1e19`)
        // names no request of ours: it is treated as absent.
        func id(_ key: CodingKeys) -> Int? {
            if let i = (try? c.decodeIfPresent(Int.self, forKey: key)) ?? nil { return i }
            return ((try? c.decodeIfPresent(Double.self, forKey: key)) ?? nil).flatMap(Int.init(jsonNumber:))
        }
        requestId = id(.requestId) ?? id(.launchRequestId)
    }

    /// Parses the header of a text payload; nil when it is not a JSON object. The plain cases
    /// are read by `HeaderScanner` (one pass, no `JSONDecoder`), the rest by `JSONDecoder`; the
    /// result is the same (the payload fuzzer compares it with `parseWithJSONDecoder`).
    public static func parse(_ payload: CastPayload) -> CastPayloadHeader? {
        guard let text = payload.text else { return nil }
        if case .header(let header) = HeaderScanner.scan(text) { return header }
        return try? CastJSON.decode(CastPayloadHeader.self, from: text)
    }

    /// The reference: the header as `JSONDecoder` reads it (for tests and the fuzzer).
    public static func parseWithJSONDecoder(_ payload: CastPayload) -> CastPayloadHeader? {
        guard let text = payload.text else { return nil }
        return try? CastJSON.decode(CastPayloadHeader.self, from: text)
    }
}

/// Sender description carried in CONNECT (the shape Chrome and pychromecast send).
public struct SenderInfo: Codable, Sendable, Hashable {
    public var sdkType: Int = 2
    public var version: String
    public var browserVersion: String?
    public var platform: Int = 6
    public var systemVersion: String?
    public var connectionType: Int = 1

    public init(version: String, browserVersion: String? = nil, platform: Int = 6, systemVersion: String? = nil) {
        self.version = version
        self.browserVersion = browserVersion
        self.platform = platform
        self.systemVersion = systemVersion
    }
}

/// Messages of `urn:x-cast:com.google.cast.tp.connection`.
public enum ConnectionMessage: Sendable, Hashable {
    /// Opens a virtual connection (and subscribes to the endpoint's broadcasts).
    case connect(userAgent: String?, connType: Int?, senderInfo: SenderInfo?, protocolVersions: [Int]?)
    /// Closes a virtual connection; `reasonCode` 5 = closed on purpose by the sender.
    case close(reasonCode: Int?)
    /// Reply to a CONNECT that carried protocol versions (Open Screen behaviour).
    case connected(protocolVersion: Int?)

    struct Wire: Codable {
        var type: String
        var origin: [String: String]?
        var userAgent: String?
        var connType: Int?
        var senderInfo: SenderInfo?
        var protocolVersionList: [Int]?
        var protocolVersion: Int?
        var reasonCode: Int?
    }

    /// The JSON text of this message.
    public func json() -> String {
        let wire: Wire
        switch self {
        case .connect(let ua, let connType, let info, let versions):
            wire = Wire(type: "CONNECT", origin: [:], userAgent: ua, connType: connType, senderInfo: info,
                        protocolVersionList: versions)
        case .close(let reason):
            wire = Wire(type: "CLOSE", origin: [:], reasonCode: reason)
        case .connected(let version):
            wire = Wire(type: "CONNECTED", protocolVersion: version)
        }
        return (try? CastJSON.encode(wire)) ?? #"{"type":"\#(wire.type)"}"#
    }

    /// Parses a connection-namespace payload; nil for an unknown type or non-JSON.
    public static func parse(_ payload: CastPayload) -> ConnectionMessage? {
        guard let text = payload.text, let wire = try? CastJSON.decode(Wire.self, from: text) else { return nil }
        switch wire.type {
        case "CONNECT":
            return .connect(userAgent: wire.userAgent, connType: wire.connType, senderInfo: wire.senderInfo,
                            protocolVersions: wire.protocolVersionList ?? wire.protocolVersion.map { [$0] })
        case "CLOSE": return .close(reasonCode: wire.reasonCode)
        case "CONNECTED": return .connected(protocolVersion: wire.protocolVersion)
        default: return nil
        }
    }
}

/// Messages of `urn:x-cast:com.google.cast.tp.heartbeat` (no requestId).
public enum HeartbeatMessage: String, Sendable, Hashable {
    case ping = "PING"
    case pong = "PONG"

    public func json() -> String { #"{"type":"\#(rawValue)"}"# }

    /// Through `CastPayloadHeader.parse`, whose one-pass scanner reads a heartbeat without
    /// `JSONDecoder`.
    public static func parse(_ payload: CastPayload) -> HeartbeatMessage? {
        CastPayloadHeader.parse(payload)?.type.flatMap(HeartbeatMessage.init(rawValue:))
    }
}
