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

/// RECEIVER_STATUS read from the parsed value against the same through `JSONDecoder`: the same
/// answer (or the same refusal) on every payload.
public func checkReceiverParse(_ payload: CastPayload) {
    let parsed = Result { try ReceiverResponse.parse(payload) }
    let reference = Result { try ReceiverResponse.parseWithJSONDecoder(payload) }
    switch (parsed, reference) {
    case (.success(let a), .success(let b)) where a == b: return
    case (.failure, .failure): return
    default:
        fatalError("receiver parse disagrees with JSONDecoder: \(parsed) vs \(reference) on \(String(describing: payload.text))")
    }
}

/// MEDIA_STATUS read from the parsed value against the same through `JSONDecoder`.
public func checkMediaParse(_ payload: CastPayload) {
    let parsed = Result { try MediaResponse.parse(payload) }
    let reference = Result { try MediaResponse.parseWithJSONDecoder(payload) }
    switch (parsed, reference) {
    case (.success(let a), .success(let b)) where a == b: return
    case (.failure, .failure): return
    default:
        fatalError("media parse disagrees with JSONDecoder: \(parsed) vs \(reference) on \(String(describing: payload.text))")
    }
}
