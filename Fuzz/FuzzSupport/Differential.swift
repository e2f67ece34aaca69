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
    checkAgreement("receiver parse", payload, { try ReceiverResponse.parse($0) }, { try ReceiverResponse.parseWithJSONDecoder($0) })
}

/// MEDIA_STATUS read from the parsed value against the same through `JSONDecoder`.
public func checkMediaParse(_ payload: CastPayload) {
    checkAgreement("media parse", payload, { try MediaResponse.parse($0) }, { try MediaResponse.parseWithJSONDecoder($0) })
}

private func checkAgreement<T: Equatable>(_ what: String, _ payload: CastPayload, _ fast: (CastPayload) throws -> T,
                                          _ reference: (CastPayload) throws -> T) {
    let a = Result { try fast(payload) }
    let b = Result { try reference(payload) }
    switch (a, b) {
    case (.success(let x), .success(let y)) where x == y: return
    case (.failure, .failure): return
    default: fatalError("\(what) disagrees with JSONDecoder: \(a) vs \(b) on \(String(describing: payload.text))")
    }
}
