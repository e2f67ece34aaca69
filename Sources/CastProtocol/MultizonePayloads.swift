/// A member of a speaker group, as MULTIZONE_STATUS and DEVICE_* messages describe it.
public struct MultizoneDevice: Codable, Sendable, Hashable {
    public var deviceId: String
    public var name: String?
    public var capabilities: Int?
    public var volume: StreamVolume?

    public init(deviceId: String, name: String? = nil, capabilities: Int? = nil, volume: StreamVolume? = nil) {
        self.deviceId = deviceId
        self.name = name
        self.capabilities = capabilities
        self.volume = volume
    }
}

/// Messages on `urn:x-cast:com.google.cast.multizone` (destination `receiver-0`).
public enum MultizoneMessage: Sendable, Hashable {
    case getStatus(requestId: Int)
    case status(requestId: Int, devices: [MultizoneDevice], isMultichannel: Bool?, playbackSession: JSONValue?)
    case deviceAdded(MultizoneDevice)
    case deviceUpdated(MultizoneDevice)
    case deviceRemoved(deviceId: String)
    case playbackSessionUpdated
    case unknown(type: String?)

    struct StatusBody: Codable {
        var devices: [MultizoneDevice]?
        var isMultichannel: Bool?
        var playbackSession: JSONValue?
    }
    struct Wire: Codable {
        var type: String?
        var requestId: Int?
        var status: StatusBody?
        var device: MultizoneDevice?
        var deviceId: String?
    }

    public static func parse(_ payload: CastPayload) throws -> MultizoneMessage {
        guard let text = payload.text else { throw CastMessageError.invalid("binary payload on the multizone namespace") }
        let wire = try CastJSON.decode(Wire.self, from: text)
        // The kind as every namespace reads it (`responseType` when there is no `type`).
        let type = CastPayloadHeader.parse(payload)?.type ?? wire.type
        switch type {
        case "GET_STATUS": return .getStatus(requestId: wire.requestId ?? 0)
        case "MULTIZONE_STATUS":
            return .status(requestId: wire.requestId ?? 0, devices: wire.status?.devices ?? [],
                           isMultichannel: wire.status?.isMultichannel, playbackSession: wire.status?.playbackSession)
        case "DEVICE_ADDED":
            guard let device = wire.device else { return .unknown(type: type) }
            return .deviceAdded(device)
        case "DEVICE_UPDATED":
            guard let device = wire.device else { return .unknown(type: type) }
            return .deviceUpdated(device)
        case "DEVICE_REMOVED":
            guard let id = wire.deviceId ?? wire.device?.deviceId else { return .unknown(type: type) }
            return .deviceRemoved(deviceId: id)
        case "PLAYBACK_SESSION_UPDATED": return .playbackSessionUpdated
        default: return .unknown(type: type)
        }
    }

    public func json() -> String {
        var wire = Wire()
        switch self {
        case .getStatus(let id): wire.type = "GET_STATUS"; wire.requestId = id
        case .status(let id, let devices, let multi, let session):
            wire.type = "MULTIZONE_STATUS"; wire.requestId = id
            wire.status = StatusBody(devices: devices, isMultichannel: multi, playbackSession: session)
        case .deviceAdded(let d): wire.type = "DEVICE_ADDED"; wire.device = d
        case .deviceUpdated(let d): wire.type = "DEVICE_UPDATED"; wire.device = d
        case .deviceRemoved(let id): wire.type = "DEVICE_REMOVED"; wire.deviceId = id
        case .playbackSessionUpdated: wire.type = "PLAYBACK_SESSION_UPDATED"
        case .unknown(let type): wire.type = type
        }
        return (try? CastJSON.encode(wire)) ?? "{}"
    }
}
