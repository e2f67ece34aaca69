import Foundation
import TestSupport
@testable import MQTT
import Synchronization
import Testing

/// A republish of everything is handed to libmosquitto a window at a time: what is published
/// meanwhile goes out behind at most `window` of it, a newer publication on a held topic
/// replaces the held one, and nothing is lost.
@Suite struct BulkPublisherTests {
    func message(_ topic: String, _ text: String = "x") -> MQTTMessage {
        MQTTMessage(topic: topic, string: text, qos: .atLeastOnce, retain: true)
    }

    @Test func aWindowAtATimeInOrderAndRoomAsTheyComplete() {
        let bulk = BulkPublisher(window: 4)
        var handed: [String] = []
        var mid: Int32 = 0
        let publish: (MQTTMessage) -> Int32? = { m in
            handed.append(m.topic)
            mid += 1
            return mid
        }
        for i in 0..<10 { bulk.add(message("t/\(i)")) }
        bulk.pump(publish)
        #expect(handed == ["t/0", "t/1", "t/2", "t/3"])
        #expect(bulk.counts == (held: 6, outstanding: 4))
        // What is published now goes behind four, not ten.
        handed.append("direct")
        #expect(bulk.completed(99) == false, "not a bulk message")
        #expect(bulk.completed(2))
        bulk.pump(publish)
        #expect(handed.last == "t/4")
        for done in [1, 3, 4, 5] as [Int32] { #expect(bulk.completed(done)) }
        bulk.pump(publish)
        #expect(handed == ["t/0", "t/1", "t/2", "t/3", "direct", "t/4", "t/5", "t/6", "t/7", "t/8"])
        #expect(bulk.counts == (held: 1, outstanding: 4))
    }

    @Test func aNewerPublicationReplacesTheHeldOne() {
        let bulk = BulkPublisher(window: 1)
        var handed: [(String, String)] = []
        var mid: Int32 = 0
        let publish: (MQTTMessage) -> Int32? = { m in
            handed.append((m.topic, m.string ?? ""))
            mid += 1
            return mid
        }
        bulk.add(message("a", "1"))
        bulk.add(message("b", "1"))
        bulk.add(message("c", "1"))
        bulk.pump(publish)  // a/1 handed; b and c held
        bulk.add(message("b", "2"))  // replaces the held b, keeps its place
        bulk.supersede("c")  // published directly: the held c is stale
        bulk.supersede("a")  // already handed: nothing to do
        #expect(bulk.counts == (held: 1, outstanding: 1))
        #expect(bulk.completed(1))
        bulk.pump(publish)
        #expect(handed.map { "\($0.0)/\($0.1)" } == ["a/1", "b/2"])
        #expect(bulk.completed(2))
        bulk.pump(publish)
        #expect(bulk.counts == (held: 0, outstanding: 0))
    }

    /// libmosquitto may complete a message before `publish` has returned its id to the pump.
    @Test func aCompletionBeforeTheIdIsKnownStillMakesRoom() {
        let bulk = BulkPublisher(window: 1)
        var handed: [String] = []
        var mid: Int32 = 0
        bulk.add(message("a"))
        bulk.add(message("b"))
        bulk.pump { m in
            handed.append(m.topic)
            mid += 1
            // The broker's PUBACK handled on the network thread while this call is under way.
            _ = bulk.completed(mid)
            return mid
        }
        #expect(handed == ["a", "b"], "the early completion freed the window")
        #expect(bulk.counts == (held: 0, outstanding: 0))
    }

    @Test func aConnectFreesTheWindow() {
        let bulk = BulkPublisher(window: 2)
        var handed = 0
        var mid: Int32 = 0
        let publish: (MQTTMessage) -> Int32? = { _ in
            handed += 1
            mid += 1
            return mid
        }
        for i in 0..<5 { bulk.add(message("t/\(i)")) }
        bulk.pump(publish)
        #expect(handed == 2)
        // The session is gone with the broker: those two will never be acknowledged.
        bulk.connected()
        bulk.pump(publish)
        #expect(handed == 4)
    }
}

extension BrokerTests {
    /// Through a real broker: published while it is down, the bulk waits beyond its window, the
    /// direct messages go out right behind that window on reconnect, and afterwards every topic
    /// holds its newest value (the directly published one where it replaced a held one).
    @Test(.timeLimit(.minutes(2)))
    func aBulkIsFedByTheWindowAndNothingIsLost() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, recorder) = try startClient(broker.url)
        try client.subscribe("bulk/#", qos: .atLeastOnce)
        #expect(await recorder.waitConnected())
        #expect(try await confirmSubscription(client, recorder, probeTopic: "bulk/probe"))
        broker.stop()
        #expect(await waitUntil { recorder.disconnectReasons.count == 1 })

        let count = 500
        let payload = String(repeating: "p", count: 2000)
        for i in 0..<count {
            try client.publishBulk(MQTTMessage(topic: "bulk/t/\(i)", string: "\(i) \(payload)", qos: .atLeastOnce, retain: true))
        }
        // No acknowledgement while the broker is down: one window handed over, the rest held.
        #expect(client.bulkCounts == (held: count - BulkPublisher.window, outstanding: BulkPublisher.window))
        try client.publish(MQTTMessage(topic: "bulk/marker", string: "direct", qos: .atLeastOnce))
        try client.publish(MQTTMessage(topic: "bulk/t/\(count - 1)", string: "direct", qos: .atLeastOnce, retain: true))
        try client.publish(MQTTMessage(topic: "bulk/t/\(count - 2)", payload: [], qos: .atLeastOnce, retain: true))
        #expect(client.bulkCounts.held == count - BulkPublisher.window - 2)

        try broker.start()
        #expect(await recorder.waitConnected(count: 2))
        #expect(await waitUntil(timeout: .seconds(60)) { client.bulkCounts == (held: 0, outstanding: 0) })
        #expect(await waitUntil(timeout: .seconds(60)) {
            Set(recorder.messages.map(\.topic)).isSuperset(of: (0..<count).map { "bulk/t/\($0)" } + ["bulk/marker"])
        })
        let order = recorder.messages.map(\.topic)
        let marker = try #require(order.firstIndex(of: "bulk/marker"))
        let lastHeld = try #require(order.firstIndex(of: "bulk/t/\(count - 3)"))
        #expect(marker < lastHeld, "the direct message went out behind one window, not behind the whole bulk")
        #expect(order.prefix(marker).filter { $0.hasPrefix("bulk/t/") }.count <= BulkPublisher.window)

        // What the broker retains: every topic's newest value.
        let (reader, readerEvents) = try startClient(broker.url)
        try reader.subscribe("bulk/t/#", qos: .atLeastOnce)
        #expect(await waitUntil(timeout: .seconds(60)) { Set(readerEvents.messages.map(\.topic)).count >= count - 1 })
        var retained: [String: String] = [:]
        for m in readerEvents.messages where m.retain { retained[m.topic] = m.string }
        #expect(retained.count == count - 1, "one topic was cleared")
        #expect(retained["bulk/t/\(count - 2)"] == nil)
        #expect(retained["bulk/t/\(count - 1)"] == "direct", "the direct publication replaced the held one")
        #expect((0..<(count - 2)).allSatisfy { retained["bulk/t/\($0)"] == "\($0) \(payload)" })
        await reader.shutdown(finalMessage: nil)
        await client.shutdown(finalMessage: nil)
    }
}
