import CastSimulator
import Foundation
import Logging
import MQTT
import Testing
import TestSupport

/// `mqtt.url` as a list: the bridge moves to the next broker when its broker is lost, publishes
/// everything retained there, names it in `bridge/info`, and stays there.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EndToEndBrokerFailoverTests {
    @Test func bridgeInfoNamesTheBrokerInUseAcrossAFailover() async throws {
        let second = try MosquittoBroker()
        defer { second.stop() }
        try await withBridge(devices: ["Living Room TV"], moreBrokers: [second.url]) { h in
            try await h.waitOnline(["living_room_tv"])
            let info = await h.observer.waitJSON("cast2mqtt/bridge/info") { $0["broker"]?.stringValue != nil }
            #expect(info?["broker"]?.stringValue == h.broker.url, "\(String(describing: info))")

            // An observer on the second broker, which has seen nothing of the bridge yet.
            var logger = Logger(label: "e2e.second")
            logger.logLevel = .warning
            let watcher = try MosquittoClient(configuration: MQTTConfiguration(url: second.url, clientID: "e2e-second",
                                                                               cleanStart: true), logger: logger)
            let seen = Observer(watcher)
            try watcher.subscribe("cast2mqtt/#", qos: .atLeastOnce)
            try watcher.start()
            #expect(await waitUntil { watcher.isConnected })

            h.broker.stop()
            let moved = await seen.waitJSON("cast2mqtt/bridge/info", timeout: .seconds(30)) {
                $0["broker"]?.stringValue == second.url
            }
            #expect(moved != nil, "no bridge/info on the second broker; log:\n\(h.log.suffix(3000))")
            #expect(await seen.wait("cast2mqtt/bridge/state") { $0 == "online" } != nil)
            #expect(await seen.wait("cast2mqtt/living_room_tv/availability") { $0 == "online" } != nil)
            // Commands work through the second broker.
            let commandID = "failover-\(UUID().uuidString.prefix(6))"
            try watcher.publish(MQTTMessage(topic: "cast2mqtt/living_room_tv/command/volume",
                                            string: "{\"id\":\"\(commandID)\",\"level\":0.3}"))
            let reply = await seen.waitJSON("cast2mqtt/living_room_tv/response") { $0["id"]?.stringValue == commandID }
            #expect(reply?["status"]?.stringValue == "ok", "\(String(describing: reply))")

            // The first broker back: the bridge stays on the second while it works.
            let firstRun = h.broker.output.count
            try h.broker.start()
            let again = "failover-\(UUID().uuidString.prefix(6))"
            try watcher.publish(MQTTMessage(topic: "cast2mqtt/living_room_tv/command/volume",
                                            string: "{\"id\":\"\(again)\",\"level\":0.4}"))
            #expect(await seen.waitJSON("cast2mqtt/living_room_tv/response") { $0["id"]?.stringValue == again } != nil)
            h.broker.stop()  // mosquitto's log reaches its file when it stops
            #expect(!h.broker.output.dropFirst(firstRun).contains("cast2mqtt-e2e"), "the bridge went back to the first broker")
            #expect(seen.lastJSON("cast2mqtt/bridge/info")?["broker"]?.stringValue == second.url)
            await watcher.shutdown(finalMessage: nil)
        }
    }
    /// Instance mode, `mqtt.url: [first, second]`, where the second still retains what an instance
    /// left there earlier (claims with older epochs, its `info` and `offline`: an instance that was
    /// cut off from the first broker only, or the first broker's old state). The first broker goes:
    /// every owner says its claims again on the second and republishes every retained topic of its
    /// devices there, so each device's `info.owner` is the holder of its claim and it is `online`.
    @Test func ownersRepublishTheirDevicesOnTheNextBroker() async throws {
        try await withClosing(try await InstancesHarness(devices: 4, instances: ["a", "b"], spareBroker: true),
                              close: { await $0.close() }) { h in
            let settled = await h.waitSettled()
            try #require(settled, "not settled; logs:\n\(h.logs)")
            let spare = try #require(h.spare)
            let (watcher, seen) = try Observer.started(url: spare.url, topics: ["cast2mqtt/#"])
            #expect(await waitUntil { watcher.isConnected })
            // What a former owner `z` left on the second broker (z sorts after a and b: its epoch-1
            // claims are older than theirs).
            for d in h.devices {
                try watcher.publish(MQTTMessage(topic: "cast2mqtt/bridge/claims/\(d.id)", string: #"{"owner":"z","epoch":1}"#,
                                                qos: .atLeastOnce, retain: true))
                try watcher.publish(MQTTMessage(topic: "cast2mqtt/\(h.slug(d))/info", string: #"{"id":"\#(d.id)","owner":"z"}"#,
                                                qos: .atLeastOnce, retain: true))
                try watcher.publish(MQTTMessage(topic: "cast2mqtt/\(h.slug(d))/availability", string: "offline",
                                                qos: .atLeastOnce, retain: true))
            }
            #expect(await seen.wait("cast2mqtt/\(h.slug(h.devices[3]))/availability") { $0 == "offline" } != nil)

            h.broker.stop()
            func owned(_ d: SimulatedDevice) -> Bool {
                guard let claim = seen.lastJSON("cast2mqtt/bridge/claims/\(d.id)"), let owner = claim["owner"]?.stringValue,
                      owner != "z" else { return false }
                return seen.lastJSON("cast2mqtt/\(h.slug(d))/info")?["owner"]?.stringValue == owner
                    && seen.last("cast2mqtt/\(h.slug(d))/availability") == "online"
            }
            let moved = await waitUntil(timeout: .seconds(40)) { h.devices.allSatisfy(owned) }
            let states = h.devices.map { d in
                "\(d.name): claim \(seen.last("cast2mqtt/bridge/claims/\(d.id)") ?? "-"), info.owner "
                    + "\(seen.lastJSON("cast2mqtt/\(h.slug(d))/info")?["owner"]?.stringValue ?? "-"), "
                    + "\(seen.last("cast2mqtt/\(h.slug(d))/availability") ?? "-")"
            }
            #expect(moved, "on the second broker: \(states); logs:\n\(h.logs)")
            #expect(await seen.wait("cast2mqtt/bridge/state") { $0 == "online" } != nil)
            for name in ["a", "b"] {
                #expect(seen.lastJSON("cast2mqtt/bridge/instances/\(name)")?["state"] == .string("online"))
            }
            // One Cast connection per device throughout the move.
            for d in h.devices { #expect((try? await d.state().connections) == 1) }
            await watcher.shutdown(finalMessage: nil)
        }
    }
}
