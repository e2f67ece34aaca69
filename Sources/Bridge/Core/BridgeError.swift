import CastProtocol

/// The `error.code` values of the contract (mqtt-api.md §5).
public enum ErrorCode: String, Sendable, Hashable, CaseIterable {
    case invalidPayload = "invalid_payload"
    case unknownCommand = "unknown_command"
    case unknownDevice = "unknown_device"
    case deviceOffline = "device_offline"
    case noApp = "no_app"
    case noMediaSession = "no_media_session"
    case notSupported = "not_supported"
    case timeout
    case loadFailed = "load_failed"
    case loadCancelled = "load_cancelled"
    case launchError = "launch_error"
    case invalidRequest = "invalid_request"
    case invalidPlayerState = "invalid_player_state"
    case namespaceNotAllowed = "namespace_not_allowed"
    case payloadTooLarge = "payload_too_large"
    /// The device's queue of waiting commands is full (`BridgeCore.maxWaitingCommands`).
    case busy
    case `internal`
}

/// An error that crosses the bridge boundary: a contract code and a plain-words message.
public struct BridgeError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    static func invalid(_ message: String) -> BridgeError { BridgeError(.invalidPayload, message) }
}
