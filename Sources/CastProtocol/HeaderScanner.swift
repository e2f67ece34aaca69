/// Reads the routing header of a payload (top-level `type` — or `responseType` without one —
/// and `requestId` / `launchRequestId`) in one pass over the bytes, without `JSONDecoder`. Every message a device
/// sends has its header read first (the state machine matches replies by it), so this is on the
/// path of every status and every heartbeat.
///
/// It decides only the plain cases and says `unsure` for the rest, where `JSONDecoder` then
/// decides, so the result is always the one `JSONDecoder` gives: a key or the type written with
/// escapes, an id that is not a plain integer (`3.0`, `1e3`, huge), a duplicate routing key, a
/// top level that is not an object, or anything that is not strictly valid JSON. The payload
/// fuzzer checks that the two agree on every input the scanner decides.
enum HeaderScanner {
    enum Outcome: Equatable {
        case header(CastPayloadHeader)
        case unsure
    }

    /// Nesting deeper than this is left to `JSONDecoder`.
    static let maxDepth = 64

    static func scan(_ text: String) -> Outcome {
        var text = text
        return text.withUTF8 { bytes in
            var scanner = Scanner(bytes: bytes)
            return scanner.header() ?? .unsure
        }
    }

    private struct Unsure: Error {}

    private enum IDValue {
        case absent
        case value(Int)
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func header() -> Outcome? {
            do {
                skipSpace()
                try expect(UInt8(ascii: "{"))
                // nil: the key was not there; .some(nil): there, but not a plain string.
                var type: String??
                var responseType: String??
                var requestId: IDValue?
                var launchRequestId: IDValue?
                try members(keys: .plain) { (scanner: inout Scanner, key: Range<Int>?) throws(Unsure) in
                    guard let key else { throw Unsure() }
                    if scanner.equals(key, "type") {
                        guard type == nil else { throw Unsure() }
                        type = .some(try scanner.kindValue())
                    } else if scanner.equals(key, "responseType") {
                        guard responseType == nil else { throw Unsure() }
                        responseType = .some(try scanner.kindValue())
                    } else if scanner.equals(key, "requestId") {
                        guard requestId == nil else { throw Unsure() }
                        requestId = try scanner.idValue()
                    } else if scanner.equals(key, "launchRequestId") {
                        guard launchRequestId == nil else { throw Unsure() }
                        launchRequestId = try scanner.idValue()
                    } else {
                        try scanner.skipValue(depth: 1)
                    }
                }
                skipSpace()
                guard at == bytes.count else { throw Unsure() }
                var id: Int?
                if case .value(let value)? = requestId { id = value }
                if id == nil, case .value(let value)? = launchRequestId { id = value }
                // `responseType` names the kind only when there is no `type` key at all.
                return .header(CastPayloadHeader(type: type ?? responseType ?? nil, requestId: id))
            } catch {
                return nil
            }
        }

        enum Keys {
            /// An array: elements without keys.
            case none
            /// An object whose keys are skipped (escapes allowed).
            case skipped
            /// An object whose keys are handed to `element` (escaped keys are `Unsure`).
            case plain
        }

        /// Reads the elements of the array or object whose opening bracket was just read, up to
        /// its closing bracket: for each, the key and colon (per `keys`), then `element`, which
        /// must read the value. `element` gets the key's range when `keys` is `.plain`.
        mutating func members(keys: Keys, _ element: (inout Scanner, Range<Int>?) throws(Unsure) -> Void) throws(Unsure) {
            let close = keys == .none ? UInt8(ascii: "]") : UInt8(ascii: "}")
            skipSpace()
            if peek() == close { at += 1; return }
            while true {
                skipSpace()
                var key: Range<Int>?
                if keys != .none {
                    if keys == .plain { key = try plainString() } else { try skipString() }
                    skipSpace()
                    try expect(UInt8(ascii: ":"))
                    skipSpace()
                }
                try element(&self, key)
                skipSpace()
                let next = try byte()
                if next == close { return }
                guard next == UInt8(ascii: ",") else { throw Unsure() }
            }
        }

        /// The value of `type` / `responseType`: a plain string, else nil (the value skipped).
        mutating func kindValue() throws(Unsure) -> String? {
            guard peek() == UInt8(ascii: "\"") else {
                try skipValue(depth: 1)
                return nil
            }
            let value = try plainString()
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[value]), as: UTF8.self)
        }

        func peek() -> UInt8? { at < bytes.count ? bytes[at] : nil }

        mutating func byte() throws(Unsure) -> UInt8 {
            guard at < bytes.count else { throw Unsure() }
            defer { at += 1 }
            return bytes[at]
        }

        mutating func expect(_ expected: UInt8) throws(Unsure) {
            guard try byte() == expected else { throw Unsure() }
        }

        mutating func skipSpace() {
            while at < bytes.count {
                switch bytes[at] {
                case 0x20, 0x09, 0x0A, 0x0D: at += 1
                default: return
                }
            }
        }

        func equals(_ range: Range<Int>, _ word: StaticString) -> Bool {
            guard range.count == word.utf8CodeUnitCount else { return false }
            let start = word.utf8Start
            for i in 0..<range.count where bytes[range.lowerBound + i] != start[i] { return false }
            return true
        }

        /// A string without escapes: the range of its contents.
        mutating func plainString() throws(Unsure) -> Range<Int> {
            try expect(UInt8(ascii: "\""))
            let start = at
            while true {
                let b = try byte()
                if b == UInt8(ascii: "\"") { return start..<(at - 1) }
                if b == UInt8(ascii: "\\") || b < 0x20 { throw Unsure() }
            }
        }

        /// A request id: a plain integer that fits in Int is a value; `null`, a string, a bool,
        /// an object or an array is absent (as `JSONDecoder` sees them); any other number is
        /// left to `JSONDecoder`.
        mutating func idValue() throws(Unsure) -> IDValue {
            guard let first = peek() else { throw Unsure() }
            guard first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
                try skipValue(depth: 1)
                return .absent
            }
            let start = at
            try skipNumber()
            let token = UnsafeBufferPointer(rebasing: bytes[start..<at])
            // Only digits after an optional sign: no fraction, no exponent.
            let digits = token.first == UInt8(ascii: "-") ? token.dropFirst() : token[...]
            guard digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                  let value = Int(String(decoding: token, as: UTF8.self)) else { throw Unsure() }
            return .value(value)
        }

        mutating func skipValue(depth: Int) throws(Unsure) {
            guard depth <= HeaderScanner.maxDepth, let first = peek() else { throw Unsure() }
            switch first {
            case UInt8(ascii: "\""):
                try skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                at += 1
                try members(keys: first == UInt8(ascii: "{") ? .skipped : .none) { (scanner: inout Scanner, _: Range<Int>?) throws(Unsure) in
                    try scanner.skipValue(depth: depth + 1)
                }
            case UInt8(ascii: "t"): try skipWord("true")
            case UInt8(ascii: "f"): try skipWord("false")
            case UInt8(ascii: "n"): try skipWord("null")
            default: try skipNumber()
            }
        }

        mutating func skipWord(_ word: StaticString) throws(Unsure) {
            let end = at + word.utf8CodeUnitCount
            guard end <= bytes.count, equals(at..<end, word) else { throw Unsure() }
            at = end
        }

        /// A string, escapes included (each checked for a valid form).
        mutating func skipString() throws(Unsure) {
            try expect(UInt8(ascii: "\""))
            while true {
                let b = try byte()
                if b == UInt8(ascii: "\"") { return }
                if b < 0x20 { throw Unsure() }
                guard b == UInt8(ascii: "\\") else { continue }
                switch try byte() {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    continue
                case UInt8(ascii: "u"):
                    // Lone or mismatched surrogates are JSONDecoder's to judge.
                    var value: UInt32 = 0
                    for _ in 0..<4 {
                        let h = try byte()
                        guard let digit = Self.hexValue(h) else { throw Unsure() }
                        value = value << 4 | digit
                    }
                    if (0xD800...0xDFFF).contains(value) { throw Unsure() }
                default:
                    throw Unsure()
                }
            }
        }

        static func hexValue(_ b: UInt8) -> UInt32? {
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(b - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(b - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(b - UInt8(ascii: "A") + 10)
            default: return nil
            }
        }

        /// A number in JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        mutating func skipNumber() throws(Unsure) {
            if peek() == UInt8(ascii: "-") { at += 1 }
            guard let lead = peek(), isDigit(lead) else { throw Unsure() }
            at += 1
            if lead != UInt8(ascii: "0") { skipDigits() }
            if peek() == UInt8(ascii: ".") {
                at += 1
                guard let d = peek(), isDigit(d) else { throw Unsure() }
                skipDigits()
            }
            if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
                at += 1
                if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { at += 1 }
                guard let d = peek(), isDigit(d) else { throw Unsure() }
                skipDigits()
            }
        }

        func isDigit(_ b: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) }

        mutating func skipDigits() {
            while let b = peek(), isDigit(b) { at += 1 }
        }
    }
}
