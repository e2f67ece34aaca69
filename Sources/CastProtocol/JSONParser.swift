import Foundation

extension JSONValue {
    /// Parses JSON text into a value; nil when it is not JSON. The plain cases are read by
    /// `JSONParser` in one pass; whatever it is unsure of (and everything that is not JSON) is
    /// left to `JSONDecoder`, so the result is always the one `JSONDecoder` gives. The command and
    /// payload fuzzers compare the two on every input the parser decides.
    public static func parse(_ bytes: [UInt8]) -> JSONValue? {
        if let value = bytes.withUnsafeBufferPointer(JSONParser.parse) { return value }
        return parseWithJSONDecoder(bytes)
    }

    public static func parse(_ text: String) -> JSONValue? {
        parse(Array(text.utf8))
    }

    /// The reference: the value as `JSONDecoder` reads it (for tests, the fuzzers and the cases
    /// the parser leaves to it).
    public static func parseWithJSONDecoder(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    /// What `JSONParser` alone makes of `bytes`: nil when it leaves them to `JSONDecoder`.
    public static func parseWithoutFallback(_ bytes: [UInt8]) -> JSONValue? {
        bytes.withUnsafeBufferPointer(JSONParser.parse)
    }
}

/// A one-pass reader of JSON into `JSONValue`, without `JSONDecoder`. Decoding a `JSONValue`
/// through `JSONDecoder` tries each kind in turn, and every miss builds a `DecodingError` with its
/// coding path and a formatted message: a command as small as `{"percent":30,"id":1}` built four
/// of them. Every command payload and every app message the bridge forwards is read this way.
///
/// It decides only what is plainly valid JSON and answers nil (unsure) for the rest, which
/// `JSONDecoder` then decides: anything outside the strict grammar, a number that is not finite
/// as a Double, a lone UTF-16 surrogate in an escape, a duplicate key, bytes that are not UTF-8,
/// nesting deeper than `maxDepth`, a byte order mark.
enum JSONParser {
    /// Deeper nesting is left to `JSONDecoder` (whose own limit is 512); the bridge refuses
    /// commands deeper than 32 before parsing them.
    static let maxDepth = 128

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        var reader = Reader(bytes: bytes)
        do {
            let value = try reader.value(depth: 0)
            reader.skipSpace()
            guard reader.at == bytes.count else { return nil }
            return value
        } catch {
            return nil
        }
    }

    private struct Unsure: Error {}

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func skipSpace() {
            while at < bytes.count {
                switch bytes[at] {
                case 0x20, 0x09, 0x0A, 0x0D: at += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(Unsure) -> JSONValue {
            skipSpace()
            guard at < bytes.count else { throw Unsure() }
            switch bytes[at] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw Unsure()
            }
        }

        mutating func object(depth: Int) throws(Unsure) -> JSONValue {
            guard depth <= JSONParser.maxDepth else { throw Unsure() }
            at += 1  // {
            var members: [String: JSONValue] = [:]
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
                at += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw Unsure() }
                let key = try string()
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw Unsure() }
                at += 1
                let member = try value(depth: depth)
                // Which of two equal keys wins is JSONDecoder's to say.
                guard members.updateValue(member, forKey: key) == nil else { throw Unsure() }
                skipSpace()
                guard at < bytes.count else { throw Unsure() }
                let next = bytes[at]
                at += 1
                if next == UInt8(ascii: "}") { return .object(members) }
                guard next == UInt8(ascii: ",") else { throw Unsure() }
            }
        }

        mutating func array(depth: Int) throws(Unsure) -> JSONValue {
            guard depth <= JSONParser.maxDepth else { throw Unsure() }
            at += 1  // [
            var elements: [JSONValue] = []
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
                at += 1
                return .array(elements)
            }
            while true {
                elements.append(try value(depth: depth))
                skipSpace()
                guard at < bytes.count else { throw Unsure() }
                let next = bytes[at]
                at += 1
                if next == UInt8(ascii: "]") { return .array(elements) }
                guard next == UInt8(ascii: ",") else { throw Unsure() }
            }
        }

        mutating func literal(_ word: StaticString) throws(Unsure) {
            let count = word.utf8CodeUnitCount
            guard bytes.count - at >= count else { throw Unsure() }
            let expected = UnsafeBufferPointer(start: word.utf8Start, count: count)
            for i in 0..<count where bytes[at + i] != expected[i] { throw Unsure() }
            at += count
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, converted by `Double(_:)` (correctly
        /// rounded, as `JSONDecoder`'s conversion is); not finite, or zero from a non-zero
        /// mantissa, is unsure.
        mutating func number() throws(Unsure) -> Double {
            let start = at
            if bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard at < bytes.count else { throw Unsure() }
            if bytes[at] == UInt8(ascii: "0") {
                at += 1
            } else {
                guard try digits() > 0 else { throw Unsure() }
            }
            if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
                at += 1
                guard try digits() > 0 else { throw Unsure() }
            }
            let mantissaEnd = at
            if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
                at += 1
                if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
                guard try digits() > 0 else { throw Unsure() }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
            guard let number = Double(text), number.isFinite else { throw Unsure() }
            // JSONDecoder refuses a number that underflows to zero (`1e-400`): unsure.
            if number == 0, bytes[start..<mantissaEnd].contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }) {
                throw Unsure()
            }
            return number
        }

        /// Reads `[0-9]*`; how many. A number of more than a thousand digits is unsure.
        mutating func digits() throws(Unsure) -> Int {
            let start = at
            while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") { at += 1 }
            guard at - start <= 1000 else { throw Unsure() }
            return at - start
        }

        /// A string whose opening quote is at `at`; `at` ends after its closing quote.
        mutating func string() throws(Unsure) -> String {
            at += 1  // "
            let start = at
            var ascii = true
            // The common case: no escapes. Control characters are never allowed unescaped.
            while at < bytes.count {
                let byte = bytes[at]
                if byte == UInt8(ascii: "\"") {
                    let raw = UnsafeBufferPointer(rebasing: bytes[start..<at])
                    at += 1
                    if ascii { return String(decoding: raw, as: UTF8.self) }
                    guard let text = String(validating: raw, as: UTF8.self) else { throw Unsure() }
                    return text
                }
                if byte == UInt8(ascii: "\\") { break }
                guard byte >= 0x20 else { throw Unsure() }
                if byte >= 0x80 { ascii = false }
                at += 1
            }
            guard at < bytes.count else { throw Unsure() }
            // Escapes: the text so far, then the rest unescaped into a buffer.
            var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<at]))
            while at < bytes.count {
                let byte = bytes[at]
                at += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: out, as: UTF8.self) else { throw Unsure() }
                    return text
                case UInt8(ascii: "\\"):
                    guard at < bytes.count else { throw Unsure() }
                    let escape = bytes[at]
                    at += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            // A high surrogate must be followed by an escaped low one.
                            guard bytes.count - at >= 6, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u")
                            else { throw Unsure() }
                            at += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw Unsure() }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00...0xDFFF).contains(scalar) {
                            throw Unsure()
                        }
                        guard let unicode = Unicode.Scalar(scalar), let encoded = UTF8.encode(unicode) else { throw Unsure() }
                        out.append(contentsOf: encoded)
                    default:
                        throw Unsure()
                    }
                default:
                    guard byte >= 0x20 else { throw Unsure() }
                    out.append(byte)
                }
            }
            throw Unsure()
        }

        mutating func hex4() throws(Unsure) -> UInt32 {
            guard bytes.count - at >= 4 else { throw Unsure() }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[at]
                at += 1
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw Unsure()
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
    }
}
