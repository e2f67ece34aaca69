import CastProtocol

/// A failed Cast request, with a code the bridge maps to its MQTT error codes in one place.
public struct CastError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// LOAD_FAILED from the receiver app.
        case loadFailed = "load_failed"
        /// LOAD_CANCELLED: another load superseded this one.
        case loadCancelled = "load_cancelled"
        /// LAUNCH_ERROR from the platform.
        case launchError = "launch_error"
        /// INVALID_REQUEST (with the receiver's reason).
        case invalidRequest = "invalid_request"
        /// INVALID_PLAYER_STATE: the command is not valid in the current state.
        case invalidPlayerState = "invalid_player_state"
        /// A generic ERROR reply from the media namespace.
        case mediaError = "media_error"
        /// No answer within the request timeout.
        case timeout
        /// The device is not connected (or has not answered yet).
        case notConnected = "not_connected"
        /// The connection was lost while waiting.
        case connectionLost = "connection_lost"
        /// The client is shutting down.
        case shuttingDown = "shutting_down"
        /// The command needs a running app and none runs.
        case noApp = "no_app"
        /// The command needs a media session and there is none.
        case noMediaSession = "no_media_session"
        /// The message would exceed the 64 KiB frame limit.
        case payloadTooLarge = "payload_too_large"
        /// The reply had an unexpected shape.
        case unexpectedReply = "unexpected_reply"
    }

    public var code: Code
    /// Plain words for operators and MQTT users.
    public var message: String
    /// The device's `reason` (INVALID_REQUEST, LAUNCH_ERROR, media errors), when it gave one.
    public var reason: String?
    /// `detailedErrorCode` of media errors, when given.
    public var detailedErrorCode: Int?

    public init(_ code: Code, _ message: String, reason: String? = nil, detailedErrorCode: Int? = nil) {
        self.code = code
        self.message = message
        self.reason = reason
        self.detailedErrorCode = detailedErrorCode
    }

    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let reason { text += " (reason \(reason))" }
        return text
    }

    init(_ failure: CastRequestFailure) {
        switch failure {
        case .timeout: self.init(.timeout, failure.description)
        case .notConnected: self.init(.notConnected, failure.description)
        case .connectionLost: self.init(.connectionLost, failure.description)
        case .shuttingDown: self.init(.shuttingDown, failure.description)
        case .payloadTooLarge: self.init(.payloadTooLarge, failure.description)
        case .endpointClosed:
            self.init(.noApp, "the running app closed the bridge's connection to it before answering (refresh tries again)")
        }
    }

    /// The error a device reply stands for, or nil when the reply is a success.
    static let replyErrorTypes: Set<String> = Set(["LAUNCH_ERROR", "INVALID_REQUEST"]).union(MediaError.types)

    static func fromReply(_ message: CastMessage) -> CastError? {
        // Most replies are statuses: look at the type before parsing the whole payload.
        guard let type = CastPayloadHeader.parse(message.payload)?.type, replyErrorTypes.contains(type) else { return nil }
        switch message.namespace {
        case CastNamespace.receiver:
            switch try? ReceiverResponse.parse(message.payload) {
            case .launchError(_, let reason, let extended)?:
                let why = [reason, extended].compactMap { $0 }.joined(separator: ", ")
                return CastError(.launchError, "the device could not launch the app" + (why.isEmpty ? "" : " (\(why))"),
                                 reason: reason)
            case .invalidRequest(_, let reason)?:
                return CastError(.invalidRequest, "the device rejected the request", reason: reason)
            default:
                return nil
            }
        case CastNamespace.media:
            guard case .error(let error)? = try? MediaResponse.parse(message.payload) else { return nil }
            let code: Code
            switch error.type {
            case "LOAD_FAILED": code = .loadFailed
            case "LOAD_CANCELLED": code = .loadCancelled
            case "INVALID_PLAYER_STATE": code = .invalidPlayerState
            case "INVALID_REQUEST": code = .invalidRequest
            default: code = .mediaError
            }
            var text: String
            switch code {
            case .loadFailed: text = "the receiver could not load the media"
            case .loadCancelled: text = "the load was cancelled by a newer one"
            case .invalidPlayerState: text = "the command is not valid in the player's current state"
            case .invalidRequest: text = "the receiver rejected the request"
            default: text = "the receiver reported an error"
            }
            if let detail = error.detailedErrorCode { text += " (detailed error \(detail))" }
            return CastError(code, text, reason: error.reason, detailedErrorCode: error.detailedErrorCode)
        default:
            return nil
        }
    }
}
