/// Reading typed values out of a parsed `JSONValue` by the rules `JSONDecoder` applies to them
/// (used by `ReceiverStatus+Parsed.swift` and `MediaStatus+Parsed.swift`): a field is absent
/// (missing or null), of the right type, or of the wrong type, and integers are numbers with an
/// exact integral value.
final class ParseDoubt {
    /// Set when a value could not be read the way `JSONDecoder` reads it.
    var unsure = false
}

/// A field of a strictly decoded type: absent (missing or null), a value, or the wrong type.
enum StrictField<T> {
    case absent, value(T), wrong

    /// The lenient reading: the value, or nil.
    var lenient: T? {
        if case .value(let v) = self { return v }
        return nil
    }
}

extension Optional where Wrapped == JSONValue {
    fileprivate var presentValue: JSONValue? {
        guard let value = self, value != .null else { return nil }
        return value
    }

    func strictString() -> StrictField<String> {
        guard let value = presentValue else { return .absent }
        if case .string(let s) = value { return .value(s) }
        return .wrong
    }

    func strictBool() -> StrictField<Bool> {
        guard let value = presentValue else { return .absent }
        if case .bool(let b) = value { return .value(b) }
        return .wrong
    }

    func strictDouble() -> StrictField<Double> {
        guard let value = presentValue else { return .absent }
        if case .number(let n) = value { return .value(n) }
        return .wrong
    }

    func strictInt(_ doubt: ParseDoubt) -> StrictField<Int> {
        guard let value = presentValue else { return .absent }
        guard case .number(let n) = value else { return .wrong }
        return Self.integer(n, doubt)
    }

    func strictInts(_ doubt: ParseDoubt) -> StrictField<[Int]> {
        guard let value = presentValue else { return .absent }
        guard case .array(let items) = value else { return .wrong }
        var out: [Int] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .number(let n) = item, case .value(let i) = Self.integer(n, doubt) else { return .wrong }
            out.append(i)
        }
        return .value(out)
    }

    /// Any JSON, as `decodeIfPresent(JSONValue.self)` gives it (null is absent).
    var anyJSON: JSONValue? { presentValue }

    /// `JSONDecoder`'s integer rule on the number's value; 2^53 and beyond is its text's to say.
    private static func integer(_ n: Double, _ doubt: ParseDoubt) -> StrictField<Int> {
        guard n.magnitude < 9_007_199_254_740_992 else {
            doubt.unsure = true
            return .wrong
        }
        guard let i = Int(exactly: n) else { return .wrong }
        return .value(i)
    }

    /// A strict struct or array: absent, the parsed value, or wrong (not an object, or a field
    /// of the wrong type inside).
    func strictObject<T>(_ parse: ([String: JSONValue]) -> T?) -> StrictField<T> {
        guard let value = presentValue else { return .absent }
        guard case .object(let fields) = value, let parsed = parse(fields) else { return .wrong }
        return .value(parsed)
    }

    func strictArray<T>(_ parse: ([String: JSONValue]) -> T?) -> StrictField<[T]> {
        guard let value = presentValue else { return .absent }
        guard case .array(let items) = value else { return .wrong }
        var out: [T] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .object(let fields) = item, let parsed = parse(fields) else { return .wrong }
            out.append(parsed)
        }
        return .value(out)
    }

    /// `MediaInformation` inside a synthesized type: absent, parsed leniently, or wrong when it
    /// is not an object.
    func strictMedia(_ doubt: ParseDoubt) -> StrictField<MediaInformation> {
        strictObject { MediaInformation(parsed: $0, doubt) }
    }
}

/// Unwraps a strict field into a synthesized init's optional, or fails the whole value.
func take<T>(_ field: StrictField<T>) -> T?? {
    switch field {
    case .absent: return .some(nil)
    case .value(let v): return .some(v)
    case .wrong: return nil
    }
}
