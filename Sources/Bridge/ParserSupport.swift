import CastProtocol

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

    /// Rejects keys outside `allowed` (plus `id`).
    func allow(_ allowed: Set<String>) throws {
        let unknown = dict.keys.filter { $0 != "id" && !allowed.contains($0) }.sorted()
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
