import CastProtocol

// The contract's names (commands, requests, error codes, topic leaves) are the Contract
// module's; whoever imports Bridge reads them too.
@_exported import Contract

/// An error that crosses the bridge boundary: a contract code and a plain-words message.
public struct BridgeError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    /// Seconds after which a retry may succeed (`error.retry_after`; a `busy` while a device
    /// changes hands between instances, mqtt-api.md §10).
    public var retryAfter: Double?

    public init(_ code: ErrorCode, _ message: String, retryAfter: Double? = nil) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { "\(code.rawValue): \(message)" }

    static func invalid(_ message: String) -> BridgeError { BridgeError(.invalidPayload, message) }
}
