import CastProtocol
import CastSimulator
import Foundation
import MQTT
import Testing
import TestSupport

/// Device authentication end to end: the daemon against simulated devices that answer the
/// challenge correctly or with each fault, under `report` and `require` (docs/security.md).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EndToEndDeviceAuthTests {
    /// A device per simulator behaviour, named so that its topic is the name in lower case, and
    /// the `auth_error` the bridge must publish for it.
    static let cases: [(name: String, behaviour: DeviceAuthBehaviour, error: String?)] = [
        ("Genuine", .correct, nil),
        ("Silent", .noAnswer, "no_answer"),
        ("Refusing", .authError, "auth_error"),
        ("Forger", .badSignature, "bad_signature"),
        ("Stranger", .unknownRoot, "untrusted_chain"),
        ("Expired", .expiredCertificate, "expired"),
        ("Replayer", .replayedNonce, "nonce_mismatch"),
    ]

    static func prepare(_ simulator: CastSimulator) async throws -> [SimulatedDevice] {
        var devices: [SimulatedDevice] = []
        for c in cases {
            let device = try await simulator.addDevice(SimulatedDeviceConfiguration(
                name: c.name, launchLatency: .milliseconds(50), replyLatency: .milliseconds(1)))
            await device.setDeviceAuthBehaviour(c.behaviour)
            devices.append(device)
        }
        return devices
    }

    /// Lines of the daemon's log that report an authentication result of `device`.
    static func authLines(_ log: String, _ device: SimulatedDevice) -> [Substring] {
        log.split(separator: "\n").filter {
            $0.contains(device.id) && ($0.contains("device authentication failed") || $0.contains("device authenticated"))
        }
    }

    /// The first event of `type` on the device's event topic (any of them, not only the newest).
    static func event(_ h: BridgeHarness, _ slug: String, _ type: String) async -> JSONValue? {
        let topic = h.topic(slug, "event")
        func find() -> JSONValue? {
            h.observer.messages(on: topic).lazy.compactMap { try? CastJSON.decode(JSONValue.self, from: $0.payload) }
                .first { $0["type"]?.stringValue == type }
        }
        _ = await waitUntil(timeout: .seconds(15)) { find() != nil }
        return find()
    }

    @Test("report: every device comes online; the result, the error and the certificate are published")
    func reportPublishesResults() async throws {
        try await withBridge(prepare: Self.prepare, requestTimeout: 3, deviceAuth: "report") { h in
            for (index, c) in Self.cases.enumerated() {
                let slug = c.name.lowercased()
                let device = h.devices[index]
                try await h.waitOnline([slug])
                let info = await h.observer.waitJSON(h.topic(slug, "info")) { $0["authenticated"]?.boolValue != nil }
                let expected = c.error == nil
                #expect(info?["authenticated"]?.boolValue == expected, "\(c.name): \(String(describing: info))")
                #expect(info?["auth_error"]?.stringValue == c.error, "\(c.name): \(String(describing: info))")
                #expect(info?["offline_reason"]?.isNull == true)
                if c.behaviour != .noAnswer, c.behaviour != .authError {
                    #expect(info?["device_certificate"]?["common_name"]?.stringValue == device.deviceCertificateCommonName)
                    #expect(info?["device_certificate"]?["sha256"]?.stringValue?.count == 64)
                } else {
                    #expect(info?["device_certificate"]?.isNull == true)
                }
                // The challenge went out before anything else on the connection.
                let first = device.received().first
                #expect(first?.namespace == CastNamespace.deviceAuth, "\(c.name): first message \(String(describing: first))")
            }
            // One line per device saying what happened, a warning for every failure.
            for (index, c) in Self.cases.enumerated() {
                let lines = Self.authLines(h.log, h.devices[index])
                #expect(lines.count == 1, "\(c.name): \(lines)")
                if let error = c.error { #expect(lines.first?.contains(error) == true, "\(c.name): \(lines)") }
            }
            #expect(h.daemonAlive)
        }
    }

    @Test("require: a failing device stays offline as unauthenticated, retried, reported once; the genuine one works")
    func requireKeepsFailuresOffline() async throws {
        try await withBridge(prepare: Self.prepare, requestTimeout: 2, deviceAuth: "require") { h in
            try await h.waitOnline(["genuine"])
            let genuine = await h.observer.waitJSON(h.topic("genuine", "info")) { $0["authenticated"]?.boolValue == true }
            #expect(genuine?["offline_reason"]?.isNull == true)
            #expect(try await h.command("genuine", "volume", "0.3").status == "ok")
            for (index, c) in Self.cases.enumerated() where c.error != nil {
                let slug = c.name.lowercased()
                let device = h.devices[index]
                let info = await h.observer.waitJSON(h.topic(slug, "info")) { $0["offline_reason"]?.stringValue == "unauthenticated" }
                #expect(info?["authenticated"]?.boolValue == false, "\(c.name): \(String(describing: info))")
                #expect(info?["auth_error"]?.stringValue == c.error, "\(c.name): \(String(describing: info))")
                let event = await Self.event(h, slug, "auth_failed")
                #expect(event?["error"]?.stringValue == c.error)
                // Retried with backoff: a second challenge on a new connection (a fact, not a sleep).
                let retried = await waitUntil(timeout: .seconds(15)) {
                    device.received(namespace: CastNamespace.deviceAuth).count >= 2
                }
                #expect(retried, "\(c.name) was not retried")
                // Nothing but challenges ever reached it, and it never was online.
                #expect(device.received().allSatisfy { $0.namespace == CastNamespace.deviceAuth },
                        "\(c.name): \(device.received().map { "#\($0.connection) \($0.namespace) \($0.type ?? "-")" })")
                #expect(!h.observer.messages(on: h.topic(slug, "availability")).contains { $0.payloadString == "online" })
                // A command fails at once.
                #expect(try await h.command(slug, "volume", "0.3").errorCode == "device_offline")
            }
            let devices = await h.observer.waitJSON("cast2mqtt/bridge/devices") { doc in
                (doc.arrayValue ?? []).filter { $0["reason"]?.stringValue == "unauthenticated" }.count == Self.cases.count - 1
            }
            #expect(devices != nil, "bridge/devices: \(String(describing: h.observer.messages(on: "cast2mqtt/bridge/devices").last?.payloadString))")
            #expect(devices?.arrayValue?.first { $0["topic"]?.stringValue == "genuine" }?["reason"] == nil)
            // One log line and one event per change, not per retry.
            for (index, c) in Self.cases.enumerated() where c.error != nil {
                let slug = c.name.lowercased()
                #expect(Self.authLines(h.log, h.devices[index]).count == 1, "\(c.name): \(Self.authLines(h.log, h.devices[index]))")
                let events = h.observer.messages(on: h.topic(slug, "event")).filter { $0.payloadString.contains("auth_failed") }
                #expect(events.count == 1, "\(c.name): \(events.map(\.payloadString))")
            }
            #expect(h.daemonAlive)
        }
    }

    @Test("require: a device that starts answering correctly comes online; a new certificate is reported")
    func recoveryAndCertificateChange() async throws {
        try await withBridge(devices: ["Den"], requestTimeout: 2, deviceAuth: "require") { h in
            let den = h.devices[0]
            try await h.waitOnline(["den"])
            let first = await h.observer.waitJSON(h.topic("den", "info")) { $0["authenticated"]?.boolValue == true }
            let firstSHA: String = first?["device_certificate"]?["sha256"]?.stringValue ?? ""
            #expect(firstSHA.count == 64)

            // It stops authenticating: offline as unauthenticated at its next connection.
            await den.setDeviceAuthBehaviour(.badSignature)
            await den.dropConnections()
            #expect(await h.observer.waitJSON(h.topic("den", "info")) { $0["offline_reason"]?.stringValue == "unauthenticated" } != nil)
            #expect(await h.observer.wait(h.topic("den", "availability")) { $0 == "offline" } != nil)

            // It answers correctly again, with a renewed certificate: online, and the change is an event.
            await den.renewDeviceCertificate()
            await den.setDeviceAuthBehaviour(.correct)
            let back = await h.observer.waitJSON(h.topic("den", "info")) { [firstSHA] doc in
                doc["authenticated"]?.boolValue == true && doc["device_certificate"]?["sha256"]?.stringValue != firstSHA
            }
            #expect(back?["offline_reason"]?.isNull == true)
            let change = await Self.event(h, "den", "certificate_changed")
            #expect(change?["previous"]?.stringValue == firstSHA)
            #expect(change?["current"]?.stringValue == back?["device_certificate"]?["sha256"]?.stringValue)
            #expect(await h.observer.wait(h.topic("den", "availability")) { $0 == "online" } != nil)
        }
    }

    @Test("receivers without device auth: off by a per-device override under require, and without it")
    func perDeviceOverride() async throws {
        try await withBridge(prepare: { simulator in
            var devices: [SimulatedDevice] = []
            for name in ["Third Party", "Old Firmware"] {
                let device = try await simulator.addDevice(SimulatedDeviceConfiguration(
                    name: name, launchLatency: .milliseconds(50), replyLatency: .milliseconds(1)))
                await device.setDeviceAuthBehaviour(.noAnswer)
                devices.append(device)
            }
            return devices
        }, requestTimeout: 2, deviceAuth: "require", staticExtra: ["Third Party": "device_auth: off"]) { h in
            try await h.waitOnline(["third_party"])
            let info = await h.observer.waitJSON(h.topic("third_party", "info")) { $0["name"]?.stringValue == "Third Party" }
            #expect(info?["authenticated"]?.isNull == true && info?["auth_error"]?.isNull == true)
            #expect(h.devices[0].received(namespace: CastNamespace.deviceAuth).isEmpty)
            let old = await h.observer.waitJSON(h.topic("old_firmware", "info")) { $0["offline_reason"]?.stringValue == "unauthenticated" }
            #expect(old?["auth_error"]?.stringValue == "no_answer")
        }
    }
}

extension MQTTMessage {
    var payloadString: String { String(decoding: payload, as: UTF8.self) }
}
