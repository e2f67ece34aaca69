/// Settings of one device connection.
public struct CastConnectionConfiguration: Sendable, Hashable {
    /// How often we PING the device.
    public var heartbeatInterval: Duration
    /// The connection is dead when nothing at all arrived for this long.
    public var heartbeatTimeout: Duration
    /// Default deadline of a request that expects an answer.
    public var requestTimeout: Duration
    /// Deadline of a TCP connect and, separately, of the TLS handshake after it.
    public var connectTimeout: Duration
    public var backoff: ReconnectBackoff
    /// Our endpoint id (`sender-0`, like pychromecast and go-chromecast).
    public var senderID: String
    /// The user agent sent in CONNECT.
    public var userAgent: String
    /// Device authentication on every connection (`off`: none).
    public var deviceAuth: DeviceAuthMode

    public init(heartbeatInterval: Duration = .seconds(5), heartbeatTimeout: Duration = .seconds(15),
                requestTimeout: Duration = .seconds(10), connectTimeout: Duration = .seconds(10),
                backoff: ReconnectBackoff = ReconnectBackoff(),
                senderID: String = CastEndpoint.sender, userAgent: String = "cast2mqtt",
                deviceAuth: DeviceAuthMode = .off) {
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatTimeout = heartbeatTimeout
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.backoff = backoff
        self.senderID = senderID
        self.userAgent = userAgent
        self.deviceAuth = deviceAuth
    }
}

/// Why a connection ended (or never came up).
public enum CastDisconnectReason: Sendable, Hashable, CustomStringConvertible {
    /// Nothing arrived within the heartbeat timeout.
    case heartbeatTimeout
    /// The peer closed the TCP connection.
    case closedByPeer
    /// The device closed the platform virtual connection (CLOSE from `receiver-0`).
    case closedByDevice
    /// A frame was oversized, empty or not a Cast message.
    case protocolError(String)
    /// A socket or TLS error.
    case networkError(String)
    /// Connecting failed (refused, unreachable, TLS handshake).
    case connectFailed(String)
    /// The connection stayed up but the receiver platform never answered its status request
    /// (not even after a repair): the device is booting or lost our CONNECT.
    case unresponsive
    /// We are shutting down.
    case shutdown
    /// The device failed device authentication under the `require` policy.
    case unauthenticated(DeviceAuthFailure)

    public var description: String {
        switch self {
        case .heartbeatTimeout: return "heartbeat timeout"
        case .closedByPeer: return "connection closed by the device"
        case .closedByDevice: return "device closed the platform channel"
        case .protocolError(let why): return "protocol error: \(why)"
        case .networkError(let why): return "network error: \(why)"
        case .connectFailed(let why): return "connect failed: \(why)"
        case .unresponsive: return "the device did not answer its receiver status"
        case .shutdown: return "shutdown"
        case .unauthenticated(let failure): return "unauthenticated: \(failure)"
        }
    }
}

extension CastDisconnectReason {
    /// True for `unauthenticated`.
    public var isUnauthenticated: Bool {
        if case .unauthenticated = self { return true }
        return false
    }
}

/// Why a request failed without an answer from the device.
public enum CastRequestFailure: Error, Sendable, Hashable, CustomStringConvertible {
    case timeout
    case notConnected
    case connectionLost
    case shuttingDown
    /// The app's transport CLOSEd our virtual connection before answering (a device that does
    /// not let this sender in, or an app that dropped us).
    case endpointClosed
    /// The message would be `bytes` long: over the 64 KiB frame limit (nothing was sent).
    case payloadTooLarge(bytes: Int)

    public var description: String {
        switch self {
        case .payloadTooLarge(let bytes): return "the message would be \(bytes) bytes; Cast messages are limited to 64 KiB"
        case .timeout: return "the device did not answer in time"
        case .notConnected: return "the device is not connected"
        case .connectionLost: return "the connection to the device was lost"
        case .shuttingDown: return "the client is shutting down"
        case .endpointClosed: return "the app closed the connection to it before answering"
        }
    }
}

/// What the connection reports upwards.
public enum CastConnectionEvent: Sendable, Hashable {
    /// The device answered on a new connection: it is usable (availability `online`).
    case connected
    /// A connection that had been answered ended.
    case disconnected(CastDisconnectReason)
    /// The device closed the virtual connection of an app endpoint (that app's session ended).
    case virtualConnectionClosed(endpoint: String)
    /// Any message from the device other than heartbeats and connection control.
    case message(CastMessage)
    /// The device-auth check of a new connection ended (before `connected`). `admitted` is false
    /// when the policy refuses the device: the connection is closed and retried with backoff.
    case authentication(DeviceAuthResult, admitted: Bool)
}
