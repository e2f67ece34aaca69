import CastProtocol
import Foundation

/// Strict decimal numbers for short forms: optional sign, digits, optional fraction.
enum Decimal {
    static func parse(_ text: String) -> (sign: Character?, value: Double)? {
        var rest = Substring(text)
        var sign: Character?
        if let first = rest.first, first == "+" || first == "-" {
            sign = first
            rest = rest.dropFirst()
        }
        guard !rest.isEmpty, rest.count <= 32 else { return nil }
        var dots = 0
        for ch in rest {
            if ch == "." { dots += 1 } else if !("0"..."9").contains(ch) { return nil }
        }
        guard dots <= 1, rest != ".", let v = Double(rest), v.isFinite else { return nil }
        return (sign, v)
    }
}

/// Typed access to a command's JSON fields with helpful errors.
struct Fields {
    let body: CommandParser.Body
    let command: String

    var dict: [String: JSONValue] {
        if case .json(let d) = body { return d }
        return [:]
    }

    /// Rejects keys outside `allowed` (plus the envelope: `id`, `expires`).
    func allow(_ allowed: Set<String>) throws {
        let unknown = dict.keys.filter { !CommandParser.envelopeKeys.contains($0) && !allowed.contains($0) }.sorted()
        if let first = unknown.first {
            let list = allowed.isEmpty ? "no keys besides \"id\"" : allowed.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            throw BridgeError.invalid("unknown key \"\(first.prefix(64))\" for \(command); it takes \(list)")
        }
    }

    /// For commands without a value: an empty payload or `{}` (plus `id`).
    func noValue() throws {
        switch body {
        case .short(let s):
            if !s.isEmpty { throw BridgeError.invalid("\(command) takes no value; send an empty payload or {}") }
        case .json: try allow([])
        }
    }

    func string(_ key: String) throws -> String? {
        guard let v = dict[key], !v.isNull else { return nil }
        guard let s = v.stringValue else { throw BridgeError.invalid("\"\(key)\" must be a string") }
        guard s.utf8.count <= 8192 else { throw BridgeError.invalid("\"\(key)\" is longer than 8192 bytes") }
        return s
    }

    func number(_ key: String) throws -> Double? {
        guard let v = dict[key], !v.isNull else { return nil }
        guard let n = v.doubleValue, n.isFinite else { throw BridgeError.invalid("\"\(key)\" must be a number") }
        return n
    }

    func bool(_ key: String) throws -> Bool? {
        guard let v = dict[key], !v.isNull else { return nil }
        guard let b = v.boolValue else { throw BridgeError.invalid("\"\(key)\" must be true or false") }
        return b
    }
}

/// RFC 3339 date-times (`2026-11-22T10:15:30Z`, `2026-11-22T10:15:30.250+01:00`), parsed
/// strictly by hand: no formatter, no locale.
enum RFC3339 {
    static func parse(_ text: String) -> Date? {
        let b = Array(text.utf8)
        func digits(_ at: Int, _ count: Int) -> Int? {
            guard at + count <= b.count else { return nil }
            var v = 0
            for i in at..<(at + count) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        func char(_ at: Int, _ c: UInt8) -> Bool { at < b.count && b[at] == c }
        guard let year = digits(0, 4), char(4, 45), let month = digits(5, 2), char(7, 45), let day = digits(8, 2),
              at(b, 10, [84, 116, 32]), let hour = digits(11, 2), char(13, 58), let minute = digits(14, 2), char(16, 58),
              let second = digits(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var i = 19
        var fraction = 0.0
        if char(i, 46) {
            i += 1
            var scale = 0.1
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57, i - start < 9 {
                fraction += Double(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        var offset = 0
        if char(i, 90) || char(i, 122) {
            i += 1
        } else if char(i, 43) || char(i, 45) {
            guard let h = digits(i + 1, 2), char(i + 3, 58), let m = digits(i + 4, 2), h < 24, m < 60 else { return nil }
            offset = (h * 60 + m) * 60 * (b[i] == 45 ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        // days from civil (Howard Hinnant's algorithm)
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        let seconds = Double(days * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction
        return Date(timeIntervalSince1970: seconds)
    }

    private static func at(_ b: [UInt8], _ i: Int, _ any: [UInt8]) -> Bool { i < b.count && any.contains(b[i]) }
}
