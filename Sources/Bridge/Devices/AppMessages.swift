import CastProtocol

/// Messages from the running app on non-platform namespaces are published (not retained) on
/// `<base>/<dev>/message/<namespace>`: text as received, binary payloads as raw bytes. The
/// namespace is one topic level: `%`, `/`, `+`, `#` and control characters in it are
/// percent-encoded (`urn:x-cast:a/b` -> `message/urn:x-cast:a%2Fb`).
extension BridgeCore {
    mutating func appMessage(_ id: DeviceID, namespace: String, payload: CastPayload, _ out: inout BridgeOutput) {
        guard let device = registry[id], !CastNamespace.isPlatform(namespace) else { return }
        guard namespace.hasPrefix(CastNamespace.prefix), namespace.utf8.count <= 256 else {
            out.debugLogs.append("\(device.topic): dropping a message on a namespace that is not urn:x-cast:… or over 256 bytes")
            return
        }
        out.publish(Publication(topic: topics.message(device.topic, namespace: Self.topicLevel(namespace)),
                                payload: payload.bytes, retain: false))
    }

    /// `text` as a single topic level: `%`, `/`, `+`, `#` and control characters percent-encoded.
    static func topicLevel(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if needsEscape(scalar) {
                for byte in String(scalar).utf8 { out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true) }
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func needsEscape(_ s: Unicode.Scalar) -> Bool {
        s == "%" || s == "/" || s == "+" || s == "#" || s.value < 0x20 || s.value == 0x7F
    }
}
