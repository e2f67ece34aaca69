import NIOCore

/// Cast v2 framing: a 4-byte big-endian body length, then the serialized `CastMessage`.
public enum CastFraming {
    /// Largest body Chrome and Open Screen accept or send (64 KiB).
    public static let maxBodySize = 65_536
    /// Bytes of the length prefix.
    public static let headerSize = 4
    /// The exact size of `message` serialized (protobuf): what the 64 KiB rule is about. Computed
    /// from the field lengths, without serializing.
    public static func encodedSize(_ message: CastMessage) -> Int {
        func field(_ length: Int) -> Int { 1 + varintSize(length) + length }
        let payload: Int
        switch message.payload {
        case .string(let text): payload = text.utf8.count
        case .binary(let bytes): payload = bytes.count
        }
        // protocol_version (a tag and its varint) and payload_type (a tag and a one-byte varint).
        return 1 + varintSize(message.protocolVersion) + 2 + field(message.sourceID.utf8.count) + field(message.destinationID.utf8.count)
            + field(message.namespace.utf8.count) + field(payload)
    }

    /// True when `message` fits in one frame (the one 64 KiB rule for what we send).
    public static func fits(_ message: CastMessage) -> Bool { encodedSize(message) <= maxBodySize }

    /// Room for an endpoint id not known yet (the app's transport id) when a payload is checked
    /// before it can be addressed.
    public static let endpointReserve = 128

    /// The same rule for a payload checked before its destination is known (a command is refused
    /// before anything is sent, e.g. before the app that would receive it is launched): a
    /// destination of `endpointReserve` bytes is assumed; the exact check happens when it is sent.
    public static func fits(payload: CastPayload, namespace: String) -> Bool {
        fits(CastMessage(sourceID: CastEndpoint.sender, destinationID: String(repeating: "x", count: endpointReserve),
                         namespace: namespace, payload: payload))
    }

    static func varintSize(_ value: Int) -> Int {
        var size = 1
        var rest = UInt64(clamping: value) >> 7
        while rest > 0 {
            size += 1
            rest >>= 7
        }
        return size
    }

    /// Appends one frame (header + body) for `message` to `buffer`; on a throw `buffer` is as it
    /// was. The body is the CastMessage protobuf written field by field straight into the buffer,
    /// byte for byte what SwiftProtobuf writes for it (`CastMessage.serializedBytes()`, the
    /// reference its tests compare with): every field set, in field order, an unknown protocol
    /// version as CASTV2_1_0. No intermediate message, array or copy on the way to the socket.
    public static func write(_ message: CastMessage, into buffer: inout ByteBuffer) throws {
        let start = buffer.writerIndex
        buffer.writeInteger(UInt32(0), endianness: .big)  // the length, set at the end
        let version = (0...3).contains(message.protocolVersion) ? message.protocolVersion : 0
        buffer.writeInteger(UInt8(1 << 3))  // protocol_version, varint
        writeVarint(UInt64(version), into: &buffer)
        writeField(2, message.sourceID, into: &buffer)
        writeField(3, message.destinationID, into: &buffer)
        writeField(4, message.namespace, into: &buffer)
        switch message.payload {
        case .string(let text):
            buffer.writeInteger(UInt16(5 << 3) << 8)  // payload_type STRING
            writeField(6, text, into: &buffer)
        case .binary(let bytes):
            buffer.writeInteger(UInt16(5 << 3) << 8 | 1)  // payload_type BINARY
            buffer.writeInteger(UInt8(7 << 3 | 2))
            writeVarint(UInt64(bytes.count), into: &buffer)
            buffer.writeBytes(bytes)
        }
        let length = buffer.writerIndex - start - headerSize
        guard length <= maxBodySize else {
            buffer.moveWriterIndex(to: start)
            throw CastFramingError.oversizedFrame(length: length)
        }
        buffer.setInteger(UInt32(length), at: start, endianness: .big)
    }

    /// A length-delimited string field: its tag, its UTF-8 length as a varint, its bytes.
    private static func writeField(_ number: UInt8, _ text: String, into buffer: inout ByteBuffer) {
        buffer.writeInteger(number << 3 | 2)
        writeVarint(UInt64(text.utf8.count), into: &buffer)
        buffer.writeString(text)
    }

    private static func writeVarint(_ value: UInt64, into buffer: inout ByteBuffer) {
        var rest = value
        while rest >= 0x80 {
            buffer.writeInteger(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        buffer.writeInteger(UInt8(rest))
    }

    /// One frame as bytes (used by tests and the simulator's fault injection).
    public static func frame(_ message: CastMessage) throws -> [UInt8] {
        var buffer = ByteBuffer()
        try write(message, into: &buffer)
        return Array(buffer.readableBytesView)
    }
}

/// Framing errors. Each one means the byte stream can no longer be trusted: close the connection.
public enum CastFramingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A header announced a body larger than `CastFraming.maxBodySize`.
    case oversizedFrame(length: Int)
    /// A header announced a zero-length body.
    case emptyFrame
    /// The body was not a valid `CastMessage`.
    case invalidMessage(CastMessageError)

    public var description: String {
        switch self {
        case .oversizedFrame(let length): return "frame of \(length) bytes exceeds the 65536-byte limit"
        case .emptyFrame: return "zero-length frame"
        case .invalidMessage(let error): return error.description
        }
    }
}

/// Single-step decoder: peeks the length, refuses bad lengths before buffering the body, and
/// waits (without consuming) while a frame is incomplete. Handles split and coalesced input.
public struct CastFrameDecoder: NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = CastMessage

    public init() {}

    public mutating func decode(buffer: inout ByteBuffer) throws -> CastMessage? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else {
            return nil
        }
        guard length > 0 else { throw CastFramingError.emptyFrame }
        guard length <= CastFraming.maxBodySize else { throw CastFramingError.oversizedFrame(length: Int(length)) }
        let total = CastFraming.headerSize + Int(length)
        guard buffer.readableBytes >= total else { return nil }
        buffer.moveReaderIndex(forwardBy: CastFraming.headerSize)
        guard let body = buffer.readSlice(length: Int(length)) else { return nil }
        do {
            return try CastMessage(serializedBytes: body.readableBytesView)
        } catch let error as CastMessageError {
            throw CastFramingError.invalidMessage(error)
        }
    }

    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> CastMessage? {
        try decode(buffer: &buffer)
    }
}

/// Encoder that frames outgoing `CastMessage`s; refuses bodies over 64 KiB.
public struct CastFrameEncoder: MessageToByteEncoder {
    public typealias OutboundIn = CastMessage

    public init() {}

    public func encode(data: CastMessage, out: inout ByteBuffer) throws {
        try CastFraming.write(data, into: &out)
    }
}
