import CastProtocol

/// Messages from the running app on non-platform namespaces are published (not retained) on
/// `<base>/<dev>/message/<namespace>`: text as received, binary payloads as raw bytes.
extension BridgeCore {
    mutating func appMessage(_ id: DeviceID, namespace: String, payload: CastPayload, _ out: inout BridgeOutput) {
        guard let device = devices[id], !CastNamespace.isPlatform(namespace) else { return }
        guard namespace.hasPrefix(CastNamespace.prefix), namespace.utf8.count <= 256,
              !namespace.contains("+"), !namespace.contains("#"), !namespace.contains("\u{0}") else {
            out.logs.append("\(device.topic): dropping a message on an unusable namespace")
            return
        }
        out.publish(Publication(topic: topics.message(device.topic, namespace: namespace), payload: payload.bytes, retain: false))
    }
}
