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

    /// The one mapping from a media-namespace error reply to a contract error.
    public static func from(mediaError e: MediaError) -> BridgeError {
        let reason = e.reason.map { " (reason \($0))" } ?? ""
        let detail = e.detailedErrorCode.map { ", detailed error \($0)" } ?? ""
        switch e.type {
        case "LOAD_FAILED": return BridgeError(.loadFailed, "the receiver could not load the media\(reason)\(detail)")
        case "LOAD_CANCELLED": return BridgeError(.loadCancelled, "the load was superseded by another one\(reason)")
        case "INVALID_PLAYER_STATE":
            return BridgeError(.invalidPlayerState, "the command is not valid in the player's current state\(reason)")
        case "INVALID_REQUEST":
            return BridgeError(.invalidRequest, "the receiver rejected the request\(reason)")
        default: return BridgeError(.internal, "the receiver reported an error \(e.type)\(reason)\(detail)")
        }
    }

    /// LAUNCH_ERROR from the receiver namespace.
    public static func launchError(reason: String?, extendedError: String? = nil) -> BridgeError {
        var text = "the device could not launch the app"
        if let reason { text += " (reason \(reason))" }
        if let extendedError { text += " (\(extendedError))" }
        return BridgeError(.launchError, text)
    }

    /// INVALID_REQUEST from the receiver namespace.
    public static func invalidRequest(reason: String?) -> BridgeError {
        BridgeError(.invalidRequest, "the receiver rejected the request" + (reason.map { " (reason \($0))" } ?? ""))
    }

    /// A request that got no answer or lost its connection.
    public static func from(requestFailure f: CastRequestFailure) -> BridgeError {
        switch f {
        case .timeout: return BridgeError(.timeout, "the device did not answer in time")
        case .notConnected, .connectionLost: return BridgeError(.deviceOffline, f.description)
        case .shuttingDown: return BridgeError(.internal, "the bridge is shutting down")
        }
    }
}
