import Foundation

/// Commands that arrive while the bridge is starting, for a device that has not been online yet.
///
/// The bridge keeps a persistent MQTT session, so commands published while it was down are
/// delivered the moment it reconnects — before discovery has found the devices and before
/// their Cast connections are up. Such a command is held (at most `startupHoldSeconds` after
/// start, at most `maxHeld` of them) and run as soon as its device comes online; whatever is
/// still held when the window closes is run then, and answered as usual (`unknown_device`,
/// `device_offline`).
struct HeldCommand: Sendable {
    var device: String
    var topic: String
    var payload: [UInt8]
    var responseTopic: String?
    var correlationData: [UInt8]?
}

extension BridgeCore {
    static let startupHoldSeconds: TimeInterval = 10
    static let maxHeld = 256

    /// True when the command was held for later.
    mutating func holdIfStarting(device: String, topic: String, payload: [UInt8], responseTopic: String?,
                                 correlationData: [UInt8]?, now: Date) -> Bool {
        // An oversized payload is answered at once (`payload_too_large`), never stored.
        guard now.timeIntervalSince(startedAt) < Self.startupHoldSeconds, heldCommands.count < Self.maxHeld,
              payload.count <= configuration.mqtt.maxPayload else {
            return false
        }
        // Only devices that have not been online yet in this run: one that was online and went
        // offline is known to be offline, and its commands fail at once.
        if let id = names.device(named: device), devices[id]?.everOnline == true { return false }
        heldCommands.append(HeldCommand(device: device, topic: topic, payload: payload, responseTopic: responseTopic,
                                        correlationData: correlationData))
        return true
    }

    /// Runs the held commands of `device` (it just came online), or all of them once the
    /// startup window has closed.
    mutating func releaseHeld(device: String?, now: Date, _ out: inout BridgeOutput) {
        guard !heldCommands.isEmpty else { return }
        let windowClosed = now.timeIntervalSince(startedAt) >= Self.startupHoldSeconds
        let release = heldCommands.filter { windowClosed || $0.device == device }
        guard !release.isEmpty else { return }
        heldCommands.removeAll { windowClosed || $0.device == device }
        for held in release {
            mqttMessage(topic: held.topic, payload: held.payload, responseTopic: held.responseTopic,
                        correlationData: held.correlationData, now: now, &out)
        }
    }
}
