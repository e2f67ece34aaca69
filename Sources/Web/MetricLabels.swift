import Contract

/// Label values come from outside (a command name is whatever topic an MQTT client published
/// to): each label has a fixed set of values, so the export stays bounded whatever arrives.
extension BridgeMetrics {
    /// The contract's device commands and bridge requests (mqtt-api.md §3, §5).
    static let knownCommands = Set(CommandName.allCases.map(\.rawValue) + RequestName.allCases.map(\.rawValue))

    /// The contract's error codes (and `ok`).
    static let knownCodes = Set(ErrorCode.allCases.map(\.rawValue) + [ErrorCode.ok])

    static func commandLabel(_ name: String) -> String {
        if knownCommands.contains(name) { return name }
        // `send/<namespace>` short form.
        return name.hasPrefix("send/") ? "send" : "other"
    }

    /// A code the contract lists, or up to 16 more well-formed ones (a code added to the contract
    /// later), then `other`.
    static func codeLabel(_ code: String, seen: inout Set<String>) -> String {
        if knownCodes.contains(code) || seen.contains(code) { return code }
        guard seen.count < 16, code.count <= 32, code.allSatisfy({ $0 == "_" || ($0.isASCII && $0.isLowercase) }) else {
            return "other"
        }
        seen.insert(code)
        return code
    }

    /// `CastDisconnectReason.description` to one word.
    static func disconnectReason(_ text: String) -> String {
        let prefixes: [(String, String)] = [
            ("heartbeat timeout", "heartbeat_timeout"), ("connection closed by the device", "closed_by_peer"),
            ("device closed the platform channel", "closed_by_device"), ("protocol error", "protocol_error"),
            ("network error", "network_error"), ("connect failed", "connect_failed"),
            ("the device did not answer", "unresponsive"), ("shutdown", "shutdown"),
        ]
        return prefixes.first { text.hasPrefix($0.0) }?.1 ?? "other"
    }
}
