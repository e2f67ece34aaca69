import Foundation
import SwiftProtobuf

/// Well-known endpoint ids of the Cast v2 channel.
public enum CastEndpoint {
    /// The sender platform; cast2mqtt uses it as its source id for everything, like pychromecast.
    public static let sender = "sender-0"
    /// The receiver platform (device) endpoint.
    public static let receiver = "receiver-0"
    /// Destination id of broadcasts (unsolicited status sent to every connected sender).
    public static let broadcast = "*"

    /// The longest endpoint id the client addresses (real ones are `web-5` or a UUID).
    public static let maxIDBytes = 256

    /// `id` when it can be an endpoint: 1–256 bytes, no control characters, not the broadcast id.
    public static func validated(_ id: String) -> String? {
        guard !id.isEmpty, id.utf8.count <= maxIDBytes, id != broadcast,
              !id.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return nil }
        return id
    }
}

/// Cast namespaces and the rules the bridge applies to them.
public enum CastNamespace {
    public static let connection = "urn:x-cast:com.google.cast.tp.connection"
    public static let heartbeat = "urn:x-cast:com.google.cast.tp.heartbeat"
    public static let deviceAuth = "urn:x-cast:com.google.cast.tp.deviceauth"
    public static let receiver = "urn:x-cast:com.google.cast.receiver"
    public static let media = "urn:x-cast:com.google.cast.media"
    public static let multizone = "urn:x-cast:com.google.cast.multizone"

    /// Every namespace starts with this prefix by convention and SDK rule.
    public static let prefix = "urn:x-cast:"
    /// The platform's own namespaces (`urn:x-cast:com.google.cast.*`).
    public static let platformPrefix = "urn:x-cast:com.google.cast."
    /// Transport-level namespaces, never to be sent by a user (`urn:x-cast:com.google.cast.tp.*`).
    public static let transportPrefix = "urn:x-cast:com.google.cast.tp."

    /// True for the platform's own namespaces, whose messages are not republished as app messages.
    public static func isPlatform(_ namespace: String) -> Bool {
        namespace.hasPrefix(platformPrefix)
    }

    /// True for reserved transport namespaces that a user may never send on.
    public static func isReserved(_ namespace: String) -> Bool {
        namespace.hasPrefix(transportPrefix)
    }
}

/// The payload of a Cast message: text (`payload_utf8`, usually JSON) or bytes (`payload_binary`).
public enum CastPayload: Sendable, Hashable {
    case string(String)
    case binary([UInt8])

    /// The text of a STRING payload, nil for BINARY.
    public var text: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The payload's bytes as they would be sent (UTF-8 for text).
    public var bytes: [UInt8] {
        switch self {
        case .string(let s): return Array(s.utf8)
        case .binary(let b): return b
        }
    }
}

/// One Cast v2 channel message (`CastMessage` in `cast_channel.proto`), independent of the
/// generated protobuf type so that no SwiftProtobuf type leaks into the public API.
public struct CastMessage: Sendable, Hashable {
    /// Always 0 (`CASTV2_1_0`) when we send; kept as received otherwise.
    public var protocolVersion: Int
    public var sourceID: String
    public var destinationID: String
    public var namespace: String
    public var payload: CastPayload

    public init(
        protocolVersion: Int = 0,
        sourceID: String,
        destinationID: String,
        namespace: String,
        payload: CastPayload
    ) {
        self.protocolVersion = protocolVersion
        self.sourceID = sourceID
        self.destinationID = destinationID
        self.namespace = namespace
        self.payload = payload
    }

    /// A message with a JSON text payload.
    public init(source: String, destination: String, namespace: String, json: String) {
        self.init(sourceID: source, destinationID: destination, namespace: namespace, payload: .string(json))
    }

    /// True when sent to every connected sender (destination `*`).
    public var isBroadcast: Bool { destinationID == CastEndpoint.broadcast }
}

/// Errors from turning bytes into a `CastMessage` or back.
public enum CastMessageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes are not a valid protobuf `CastMessage` (or miss a required field).
    case malformed(String)
    /// Required ids or namespace are empty, or the payload does not match `payload_type`.
    case invalid(String)

    public var description: String {
        switch self {
        case .malformed(let why): return "malformed Cast message: \(why)"
        case .invalid(let why): return "invalid Cast message: \(why)"
        }
    }
}

typealias ProtoCastMessage = Extensions_Api_CastChannel_CastMessage

extension CastMessage {
    /// Serializes to protobuf bytes. `protocol_version` and `payload_type` are always written,
    /// even when zero: both are proto2 `required` fields that receivers insist on.
    public func serializedBytes() throws -> [UInt8] {
        var proto = ProtoCastMessage()
        proto.protocolVersion = ProtoCastMessage.ProtocolVersion(rawValue: protocolVersion) ?? .castv210
        proto.sourceID = sourceID
        proto.destinationID = destinationID
        proto.namespace = namespace
        switch payload {
        case .string(let text):
            proto.payloadType = .string
            proto.payloadUtf8 = text
        case .binary(let bytes):
            proto.payloadType = .binary
            proto.payloadBinary = Data(bytes)
        }
        do {
            return try proto.serializedBytes()
        } catch {
            throw CastMessageError.malformed("\(error)")
        }
    }

    /// Parses protobuf bytes, checking what Chromium checks: required fields present, ids and
    /// namespace non-empty, and the payload field that matches `payload_type`. Read in one pass
    /// by `CastMessageReader`, which takes what SwiftProtobuf takes
    /// (`init(swiftProtobufBytes:)`, the reference).
    public init<Bytes: Collection<UInt8>>(serializedBytes bytes: Bytes) throws {
        let read: Result<CastMessageReader.Fields, CastMessageReader.Refused>
        if let contiguous = bytes.withContiguousStorageIfAvailable({ buffer in
            Result { () throws(CastMessageReader.Refused) in try CastMessageReader.read(UnsafeRawBufferPointer(buffer)) }
        }) {
            read = contiguous
        } else {
            read = Array(bytes).withUnsafeBytes { buffer in
                Result { () throws(CastMessageReader.Refused) in try CastMessageReader.read(buffer) }
            }
        }
        let fields: CastMessageReader.Fields
        switch read {
        case .success(let f): fields = f
        case .failure(let refused): throw CastMessageError.malformed(refused.description)
        }
        guard let version = fields.protocolVersion, let source = fields.sourceID, let destination = fields.destinationID,
              let namespace = fields.namespace, let payloadType = fields.payloadType else {
            throw CastMessageError.malformed("a required field is missing")
        }
        guard !source.isEmpty, !destination.isEmpty, !namespace.isEmpty else {
            throw CastMessageError.invalid("empty source, destination or namespace")
        }
        let payload: CastPayload
        if payloadType == 0 {
            guard let text = fields.payloadUTF8 else { throw CastMessageError.invalid("STRING message without payload_utf8") }
            payload = .string(text)
        } else {
            guard let bytes = fields.payloadBinary else { throw CastMessageError.invalid("BINARY message without payload_binary") }
            payload = .binary(bytes)
        }
        self.init(protocolVersion: version, sourceID: source, destinationID: destination, namespace: namespace, payload: payload)
    }

    /// The reference reading, through SwiftProtobuf's generated type (for tests and the
    /// `fuzz-frame` target, which compare it with `init(serializedBytes:)` on every input).
    public init<Bytes: Collection<UInt8>>(swiftProtobufBytes bytes: Bytes) throws {
        let proto: ProtoCastMessage
        do {
            proto = try ProtoCastMessage(serializedBytes: Array(bytes))
        } catch {
            throw CastMessageError.malformed("\(error)")
        }
        guard !proto.sourceID.isEmpty, !proto.destinationID.isEmpty, !proto.namespace.isEmpty else {
            throw CastMessageError.invalid("empty source, destination or namespace")
        }
        let payload: CastPayload
        switch proto.payloadType {
        case .string:
            guard proto.hasPayloadUtf8 else { throw CastMessageError.invalid("STRING message without payload_utf8") }
            payload = .string(proto.payloadUtf8)
        case .binary:
            guard proto.hasPayloadBinary else { throw CastMessageError.invalid("BINARY message without payload_binary") }
            payload = .binary(Array(proto.payloadBinary))
        }
        self.init(
            protocolVersion: proto.protocolVersion.rawValue,
            sourceID: proto.sourceID,
            destinationID: proto.destinationID,
            namespace: proto.namespace,
            payload: payload
        )
    }
}
