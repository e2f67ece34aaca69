import CastProtocol

/// The one-pass JSON parser against `JSONDecoder`: on every input the parser decides, the two
/// must give the same value (a crash with both answers otherwise).
public func checkJSONParser(_ bytes: [UInt8]) {
    guard let value = JSONValue.parseWithoutFallback(bytes) else { return }
    let reference = JSONValue.parseWithJSONDecoder(bytes)
    if value != reference {
        fatalError("JSON parser disagrees with JSONDecoder: \(value) vs \(String(describing: reference)) on \(String(decoding: bytes, as: UTF8.self))")
    }
}
