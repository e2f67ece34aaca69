import Foundation
import MQTT
import TestSupport
import Testing

/// A list of brokers (`mqtt.url` as a list): the first that answers, the next when it is lost, no
/// fail-back while the current one works.
extension BrokerTests {
    @Test(.timeLimit(.minutes(2)))
    func failsOverToTheNextBrokerAndStaysThere() async throws {
        let first = try MosquittoBroker()
        let second = try MosquittoBroker()
        defer {
            first.stop()
            second.stop()
        }
        let id = uniqueID("failover")
        let (client, recorder) = try startClient(first.url, id: id) { $0.urls = [first.url, second.url] }
        try client.subscribe("failover/#", qos: .atLeastOnce)
        #expect(await recorder.waitConnected())
        #expect(client.currentBroker == first.url)
        #expect(try await confirmSubscription(client, recorder, probeTopic: "failover/one"))

        // The first broker goes away: the client moves to the second, its subscription with it.
        first.stop()
        #expect(await recorder.waitConnected(count: 2), "no failover: \(String(describing: client.lastError))")
        #expect(client.currentBroker == second.url)
        let (other, otherEvents) = try startClient(second.url)
        #expect(await otherEvents.waitConnected())
        try other.publish(MQTTMessage(topic: "failover/from-other", string: "on the second"))
        #expect(await recorder.waitMessage(on: "failover/from-other")?.string == "on the second")

        // The first comes back: nothing moves while the second works. The client's own round trip
        // through the second broker after the first listens again shows it is still there.
        let firstRun = first.output.count
        try first.start()
        #expect(try await confirmSubscription(client, recorder, probeTopic: "failover/two"))
        #expect(recorder.connectedCount == 2)
        #expect(client.currentBroker == second.url)
        // mosquitto's log reaches its file when it stops.
        first.stop()
        #expect(!first.output.dropFirst(firstRun).contains(id), "the client connected to the first broker again")
        try first.start()

        // The second goes away: round the list, back to the first.
        second.stop()
        #expect(await recorder.waitConnected(count: 3), "no failover back: \(String(describing: client.lastError))")
        #expect(client.currentBroker == first.url)
        #expect(try await confirmSubscription(client, recorder, probeTopic: "failover/three"))
        await other.shutdown(finalMessage: nil)
        await client.shutdown(finalMessage: nil)
    }

    /// A connection lost while its broker still works (here: the session taken over by another
    /// client with the same id; a frozen process or a network blip alike) is tried again on the same
    /// broker: the next one is for a broker that cannot be reached (instances on one base topic
    /// must stay on the broker they share).
    @Test(.timeLimit(.minutes(1)))
    func aLostConnectionToAWorkingBrokerStaysOnIt() async throws {
        let first = try MosquittoBroker()
        let second = try MosquittoBroker()
        defer {
            first.stop()
            second.stop()
        }
        let id = uniqueID("stay")
        let (client, recorder) = try startClient(first.url, id: id) { $0.urls = [first.url, second.url] }
        try client.subscribe("stay/#", qos: .atLeastOnce)
        #expect(await recorder.waitConnected())
        #expect(client.currentBroker == first.url)
        // Another client with the same id takes the session over; it waits long before it would
        // take it back, and is shut down once ours is back.
        let (intruder, intruderEvents) = try startClient(first.url, id: id) {
            $0.reconnectInitial = .seconds(30)
            $0.reconnectMax = .seconds(30)
        }
        #expect(await intruderEvents.waitConnected())
        #expect(await recorder.waitConnected(count: 2), "not reconnected: \(String(describing: client.lastError))")
        await intruder.shutdown(finalMessage: nil)
        #expect(client.currentBroker == first.url)
        #expect(try await confirmSubscription(client, recorder, probeTopic: "stay/probe"))
        second.stop()  // mosquitto's log reaches its file when it stops
        #expect(!second.output.contains(id), "the client moved to the second broker")
        await client.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func startsOnTheFirstBrokerThatAnswers() async throws {
        let down = try MosquittoBroker(start: false)
        let up = try MosquittoBroker()
        defer { up.stop() }
        let (logger, log) = RecordingLog.logger()
        let (client, recorder) = try startClient(down.url, logger: logger) { $0.urls = [down.url, up.url] }
        #expect(await recorder.waitConnected(), "\(String(describing: client.lastError))")
        #expect(client.currentBroker == up.url)
        #expect(log.count(containing: "trying MQTT broker 127.0.0.1:\(up.port) next") >= 1)
        await client.shutdown(finalMessage: nil)
    }

    @Test func brokerListsAreValidated() {
        #expect(throws: MQTTError.self) {
            _ = try MQTTConfiguration(url: "mqtt://a:1").with { $0.urls = ["mqtt://a:1", "mqtts://b:2"] }.validateBrokers()
        }
        #expect(throws: MQTTError.self) {
            _ = try MQTTConfiguration().with { $0.urls = [] }.validateBrokers()
        }
        #expect(throws: MQTTError.self) {
            _ = try MQTTConfiguration().with { $0.urls = ["mqtt://a:1", "ftp://b"] }.validateBrokers()
        }
        let two = try? MQTTConfiguration().with { $0.urls = ["mqtt://a:1", "mqtt://[::1]:2"] }.validateBrokers()
        #expect(two?.map(\.url) == ["mqtt://a:1", "mqtt://[::1]:2"])
    }
}

extension MQTTConfiguration {
    func with(_ change: (inout MQTTConfiguration) -> Void) -> MQTTConfiguration {
        var copy = self
        change(&copy)
        return copy
    }
}
