import CastProtocol
import Foundation

/// Encoding of everything the bridge publishes: JSON with sorted keys (so that equal content
/// gives equal bytes and change-only comparison works) and ISO 8601 UTC times with milliseconds.
enum JSONOutput {
    static func bytes(_ value: JSONValue) -> [UInt8] {
        value.jsonBytes
    }

    static func text(_ value: JSONValue) -> String {
        String(decoding: value.jsonBytes, as: UTF8.self)
    }

    /// Parses text as a JSON value; nil when it is not JSON (`JSONValue.parse`: one pass, with
    /// `JSONDecoder` deciding what the parser is unsure of).
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        JSONValue.parse(bytes)
    }

    /// True when arrays and objects in `bytes` nest deeper than `limit` (strings and their escapes
    /// are skipped): a cheap look before a decoder spends time on a hostile payload.
    static func nestsDeeper(_ bytes: [UInt8], than limit: Int) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return true }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return false
    }
}

/// `2026-11-22T10:15:30.123Z`, computed without locale-dependent formatters.
public func iso8601(_ date: Date) -> String {
    let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    var days = totalMillis >= 0 ? totalMillis / 86_400_000 : (totalMillis - 86_399_999) / 86_400_000
    let msOfDay = totalMillis - days * 86_400_000
    // civil_from_days (Howard Hinnant's algorithm)
    days += 719_468
    let era = (days >= 0 ? days : days - 146_096) / 146_097
    let doe = days - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
    var year = yoe + era * 400
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    if month <= 2 { year += 1 }
    let h = msOfDay / 3_600_000, m = (msOfDay / 60_000) % 60, s = (msOfDay / 1000) % 60, ms = msOfDay % 1000
    func pad(_ v: Int64, _ w: Int) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, w - s.count)) + s
    }
    return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(h, 2)):\(pad(m, 2)):\(pad(s, 2)).\(pad(ms, 3))Z"
}

extension JSONValue {
    /// A string field of a document: absent or empty is `null` (one rule for every document;
    /// real devices send `""` where they mean "none": a subtitle, a content type, a status text).
    static func str(_ s: String?) -> JSONValue {
        guard let s, !s.isEmpty else { return .null }
        return .string(s)
    }
    static func num(_ d: Double?) -> JSONValue { d.flatMap { $0.isFinite ? JSONValue.number($0) : nil } ?? .null }
    static func int(_ i: Int?) -> JSONValue { i.map { JSONValue.number(Double($0)) } ?? .null }
    static func flag(_ b: Bool?) -> JSONValue { b.map(JSONValue.bool) ?? .null }
    static func time(_ d: Date?) -> JSONValue { d.map { .string(iso8601($0)) } ?? .null }

    /// Recursively converts snake_case object keys to camelCase (user JSON -> Cast shape).
    func camelCased() -> JSONValue {
        switch self {
        case .object(let o):
            var out: [String: JSONValue] = [:]
            for (k, v) in o { out[Self.camel(k)] = v.camelCased() }
            return .object(out)
        case .array(let a): return .array(a.map { $0.camelCased() })
        default: return self
        }
    }

    static func camel(_ key: String) -> String {
        let parts = key.split(separator: "_", omittingEmptySubsequences: true)
        guard let first = parts.first else { return key }
        return String(first) + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }
}
