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
}
