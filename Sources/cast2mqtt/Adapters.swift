import Bridge
import CastClient
import CastProtocol
import Discovery
import Foundation
import MQTT

/// Conversions between the layers' own types. The bridge knows none of the I/O modules, so
/// everything that crosses into it is translated here, in one place. The configuration is not
/// converted: Discovery and MQTT read their sections of the one model (Settings) as they are.
enum Adapt {
    /// The MQTT client for the `mqtt` section, with the bridge's `offline` as its last will; in
    /// instance mode the will clears the instance's document, after `mqtt.will_delay` seconds
    /// (MQTT 5's Will Delay Interval: a short blip causes no handover).
    static func mqttConfiguration(_ c: BridgeConfiguration, will: Publication) -> MQTTConfiguration {
        MQTTConfiguration(c.mqtt, cleanStart: false,
                          will: MQTTMessage(topic: will.topic, payload: will.payload, qos: qos(will.qos ?? c.mqtt.qos), retain: true),
                          willDelay: c.instance == nil ? nil : UInt32(InstanceWill.delay(c)))
    }

    static func qos(_ value: Int) -> MQTTQoS { MQTTQoS(rawValue: min(max(value, 0), 2)) ?? .atLeastOnce }

    static func castConfiguration(_ c: BridgeConfiguration) -> CastConnectionConfiguration {
        CastConnectionConfiguration(
            heartbeatInterval: .seconds(clamping: c.cast.heartbeatInterval),
            heartbeatTimeout: .seconds(clamping: c.cast.heartbeatTimeout),
            requestTimeout: .seconds(clamping: c.cast.requestTimeout),
            backoff: ReconnectBackoff(initial: .seconds(clamping: c.cast.reconnectInitial),
                                     maximum: .seconds(clamping: c.cast.reconnectMax)),
            userAgent: "cast2mqtt/\(c.version)", deviceAuth: DeviceAuthMode(rawValue: c.cast.deviceAuth) ?? .report)
    }

    /// The device-auth policy: the default, the static devices' own words (by id when given,
    /// else by host and port), and the trust anchors (the public Cast roots and
    /// `cast.device_auth_roots`, read now: an unreadable file stops the start).
    static func deviceAuthPolicy(_ c: BridgeConfiguration) throws -> DeviceAuthPolicy {
        var trust = DeviceAuthTrustStore.castRoots
        for path in c.cast.deviceAuthRoots {
            do {
                try trust.add(pem: try String(contentsOfFile: path, encoding: .utf8))
            } catch {
                throw ConfigurationError(path: "cast.device_auth_roots", message: "\(path): \(error)")
            }
        }
        var overrides: [String: DeviceAuthMode] = [:]
        for device in c.discovery.devices {
            guard let word = device.deviceAuth, let mode = DeviceAuthMode(rawValue: word) else { continue }
            overrides[device.id?.lowercased() ?? DeviceAuthPolicy.key(host: device.host, port: device.port)] = mode
        }
        return DeviceAuthPolicy(trust: trust, overrides: overrides)
    }

    static func descriptor(_ r: CastDeviceRecord) -> DeviceDescriptor {
        let type: Bridge.CastType
        switch r.castType {
        case .video: type = .video
        case .audio: type = .audio
        case .group: type = .group
        }
        return DeviceDescriptor(
            id: r.id, friendlyName: r.friendlyName, model: r.model, manufacturer: r.manufacturer,
            castType: type, host: r.host, port: r.port, capabilities: r.capabilities.names,
            source: r.source == .static ? .static : .mdns, topicOverride: r.topicOverride)
    }

    /// The one mapping from Cast client errors to the contract's error codes.
    static func bridgeError(_ error: any Error) -> BridgeError {
        guard let e = error as? CastError else { return BridgeError(.internal, "\(error)") }
        let reason = e.reason.map { " (reason \($0))" } ?? ""
        switch e.code {
        case .loadFailed: return BridgeError(.loadFailed, e.message + reason)
        case .loadCancelled: return BridgeError(.loadCancelled, e.message + reason)
        case .launchError: return BridgeError(.launchError, e.message)
        case .invalidRequest: return BridgeError(.invalidRequest, e.message + reason)
        case .invalidPlayerState: return BridgeError(.invalidPlayerState, e.message + reason)
        case .mediaError, .unexpectedReply, .shuttingDown: return BridgeError(.internal, e.message + reason)
        case .timeout: return BridgeError(.timeout, e.message)
        case .notConnected, .connectionLost: return BridgeError(.deviceOffline, e.message)
        case .noApp: return BridgeError(.noApp, e.message)
        case .noMediaSession: return BridgeError(.noMediaSession, e.message)
        case .payloadTooLarge: return BridgeError(.payloadTooLarge, e.message)
        }
    }
}
