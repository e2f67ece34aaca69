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
            ("auth_error", .str(result?.failure?.contractWord)),
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

/// What one kept snapshot changed in a device's authentication, as values the core carries
/// out: `info` again when the result changed; an `auth_failed` event (and `bridge/devices` again)
/// when the device became refused, or refused for another reason; `certificate_changed` (and a
/// log line) when an authenticated device shows another certificate than the last authenticated
/// one; the certificate to remember.
struct DeviceAuthChange: Sendable {
    var infoChanged = false
    var refused = false
    var events: [[String: JSONValue]] = []
    var log: String?
    /// SHA-256 of the certificate of this authenticated connection.
    var authenticatedCertificate: String?

    init(_ change: DeviceChange, device: DeviceRecord) {
        let new = device.snapshot
        infoChanged = new.authentication != change.oldAuthentication
        if case .offline(.unauthenticated(let failure), _) = new.link, change.oldLink != new.link {
            refused = true
            events.append(["type": .string("auth_failed"), "error": .string(failure.contractWord)])
        }
        guard infoChanged, let result = new.authentication, result.isAuthenticated,
              let current = result.certificate?.sha256 else { return }
        authenticatedCertificate = current
        if let previous = device.authenticatedCertificate, previous != current {
            log = "device \(device.descriptor.friendlyName) (\(device.id)) presents another device certificate: \(current) (was \(previous))"
            events.append(["type": .string("certificate_changed"), "previous": .string(previous), "current": .string(current)])
        }
    }
}
