import CastSimulator
import NIOCore
import Testing

@testable import CastProtocol

private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
private func bytes(hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        out.append(UInt8(hex[index..<next], radix: 16) ?? 0)
        index = next
    }
    return out
}

private let pingMessage = CastMessage(
    sourceID: "sender-0", destinationID: "receiver-0", namespace: CastNamespace.heartbeat,
    payload: .string(#"{"type":"PING"}"#))

// Built by hand from the proto2 wire format (tag, length, bytes), independently of SwiftProtobuf.
private let pingGolden =
    "0800120873656e6465722d301a0a72656365697665722d30222775726e3a782d636173743a636f6d2e676f6f676c652e636173742e74702e6865617274626561742800320f7b2274797065223a2250494e47227d"
private let binaryGolden =
    "0800120873656e6465722d301a056170702d31221675726e3a782d636173743a636f6d2e6578616d706c6528013a030102ff"

@Suite struct ProtobufTests {
    @Test func stringMessageMatchesGoldenBytes() throws {
        #expect(hex(try pingMessage.serializedBytes()) == pingGolden)
    }

    @Test func binaryMessageMatchesGoldenBytes() throws {
        let message = CastMessage(sourceID: "sender-0", destinationID: "app-1", namespace: "urn:x-cast:com.example",
                                  payload: .binary([1, 2, 255]))
        #expect(hex(try message.serializedBytes()) == binaryGolden)
    }

    @Test func requiredZeroFieldsAreAlwaysWritten() throws {
        let encoded = try pingMessage.serializedBytes()
        // protocol_version (tag 0x08) and payload_type (tag 0x28) must be present even when 0.
        #expect(Array(encoded.prefix(2)) == [0x08, 0x00])
        #expect(hex(encoded).contains("2800"))
    }

    @Test func decodesGoldenBytes() throws {
        #expect(try CastMessage(serializedBytes: bytes(hex: pingGolden)) == pingMessage)
        let binary = try CastMessage(serializedBytes: bytes(hex: binaryGolden))
        #expect(binary.payload == .binary([1, 2, 255]))
        #expect(binary.destinationID == "app-1")
    }

    @Test func rejectsMissingRequiredFields() {
        // Only source_id: not fully initialized.
        #expect(throws: CastMessageError.self) { try CastMessage(serializedBytes: [0x12, 0x01, 0x61]) }
        #expect(throws: CastMessageError.self) { try CastMessage(serializedBytes: [0xff, 0xff, 0xff]) }
    }

    @Test func rejectsPayloadTypeMismatch() throws {
        // STRING payload type but only payload_binary set.
        var raw = bytes(hex: binaryGolden)
        if let i = raw.firstIndex(of: 0x28) { raw[i + 1] = 0 }
        #expect(throws: CastMessageError.invalid("STRING message without payload_utf8")) {
            try CastMessage(serializedBytes: raw)
        }
    }
}

@Suite struct FramingTests {
    private func decodeAll(_ chunks: [[UInt8]]) throws -> [CastMessage] {
        var decoder = CastFrameDecoder()
        var buffer = ByteBuffer()
        var out: [CastMessage] = []
        for chunk in chunks {
            buffer.writeBytes(chunk)
            while let message = try decoder.decode(buffer: &buffer) { out.append(message) }
        }
        return out
    }

    @Test func frameHasBigEndianLengthPrefix() throws {
        let frame = try CastFraming.frame(pingMessage)
        #expect(Array(frame.prefix(4)) == [0, 0, 0, 84])
        #expect(hex(Array(frame.dropFirst(4))) == pingGolden)
    }

    @Test func decodesFrameSplitByteByByte() throws {
        let frame = try CastFraming.frame(pingMessage)
        let messages = try decodeAll(frame.map { [$0] })
        #expect(messages == [pingMessage])
    }

    @Test func decodesCoalescedFrames() throws {
        let frame = try CastFraming.frame(pingMessage)
        let messages = try decodeAll([frame + frame + Array(frame.prefix(10)), Array(frame.dropFirst(10))])
        #expect(messages == [pingMessage, pingMessage, pingMessage])
    }

    @Test func rejectsZeroLengthFrame() {
        #expect(throws: CastFramingError.emptyFrame) { try decodeAll([[0, 0, 0, 0]]) }
    }

    @Test func rejectsOversizedHeaderBeforeBodyArrives() {
        #expect(throws: CastFramingError.oversizedFrame(length: 65_537)) { try decodeAll([[0, 1, 0, 1]]) }
    }

    @Test func acceptsExactlyMaximumBody() throws {
        let text = String(repeating: "a", count: 65_536 - 100)
        var message = pingMessage
        message.namespace = "urn:x-cast:com.example"
        message.payload = .string(text)
        var size = try message.serializedBytes().count
        // Grow to exactly 65 536 bytes.
        message.payload = .string(text + String(repeating: "b", count: 65_536 - size))
        size = try message.serializedBytes().count
        #expect(size == 65_536)
        #expect(try decodeAll([CastFraming.frame(message)]) == [message])
        message.payload = .string(text + String(repeating: "b", count: 65_537 - 100 + 1))
        #expect(throws: CastFramingError.self) { try CastFraming.frame(message) }
    }

    @Test func garbageBodyIsTypedError() {
        #expect(throws: CastFramingError.self) { try decodeAll([[0, 0, 0, 3, 0xff, 0xff, 0xff]]) }
    }

    @Test func partialFrameWaits() throws {
        let frame = try CastFraming.frame(pingMessage)
        #expect(try decodeAll([Array(frame.prefix(3))]).isEmpty)
        #expect(try decodeAll([Array(frame.prefix(50))]).isEmpty)
    }

    /// The frame writer puts the protobuf into the buffer itself: byte for byte SwiftProtobuf's
    /// encoding, for every shape (lengths across varint boundaries, text, binary, empty fields,
    /// non-ASCII, protocol versions in and out of range), and it leaves the buffer as it was when
    /// the body is too large.
    @Test func theFrameWriterWritesWhatSwiftProtobufWrites() throws {
        var random = SeededRandom(seed: 11)
        let texts = ["", "a", "sender-0", "é", "\u{1F600}", String(repeating: "x", count: 127), String(repeating: "y", count: 128)]
        var checked = 0
        for length in [0, 1, 127, 128, 16_383, 16_384, 65_400, 66_000] + (0..<60).map({ _ in Int(random.next() % 66_000) }) {
            for version in [0, 1, 2, 3, 4, -1, 1 << 40] {
                let id = texts[Int(random.next() % UInt64(texts.count))]
                for payload in [CastPayload.string(String(repeating: "é", count: length / 2)), .binary((0..<length).map { UInt8(truncatingIfNeeded: $0) })] {
                    let message = CastMessage(protocolVersion: version, sourceID: id, destinationID: texts[checked % texts.count],
                                              namespace: "urn:x-cast:" + id, payload: payload)
                    var buffer = ByteBuffer(bytes: [9, 9])
                    let reference = try message.serializedBytes()
                    if reference.count <= CastFraming.maxBodySize {
                        try CastFraming.write(message, into: &buffer)
                        let expected = [9, 9] + withUnsafeBytes(of: UInt32(reference.count).bigEndian, Array.init) + reference
                        #expect(Array(buffer.readableBytesView) == expected)
                    } else {
                        #expect(throws: CastFramingError.oversizedFrame(length: reference.count)) {
                            try CastFraming.write(message, into: &buffer)
                        }
                        #expect(Array(buffer.readableBytesView) == [9, 9])
                    }
                    checked += 1
                }
            }
        }
        #expect(checked == 68 * 7 * 2)
    }

    /// The size rule is computed from the field lengths: it must equal the serialized size for
    /// every shape of message (lengths across the varint boundaries, text and binary).
    @Test func encodedSizeIsTheSerializedSize() throws {
        var random = SeededRandom(seed: 7)
        for length in [0, 1, 127, 128, 16_383, 16_384, 65_000, 70_000] + (0..<200).map({ _ in Int(random.next() % 70_000) }) {
            let ids = Int(random.next() % 200)
            for payload in [CastPayload.string(String(repeating: "é", count: length / 2)), .binary(Array(repeating: 7, count: length))] {
                let message = CastMessage(sourceID: String(repeating: "s", count: ids + 1),
                                          destinationID: "transport-\(length)", namespace: "urn:x-cast:" + String(repeating: "n", count: ids),
                                          payload: payload)
                #expect(CastFraming.encodedSize(message) == (try message.serializedBytes()).count)
                #expect(CastFraming.fits(message) == ((try message.serializedBytes()).count <= CastFraming.maxBodySize))
            }
        }
    }
}
