import Testing
@testable import CastProtocol

/// A one-pass reader and its `JSONDecoder` reference give the same value, or both refuse.
func expectSameOutcome<T: Equatable>(_ text: String, _ fast: (CastPayload) throws -> T, _ reference: (CastPayload) throws -> T,
                                     sourceLocation: SourceLocation = #_sourceLocation) {
    let payload = CastPayload.string(text)
    let a = Result { try fast(payload) }
    let b = Result { try reference(payload) }
    switch (a, b) {
    case (.success(let x), .success(let y)): #expect(x == y, "\(text)", sourceLocation: sourceLocation)
    case (.failure, .failure): break
    default: Issue.record("\(a) vs \(b) on \(text)", sourceLocation: sourceLocation)
    }
}
