import CastProtocol
import Foundation

/// Device authentication as the MQTT contract shows it (mqtt-api.md §11): the `info` fields,
/// the `reason` of a refused device in `bridge/devices`, and the `auth_failed` and
/// `certificate_changed` events. The Cast client runs the check; this only reports it.
extension Documents {
    /// `authenticated` (null: not checked), `auth_error`, `device_certificate` and
    /// `offline_reason` of a device's `info`.
    static func authenticationFields(_ snapshot: DeviceSnapshot) -> [(String, JSONValue)] {
        let result = snapshot.authentication
        let certificate: JSONValue = result?.certificate.map {
            .object(["common_name": .str($0.commonName), "organization": .str($0.organization), "sha256": .string($0.sha256)])
        } ?? .null
        return [
            ("authenticated", result.map { .bool($0.isAuthenticated) } ?? .null),
            ("auth_error", .str(result?.failure?.rawValue)),
            ("device_certificate", certificate),
            ("offline_reason", .str(offlineReason(snapshot))),
        ]
    }

    /// `unauthenticated` while the device is kept offline by `device_auth: require`.
    static func offlineReason(_ snapshot: DeviceSnapshot) -> String? {
        if case .offline(.unauthenticated, _) = snapshot.link { return "unauthenticated" }
        return nil
    }
}

extension BridgeCore {
    /// After a snapshot was kept: `info` again when the result changed; an `auth_failed` event
    /// when the device became refused (or refused for another reason); `certificate_changed`
    /// when an authenticated device shows another certificate than the last authenticated one.
    mutating func authenticationArrived(_ id: DeviceID, old: DeviceSnapshot, now: Date, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        let new = device.snapshot
        guard new.authentication != old.authentication || new.link != old.link else { return }
        if new.authentication != old.authentication { publishInfo(id, &out) }
        if case .offline(.unauthenticated(let failure), _) = new.link, old.link != new.link {
            publishDeviceEvent(id, ["type": .string("auth_failed"), "error": .string(failure.rawValue)], now: now, &out)
            bridgeTopicsChanged(now: now, &out)
        }
        if let result = new.authentication, result.isAuthenticated, let current = result.certificate?.sha256 {
            if let previous = registry.lastAuthenticatedCertificate(id), previous != current {
                out.logs.append("device \(device.descriptor.friendlyName) (\(id)) presents another device certificate: \(current) (was \(previous))")
                publishDeviceEvent(id, ["type": .string("certificate_changed"), "previous": .string(previous),
                                        "current": .string(current)], now: now, &out)
            }
            registry.authenticated(id, certificate: current)
        }
    }
}
