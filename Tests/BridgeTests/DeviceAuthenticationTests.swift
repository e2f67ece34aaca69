import CastProtocol
import Foundation
import Testing
@testable import Bridge

/// Device authentication in the MQTT contract (mqtt-api.md §11): `info`, `bridge/devices`, the
/// `auth_failed` and `certificate_changed` events, and the configuration keys.
@Suite struct DeviceAuthenticationTests {
    let certA = DeviceCertificateSummary(commonName: "3ZZAK6 FA8FCA3F0D35", organization: "Google Inc", sha256: String(repeating: "a", count: 64))
    let certB = DeviceCertificateSummary(commonName: "3ZZAK6 FA8FCA3F0D35", organization: "Google Inc", sha256: String(repeating: "b", count: 64))

    /// The client's check ended, through the device's session machine (as in the client).
    @discardableResult
    func authenticated(_ h: inout Harness, _ id: DeviceID, _ result: DeviceAuthResult, admitted: Bool) -> BridgeOutput {
        var machine = h.sessions[id] ?? CastSessionMachine()
        let actions = machine.authenticated(result, admitted: admitted)
        h.sessions[id] = machine
        var out = BridgeOutput()
        for case .publish(let snapshot) in actions { out.append(h.feed(.device(id, snapshot))) }
        return out
    }

    @Test("not checked: authenticated null; checked: the result and the certificate in info")
    func infoFields() throws {
        var h = Harness()
        let d = tvDescriptor()
        var info = try #require(h.online(d).json("cast2mqtt/living_room_tv/info"))
        #expect(info["authenticated"]?.isNull == true && info["auth_error"]?.isNull == true)
        #expect(info["device_certificate"]?.isNull == true && info["offline_reason"]?.isNull == true)

        // A new connection that authenticated (report or require): published with its status.
        _ = h.feed(CastEvent.castDisconnected(d.id, reason: "heartbeat timeout"))
        authenticated(&h, d.id, .authenticated(certA), admitted: true)
        h.feed(CastEvent.castConnected(d.id))
        let out = h.feed(CastEvent.receiverStatus(d.id, receiver()))
        info = try #require(out.json("cast2mqtt/living_room_tv/info"))
        #expect(info["authenticated"]?.boolValue == true && info["auth_error"]?.isNull == true)
        #expect(info["device_certificate"]?["common_name"]?.stringValue == "3ZZAK6 FA8FCA3F0D35")
        #expect(info["device_certificate"]?["organization"]?.stringValue == "Google Inc")
        #expect(info["device_certificate"]?["sha256"]?.stringValue == certA.sha256)
        // A failure under report: false with the reason, the device online.
        _ = h.feed(CastEvent.castDisconnected(d.id, reason: "heartbeat timeout"))
        authenticated(&h, d.id, .failed(.badSignature, certA), admitted: true)
        h.feed(CastEvent.castConnected(d.id))
        let again = h.feed(CastEvent.receiverStatus(d.id, receiver(level: 0.3)))
        info = try #require(again.json("cast2mqtt/living_room_tv/info"))
        #expect(info["authenticated"]?.boolValue == false && info["auth_error"]?.stringValue == "bad_signature")
        #expect(again.texts("cast2mqtt/living_room_tv/availability").last == "online")
    }

    @Test("require: offline as unauthenticated, one auth_failed event per change, reason in bridge/devices")
    func refused() throws {
        var h = Harness()
        let d = tvDescriptor()
        h.feed(.deviceDiscovered(d))
        h.now = t0.addingTimeInterval(2)
        let out = authenticated(&h, d.id, .failed(.noAnswer), admitted: false)
        let info = try #require(out.json("cast2mqtt/living_room_tv/info"))
        #expect(info["authenticated"]?.boolValue == false && info["auth_error"]?.stringValue == "no_answer")
        #expect(info["offline_reason"]?.stringValue == "unauthenticated")
        #expect(out.events("cast2mqtt/living_room_tv/event") == ["auth_failed"])
        #expect(out.json("cast2mqtt/living_room_tv/event")?["error"]?.stringValue == "no_answer")
        let devices = try #require(out.json("cast2mqtt/bridge/devices")?.arrayValue?.first)
        #expect(devices["reason"]?.stringValue == "unauthenticated" && devices["online"]?.boolValue == false)
        // The same result on the next attempt: nothing new.
        h.now = t0.addingTimeInterval(4)
        let repeated = authenticated(&h, d.id, .failed(.noAnswer), admitted: false)
        #expect(repeated.publications.isEmpty)
        // Another reason: a new event.
        h.now = t0.addingTimeInterval(6)
        let other = authenticated(&h, d.id, .failed(.expired, certA), admitted: false)
        #expect(other.events("cast2mqtt/living_room_tv/event") == ["auth_failed"])
        #expect(other.json("cast2mqtt/living_room_tv/event")?["error"]?.stringValue == "expired")
        // Authenticated at last: online, no reason any more.
        h.now = t0.addingTimeInterval(8)
        authenticated(&h, d.id, .authenticated(certA), admitted: true)
        h.feed(CastEvent.castConnected(d.id))
        let online = h.feed(CastEvent.receiverStatus(d.id, receiver()))
        #expect(online.texts("cast2mqtt/living_room_tv/availability").last == "online")
        #expect(online.json("cast2mqtt/living_room_tv/info")?["offline_reason"]?.isNull == true)
        let tick = h.feed(.tick)
        let entry = (tick.json("cast2mqtt/bridge/devices") ?? online.json("cast2mqtt/bridge/devices"))?.arrayValue?.first
        #expect(entry?["reason"] == nil && entry?["online"]?.boolValue == true)
    }

    @Test("certificate_changed when an authenticated device shows another certificate; not for the same one")
    func certificateChanged() throws {
        var h = Harness()
        let d = tvDescriptor()
        h.feed(.deviceDiscovered(d))
        authenticated(&h, d.id, .authenticated(certA), admitted: true)
        h.feed(CastEvent.castConnected(d.id))
        let first = h.feed(CastEvent.receiverStatus(d.id, receiver()))
        #expect(!first.events("cast2mqtt/living_room_tv/event").contains("certificate_changed"))
        // Same certificate on the next connection: no event.
        h.feed(CastEvent.castDisconnected(d.id, reason: "heartbeat timeout"))
        authenticated(&h, d.id, .authenticated(certA), admitted: true)
        h.feed(CastEvent.castConnected(d.id))
        let same = h.feed(CastEvent.receiverStatus(d.id, receiver(level: 0.2)))
        #expect(!same.events("cast2mqtt/living_room_tv/event").contains("certificate_changed"))
        // Another one: the event, with both hashes.
        h.feed(CastEvent.castDisconnected(d.id, reason: "heartbeat timeout"))
        authenticated(&h, d.id, .authenticated(certB), admitted: true)
        h.feed(CastEvent.castConnected(d.id))
        let changed = h.feed(CastEvent.receiverStatus(d.id, receiver(level: 0.3)))
        let event = changed.on("cast2mqtt/living_room_tv/event").compactMap(json).first { $0["type"]?.stringValue == "certificate_changed" }
        #expect(event?["previous"]?.stringValue == certA.sha256)
        #expect(event?["current"]?.stringValue == certB.sha256)
        #expect(changed.logs.contains { $0.contains("another device certificate") })
    }

    @Test("a malformed answer is published with the contract's word, auth_error")
    func malformedIsAuthError() throws {
        var h = Harness()
        let d = tvDescriptor()
        h.feed(.deviceDiscovered(d))
        let out = authenticated(&h, d.id, .failed(.malformed), admitted: false)
        #expect(out.json("cast2mqtt/living_room_tv/info")?["auth_error"]?.stringValue == "auth_error")
        #expect(out.json("cast2mqtt/living_room_tv/event")?["error"]?.stringValue == "auth_error")
        // Every word published is one of mqtt-api.md §11's list.
        let contract: Set = ["no_answer", "auth_error", "nonce_mismatch", "untrusted_chain", "expired", "bad_signature", "tls_certificate"]
        #expect(Set(DeviceAuthFailure.allCases.map(\.contractWord)) == contract)
    }

    @Test("the last authenticated certificate is kept in state_dir: certificate_changed across a restart")
    func certificateChangedAcrossARestart() throws {
        /// A new run's core from what the last one saved, the device connecting with `certificate`.
        func run(_ saved: PublishedSnapshot?, _ certificate: DeviceCertificateSummary) -> (Harness, BridgeOutput) {
            var h = Harness()
            let d = tvDescriptor()
            if let saved { h.core.restorePublished(saved, staticIDs: [d.id]) }
            h.feed(.deviceDiscovered(d))
            var out = authenticated(&h, d.id, .authenticated(certificate), admitted: true)
            out.append(h.feed(CastEvent.castConnected(d.id)))
            out.append(h.feed(CastEvent.receiverStatus(d.id, receiver())))
            return (h, out)
        }
        func changes(_ out: BridgeOutput) -> [JSONValue] {
            out.on("cast2mqtt/living_room_tv/event").compactMap(json).filter { $0["type"]?.stringValue == "certificate_changed" }
        }
        let (first, firstOut) = run(nil, certA)
        #expect(firstOut.publishedChanged)
        #expect(changes(firstOut).isEmpty)
        #expect(first.core.publishedSnapshot.devices[tvID]?.certificate == certA.sha256)

        // The next run starts from the saved file and the device shows another certificate.
        let (second, secondOut) = run(first.core.publishedSnapshot, certB)
        #expect(changes(secondOut).count == 1)
        #expect(changes(secondOut).first?["previous"]?.stringValue == certA.sha256)
        #expect(changes(secondOut).first?["current"]?.stringValue == certB.sha256)
        #expect(second.core.publishedSnapshot.devices[tvID]?.certificate == certB.sha256)

        // The same certificate after a restart: no event.
        let (_, thirdOut) = run(second.core.publishedSnapshot, certB)
        #expect(changes(thirdOut).isEmpty)
    }

    @Test("configuration: device_auth words (off unquoted too), roots, a static device's override, the environment")
    func configuration() throws {
        #expect(try ConfigurationLoader.load(yaml: "").cast.deviceAuth == "report")
        #expect(try ConfigurationLoader.load(yaml: "cast: {device_auth: off}").cast.deviceAuth == "off")
        #expect(try ConfigurationLoader.load(yaml: "cast:\n  device_auth: require").cast.deviceAuth == "require")
        #expect(try ConfigurationLoader.load(yaml: "", environment: ["CAST2MQTT_CAST_DEVICE_AUTH": "off"]).cast.deviceAuth == "off")
        #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(yaml: "cast: {device_auth: strict}") }
        #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(yaml: "cast: {device_auth: true}") }
        #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(yaml: "", environment: ["CAST2MQTT_CAST_DEVICE_AUTH": "maybe"])
        }
        let roots = try ConfigurationLoader.load(yaml: "cast: {device_auth_roots: [/etc/a.pem, /etc/b.pem]}")
        #expect(roots.cast.deviceAuthRoots == ["/etc/a.pem", "/etc/b.pem"])
        let statics = try ConfigurationLoader.load(yaml: """
            discovery:
              devices:
                - {host: 192.0.2.10, device_auth: off}
                - {host: 192.0.2.11}
            """)
        #expect(statics.discovery.devices.map(\.deviceAuth) == ["off", nil])
        #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(yaml: "discovery: {devices: [{host: 192.0.2.10, device_auth: sometimes}]}")
        }
    }
}
