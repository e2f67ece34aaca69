import NIOCore

/// Cast v2 framing: a 4-byte big-endian body length, then the serialized `CastMessage`.
public enum CastFraming {
    /// Largest body Chrome and Open Screen accept or send (64 KiB).
    public static let maxBodySize = 65_536
    /// Bytes of the length prefix.
    public static let headerSize = 4
    /// Room a CastMessage needs besides its payload and namespace: endpoint ids (`sender-0`, a
    /// transport id), protobuf tags and lengths, the version fields.
    public static let envelopeReserve = 256

    /// The one 64 KiB rule, for a message not built yet: a payload of `payloadBytes` on
    /// `namespace` fits in a frame with room for the envelope. (`CastDeviceClient` measures a
    /// built message near the limit exactly; the framer refuses anything larger.)
    public static func fits(payloadBytes: Int, namespace: String) -> Bool {
        payloadBytes + namespace.utf8.count + envelopeReserve <= maxBodySize
    }

    /// Appends one frame (header + body) for `message` to `buffer`.
    public static func write(_ message: CastMessage, into buffer: inout ByteBuffer) throws {
        let body = try message.serializedBytes()
        guard !body.isEmpty else { throw CastFramingError.emptyFrame }
        guard body.count <= maxBodySize else { throw CastFramingError.oversizedFrame(length: body.count) }
        buffer.writeInteger(UInt32(body.count), endianness: .big)
        buffer.writeBytes(body)
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
