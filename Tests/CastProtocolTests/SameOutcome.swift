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

/// Random mutations of a JSON document for the differential tests: an object's field dropped
/// (one in `fieldOdds`) or replaced by one of `kinds` (one in `fieldOdds`) or mutated in turn, an
/// array's elements mutated and one of `kinds` appended (one in `appendOdds`), a leaf replaced by
/// one of `kinds` (one in `leafOdds`); objects and arrays from `maxDepth` on are leaves. A field
/// named in `unmutated` is dropped or replaced like any other, never mutated inside.
struct JSONMutator {
    var kinds: [JSONValue]
    var maxDepth: Int
    var fieldOdds: Int
    var appendOdds: Int
    var leafOdds: Int
    var unmutated: Set<String> = []

    func mutate(_ value: JSONValue, depth: Int = 0, using rng: inout some RandomNumberGenerator) -> JSONValue {
        switch value {
        case .object(let o) where depth < maxDepth:
            var out: [String: JSONValue] = [:]
            for (k, v) in o {
                switch Int.random(in: 0..<fieldOdds, using: &rng) {
                case 0: continue
                case 1: out[k] = kinds.randomElement(using: &rng)
                default: out[k] = unmutated.contains(k) ? v : mutate(v, depth: depth + 1, using: &rng)
                }
            }
            return .object(out)
        case .array(let a) where depth < maxDepth:
            var items = a.map { mutate($0, depth: depth + 1, using: &rng) }
            if Int.random(in: 0..<appendOdds, using: &rng) == 0, let extra = kinds.randomElement(using: &rng) { items.append(extra) }
            return .array(items)
        default:
            return Int.random(in: 0..<leafOdds, using: &rng) == 0 ? (kinds.randomElement(using: &rng) ?? value) : value
        }
    }
}
