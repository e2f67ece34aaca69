import Bridge
import CastClient
import CastProtocol
import Discovery
import Testing

@testable import cast2mqtt

/// The daemon's glue: the one mapping from Cast client errors to the contract's error codes,
/// and the translations between the layers.
@Suite struct AdapterTests {
    @Test(arguments: [
        (CastError.Code.loadFailed, "load_failed"), (.loadCancelled, "load_cancelled"), (.launchError, "launch_error"),
        (.invalidRequest, "invalid_request"), (.invalidPlayerState, "invalid_player_state"), (.timeout, "timeout"),
        (.notConnected, "device_offline"), (.connectionLost, "device_offline"), (.noApp, "no_app"),
        (.noMediaSession, "no_media_session"), (.payloadTooLarge, "payload_too_large"), (.mediaError, "internal"),
        (.unexpectedReply, "internal"), (.shuttingDown, "internal"),
    ])
    func castErrorsMapToContractCodes(_ code: CastError.Code, _ expected: String) {
        let mapped = Adapt.bridgeError(CastError(code, "what happened", reason: "SOME_REASON"))
        #expect(mapped.code.rawValue == expected)
        #expect(mapped.message.contains("what happened"))
    }

    @Test func deviceReasonIsKeptInTheMessage() {
        let mapped = Adapt.bridgeError(CastError(.invalidRequest, "the receiver rejected the request", reason: "INVALID_MEDIA_SESSION_ID"))
        #expect(mapped.message.contains("INVALID_MEDIA_SESSION_ID"))
    }

    @Test func otherErrorsAreInternal() {
        struct Odd: Error {}
        #expect(Adapt.bridgeError(Odd()).code == .internal)
    }

    @Test func clientEventsBecomeBridgeInputs() {
        let snapshot = DeviceSnapshot(generation: 3, link: .offline(reason: .heartbeatTimeout, silentSince: nil))
        guard case .device("d", let kept) = Fleet.translate(.snapshot(snapshot), device: "d") else {
            Issue.record("snapshot")
            return
        }
        #expect(kept == snapshot)
        guard case .appMessage("d", let namespace, .string("{}")) = Fleet.translate(
            .appMessage(namespace: "urn:x-cast:x", sourceID: "t", payload: .string("{}")), device: "d") else {
            Issue.record("app message")
            return
        }
        #expect(namespace == "urn:x-cast:x")
    }

    @Test func discoveryRecordBecomesDescriptor() {
        let record = CastDeviceRecord(id: "0123456789abcdef0123456789abcdef", friendlyName: "Kitchen", model: "Google Home",
                                      host: "192.0.2.7", port: 8009, capabilities: [.audioOut, .masterVolume],
                                      castType: .audio, source: .mdns)
        let d = Adapt.descriptor(record)
        #expect(d.id == record.id)
        #expect(d.castType == .audio)
        #expect(d.source == .mdns)
        #expect(d.capabilities.contains("audio_out"))
        // No maker guessed: a record without one (a device of another maker, not yet described)
        // becomes a descriptor without one; a known maker is kept as it is.
        #expect(d.manufacturer == nil)
        var sony = record
        sony.manufacturer = "Sony"
        #expect(Adapt.descriptor(sony).manufacturer == "Sony")
    }

    @Test func configurationReachesEveryLayer() {
        var c = BridgeConfiguration()
        c.cast.heartbeatInterval = 2
        c.cast.heartbeatTimeout = 7
        c.cast.reconnectInitial = 0.25
        c.cast.reconnectMax = 30
        c.mqtt.protocolVersion = "3.1.1"
        c.discovery.devices = [.init(host: "192.0.2.9", port: 8009, name: "TV")]
        let cast = Adapt.castConfiguration(c)
        #expect(cast.heartbeatInterval == .seconds(2))
        #expect(cast.heartbeatTimeout == .seconds(7))
        #expect(cast.backoff.initial == .milliseconds(250))
        #expect(cast.backoff.maximum == .seconds(30))
        let mqtt = Adapt.mqttConfiguration(c, will: Publication(topic: "cast2mqtt/bridge/state", text: "offline", retain: true))
        #expect(mqtt.protocolVersion == .v311)
        #expect(mqtt.cleanStart == false)
        #expect(mqtt.will?.retain == true)
        #expect(mqtt.broker == c.mqtt)
        // Discovery reads its section as it is (no copy to convert).
        let discovery: DiscoveryConfiguration = c.discovery
        #expect(discovery.devices.first?.effectiveID == StaticDevice(host: "192.0.2.9").effectiveID)
    }

    @Test func deviceTable() {
        let record = CastDeviceRecord(id: "0123456789abcdef0123456789abcdef", friendlyName: "Kitchen", host: "192.0.2.7")
        let table = DeviceTable.render([record])
        #expect(table.split(separator: "\n").count == 2)
        #expect(table.contains("Kitchen"))
        #expect(DeviceTable.render([]) == "no devices found")
    }
}
