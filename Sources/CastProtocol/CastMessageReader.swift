/// Reads a `CastMessage` from its protobuf bytes in one pass, without SwiftProtobuf: the
/// counterpart of the hand-written frame writer (`CastFraming.write`).
///
/// Why: SwiftProtobuf checks a string field's UTF-8 one scalar at a time through the generic
/// `Unicode.UTF8.ForwardParser`; in a debug build, where nothing of it is specialised, that
/// costs ~300 ns a byte — 18 ms for one 60 KB status, and a device sending such frames (the
/// simulator's `deep_nesting` and `long_strings` classes) kept the debug daemon's loop busy for
/// seconds (issue #26). Here a string is checked and copied by `String(validating:as:)` (50 µs
/// for the same 60 KB), and the body is read in place, without the copy SwiftProtobuf needs.
///
/// It takes exactly what SwiftProtobuf's binary decoder takes for `CastMessage` and makes the
/// same message of it (`CastMessageReaderTests` and the `fuzz-frame` target compare the two on
/// every input): a tag is at most 5 bytes with a field number above 0 and a wire type 0–5; a
/// known field with another wire type than its own, an enum value the enum does not have, and
/// every unknown field are skipped (varints of at most 10 bytes; groups matched by field number
/// and nested at most 99 deep); a length-delimited field is shorter than 2^31 − 1 bytes and fits;
/// strings are valid UTF-8; the last occurrence of a field wins; the five required fields must
/// be there. Which error a refused body gets may differ from SwiftProtobuf's; that one is refused
/// does not.
enum CastMessageReader {
    struct Refused: Error, CustomStringConvertible {
        let description: String
        init(_ why: String) { description = why }
    }

    /// The fields as read (nil: not present).
    struct Fields {
        var protocolVersion: Int?
        var sourceID: String?
        var destinationID: String?
        var namespace: String?
        var payloadType: Int?
        var payloadUTF8: String?
        var payloadBinary: [UInt8]?
    }

    /// SwiftProtobuf's default `messageDepthLimit`, of which the message itself takes one.
    static let groupDepthLimit = 99

    static func read(_ bytes: UnsafeRawBufferPointer) throws(Refused) -> Fields {
        var reader = Reader(bytes: bytes)
        var fields = Fields()
        while reader.at < bytes.count {
            let fieldStart = reader.at
            let (number, wire) = try reader.tag()
            var consumed = false
            switch (number, wire) {
            case (1, 0):
                if let value = try reader.enumValue(known: 0...3) { fields.protocolVersion = value; consumed = true }
            case (2, 2): fields.sourceID = try reader.string(); consumed = true
            case (3, 2): fields.destinationID = try reader.string(); consumed = true
            case (4, 2): fields.namespace = try reader.string(); consumed = true
            case (5, 0):
                if let value = try reader.enumValue(known: 0...1) { fields.payloadType = value; consumed = true }
            case (6, 2): fields.payloadUTF8 = try reader.string(); consumed = true
            case (7, 2): fields.payloadBinary = Array(try reader.lengthDelimited()); consumed = true
            case (8, 0), (9, 0):
                // `continued` and `remaining_length`: read, not used.
                _ = try reader.varint()
                consumed = true
            default:
                break
            }
            if !consumed {
                // Unknown (or a known field in another wire type, or an enum value the enum lacks):
                // skipped from its tag, as SwiftProtobuf keeps it among the unknown fields.
                reader.at = fieldStart
                let tag = try reader.fullTag()
                try reader.skip(number: tag.number, wire: tag.wire, depth: 0)
            }
        }
        return fields
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var at = 0

        var available: Int { bytes.count - at }

        /// A field's tag as SwiftProtobuf reads the next field's: at most 5 bytes, the fifth
        /// below 16; the wire type 0–5; the field number above 0; no end of group at the top.
        mutating func tag() throws(Refused) -> (number: Int, wire: UInt8) {
            let wire = bytes[at] & 7
            guard wire <= 5 else { throw Refused("wire type \(wire)") }
            var number = 0
            var shift = -3
            for index in 0..<5 {
                guard at + index < bytes.count else { throw Refused("truncated tag") }
                let byte = bytes[at + index]
                if index == 4, byte > 15 { throw Refused("tag longer than 32 bits") }
                number |= shift < 0 ? Int(byte & 0x7F) >> 3 : Int(byte & 0x7F) << shift
                shift += 7
                if byte & 0x80 == 0 {
                    at += index + 1
                    guard number != 0 else { throw Refused("field number 0") }
                    guard wire != 4 else { throw Refused("end of a group that was not started") }
                    return (number, wire)
                }
            }
            // Not reached: a fifth byte below 16 has no continuation bit.
            throw Refused("tag longer than 32 bits")
        }

        /// A tag read as a varint (how SwiftProtobuf reads tags while it skips).
        mutating func fullTag() throws(Refused) -> (number: Int, wire: UInt8) {
            let raw = try varint()
            guard raw < UInt64(UInt32.max) else { throw Refused("tag out of range") }
            let wire = UInt8(raw & 7)
            guard raw >> 3 != 0, wire <= 5 else { throw Refused("invalid tag") }
            return (Int(raw >> 3), wire)
        }

        mutating func varint() throws(Refused) -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard at < bytes.count else { throw Refused("truncated varint") }
                guard shift <= 63 else { throw Refused("varint longer than 10 bytes") }
                let byte = bytes[at]
                at += 1
                value |= UInt64(byte & 0x7F) &<< shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
        }

        /// A proto2 enum's value: nil when the enum has no such case (SwiftProtobuf then keeps
        /// the field as unknown and the field stays as it was).
        mutating func enumValue(known: ClosedRange<Int>) throws(Refused) -> Int? {
            let value = Int(Int32(truncatingIfNeeded: try varint()))
            return known.contains(value) ? value : nil
        }

        mutating func lengthDelimited() throws(Refused) -> UnsafeRawBufferPointer {
            let length = try varint()
            guard length < 0x7FFF_FFFF else { throw Refused("field longer than 2 GiB") }
            guard length <= UInt64(available) else { throw Refused("truncated field") }
            let body = UnsafeRawBufferPointer(rebasing: bytes[at..<(at + Int(length))])
            at += Int(length)
            return body
        }

        mutating func string() throws(Refused) -> String {
            let body = try lengthDelimited()
            guard let text = String(validating: body, as: UTF8.self) else { throw Refused("a string field is not UTF-8") }
            return text
        }

        /// Skips one field whose tag was read; a group up to its end (nested groups count
        /// against `groupDepthLimit`).
        mutating func skip(number: Int, wire: UInt8, depth: Int) throws(Refused) {
            switch wire {
            case 0:
                _ = try varint()
            case 1, 5:
                let size = wire == 1 ? 8 : 4
                guard available >= size else { throw Refused("truncated fixed-size field") }
                at += size
            case 2:
                let length = try varint()
                guard length <= UInt64(available) else { throw Refused("truncated field") }
                at += Int(length)
            case 3:
                guard depth < CastMessageReader.groupDepthLimit else { throw Refused("groups nested too deep") }
                while true {
                    guard at < bytes.count else { throw Refused("unterminated group") }
                    let inner = try fullTag()
                    if inner.wire == 4 {
                        guard inner.number == number else { throw Refused("end of another group") }
                        return
                    }
                    try skip(number: inner.number, wire: inner.wire, depth: depth + 1)
                }
            default:
                throw Refused("end of a group that was not started")
            }
        }
    }
}
