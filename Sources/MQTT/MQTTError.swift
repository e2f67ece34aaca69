import CMosquitto

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An error of the MQTT module: a stable `code` to switch on and a sentence for people.
public struct MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable error codes. Compare with the static members, e.g. `error.code == .noConnection`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The configuration is invalid (bad URL, unreadable password file, ...).
        public static let invalidConfiguration = Code(rawValue: "invalid_configuration")
        /// An argument was rejected (bad topic or filter, invalid option value).
        public static let invalidArgument = Code(rawValue: "invalid_argument")
        /// Not connected to the broker (e.g. a QoS 0 publish while disconnected).
        public static let noConnection = Code(rawValue: "no_connection")
        /// The broker refused the connection for a reason other than credentials.
        public static let connectionRefused = Code(rawValue: "connection_refused")
        /// The broker refused our credentials ("not authorised", "bad user name or password").
        public static let notAuthorized = Code(rawValue: "not_authorized")
        /// The connection was lost (socket closed, keepalive expired).
        public static let connectionLost = Code(rawValue: "connection_lost")
        /// A protocol error (malformed packet, unexpected packet).
        public static let protocolError = Code(rawValue: "protocol_error")
        /// TLS setup or handshake failed.
        public static let tls = Code(rawValue: "tls")
        /// The payload or packet is too large for the broker or the protocol.
        public static let payloadTooLarge = Code(rawValue: "payload_too_large")
        /// The operation or option is not supported (e.g. MQTT 5 properties over MQTT 3.1.1).
        public static let notSupported = Code(rawValue: "not_supported")
        /// Host name lookup failed.
        public static let lookupFailed = Code(rawValue: "lookup_failed")
        /// A system call failed (the message carries errno's text).
        public static let system = Code(rawValue: "system")
        /// The client was shut down.
        public static let shutDown = Code(rawValue: "shut_down")
        /// Anything else libmosquitto reported.
        public static let library = Code(rawValue: "library")
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) [\(code)]" }
}

// The one place where libmosquitto return codes become errors.
extension MQTTError {
    /// Throws unless `rc` is MOSQ_ERR_SUCCESS. `operation` names what was attempted.
    static func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws(MQTTError) {
        if rc == MOSQ_ERR_SUCCESS.rawValue { return }
        let savedErrno = errno
        throw MQTTError(returnCode: rc, operation: operation(), errno: savedErrno)
    }

    /// Maps a libmosquitto return code (`MOSQ_ERR_*`). `errnoValue` is used for MOSQ_ERR_ERRNO.
    init(returnCode rc: Int32, operation: String, errno errnoValue: Int32 = 0) {
        let code: Code
        var text = mosquitto_strerror(rc).map { String(cString: $0) } ?? "error \(rc)"
        switch rc {
        case MOSQ_ERR_NO_CONN.rawValue: code = .noConnection
        case MOSQ_ERR_CONN_REFUSED.rawValue: code = .connectionRefused
        case MOSQ_ERR_CONN_LOST.rawValue: code = .connectionLost
        case MOSQ_ERR_KEEPALIVE.rawValue:
            // libmosquitto 2.0.11's mosquitto_strerror does not know this one.
            code = .connectionLost
            text = "no answer from the broker within the keepalive interval"
        case MOSQ_ERR_TIMEOUT.rawValue:
            code = .connectionLost
            text = "timed out"
        case MOSQ_ERR_PROTOCOL.rawValue, MOSQ_ERR_MALFORMED_PACKET.rawValue,
            MOSQ_ERR_DUPLICATE_PROPERTY.rawValue:
            code = .protocolError
        case MOSQ_ERR_INVAL.rawValue, MOSQ_ERR_MALFORMED_UTF8.rawValue: code = .invalidArgument
        case MOSQ_ERR_TLS.rawValue, MOSQ_ERR_TLS_HANDSHAKE.rawValue, MOSQ_ERR_OCSP.rawValue: code = .tls
        case MOSQ_ERR_PAYLOAD_SIZE.rawValue, MOSQ_ERR_OVERSIZE_PACKET.rawValue: code = .payloadTooLarge
        case MOSQ_ERR_NOT_SUPPORTED.rawValue, MOSQ_ERR_QOS_NOT_SUPPORTED.rawValue,
            MOSQ_ERR_RETAIN_NOT_SUPPORTED.rawValue:
            code = .notSupported
        case MOSQ_ERR_AUTH.rawValue, MOSQ_ERR_ACL_DENIED.rawValue: code = .notAuthorized
        case MOSQ_ERR_EAI.rawValue, MOSQ_ERR_LOOKUP.rawValue: code = .lookupFailed
        case MOSQ_ERR_ERRNO.rawValue:
            code = .system
            if errnoValue != 0, let s = strerror(errnoValue) { text = String(cString: s) }
        default: code = .library
        }
        self.init(code: code, message: "\(operation): \(text)")
    }

    /// Maps a refused CONNACK: an MQTT 5 reason code (>= 0x80) or an MQTT 3.1.1 return code (1-5).
    init(connackCode rc: Int32, protocolVersion: MQTTProtocolVersion) {
        let text: String
        let code: Code
        switch protocolVersion {
        case .v5:
            text = mosquitto_reason_string(rc).map { String(cString: $0) } ?? "reason code \(rc)"
            // 0x86 bad user name or password, 0x87 not authorized, 0x8C bad authentication method.
            code = (rc == 0x86 || rc == 0x87 || rc == 0x8C) ? .notAuthorized : .connectionRefused
        case .v311:
            text = mosquitto_connack_string(rc).map { String(cString: $0) } ?? "return code \(rc)"
            code = (rc == 4 || rc == 5) ? .notAuthorized : .connectionRefused
        }
        self.init(code: code, message: "broker refused the connection: \(text)")
    }
}
