/// Builds the JSON the page receives without an encoder: documents the bridge published are
/// already JSON and are copied in as they are; everything else is escaped here.
struct JSONText {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func raw(_ other: [UInt8]) { bytes.append(contentsOf: other) }

    /// A JSON string literal.
    mutating func string(_ text: String) { Self.appendString(text, to: &bytes) }

    mutating func number(_ value: Int) { bytes.append(contentsOf: String(value).utf8) }
    mutating func number(_ value: UInt64) { bytes.append(contentsOf: String(value).utf8) }
    mutating func number(_ value: Double) {
        bytes.append(contentsOf: (value.isFinite ? "\(value)" : "null").utf8)
    }
    mutating func bool(_ value: Bool) { bytes.append(contentsOf: (value ? "true" : "false").utf8) }

    /// A published payload as a JSON value: an object or array as it is (the bridge wrote it), an
    /// empty payload as `null` (a cleared topic), anything else (`online`, `playing`) as a string.
    mutating func payload(_ payload: [UInt8]) {
        guard let first = payload.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) else {
            raw("null")
            return
        }
        if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
            bytes.append(contentsOf: payload)
        } else {
            string(String(decoding: payload, as: UTF8.self))
        }
    }

    static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20, 0x7F:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            // `<` escaped so no payload can close a <script> if the text ever lands in HTML.
            case UInt8(ascii: "<"): out.append(contentsOf: Array("\\u003c".utf8))
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        appendString(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

/// A bounded FIFO: appending past `capacity` drops the oldest element.
struct Ring<Element>: Sendable where Element: Sendable {
    let capacity: Int
    private var storage: [Element] = []
    private var start = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { storage.count }
    var isFull: Bool { storage.count == capacity }
    /// The oldest element.
    var first: Element? { storage.isEmpty ? nil : storage[start] }

    mutating func append(_ element: Element) {
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[start] = element
            start = (start + 1) % capacity
        }
    }

    /// Oldest first.
    var elements: [Element] {
        Array(storage[start...]) + Array(storage[..<start])
    }

    /// The newest elements (oldest first) for which `isNew` holds, scanning back from the newest.
    func suffix(while isNew: (Element) -> Bool) -> [Element] {
        var out: [Element] = []
        var index = storage.count - 1
        while index >= 0 {
            let element = storage[(start + index) % storage.count]
            guard isNew(element) else { break }
            out.append(element)
            index -= 1
        }
        return out.reversed()
    }
}
