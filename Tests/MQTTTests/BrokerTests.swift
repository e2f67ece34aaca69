import Foundation
import MQTT
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The client against a real mosquitto on 127.0.0.1: delivery (this file), connection life
/// (BrokerTests+Connection.swift), security and liveness (BrokerTests+Failures.swift).
/// Serialized: the descriptor test changes the process's descriptor table, and the reconnect
/// tests stop and start their broker.
@Suite(.serialized) struct BrokerTests {
    @Test(.timeLimit(.minutes(1)))
    func roundTripAtEveryQoS() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, recorder) = try startClient(broker.url)
        // Subscribing before the connection is up is allowed: it is sent after CONNACK.
        try client.subscribe("rt/#", qos: .exactlyOnce)
        #expect(await recorder.waitConnected())
        for qos in MQTTQoS.allCases {
            try client.publish(MQTTMessage(topic: "rt/\(qos.rawValue)", string: "qos \(qos.rawValue)", qos: qos))
        }
        for qos in MQTTQoS.allCases {
            let message = await recorder.waitMessage(on: "rt/\(qos.rawValue)")
            #expect(message?.string == "qos \(qos.rawValue)")
            #expect(message?.qos == qos)
            #expect(message?.retain == false)
        }
        await client.shutdown(finalMessage: nil)
        #expect(await waitUntil { recorder.isFinished })
        #expect(client.reconnectCount == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func retainedMessageReachesALaterSubscriber() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (publisher, publisherEvents) = try startClient(broker.url)
        #expect(await publisherEvents.waitConnected())
        try publisher.publish(MQTTMessage(topic: "ret/state", string: "online", qos: .atLeastOnce, retain: true))
        await publisher.shutdown(finalMessage: nil)

        let (subscriber, events) = try startClient(broker.url)
        try subscriber.subscribe("ret/#", qos: .atLeastOnce)
        let message = await events.waitMessage(on: "ret/state")
        #expect(message?.string == "online")
        #expect(message?.retain == true)
        await subscriber.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func responseTopicAndCorrelationDataBothWays() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, recorder) = try startClient(broker.url)
        try client.subscribe("rpc/#", qos: .atLeastOnce)
        #expect(await recorder.waitConnected())
        let correlation: [UInt8] = [0, 1, 2, 0xfe, 0xff]
        try client.publish(
            MQTTMessage(
                topic: "rpc/request", string: "{}", qos: .atLeastOnce, responseTopic: "rpc/response/x",
                correlationData: correlation))
        try client.publish(MQTTMessage(topic: "rpc/plain", string: "{}"))
        let request = await recorder.waitMessage(on: "rpc/request")
        #expect(request?.responseTopic == "rpc/response/x")
        #expect(request?.correlationData == correlation)
        let plain = await recorder.waitMessage(on: "rpc/plain")
        #expect(plain != nil)
        #expect(plain?.responseTopic == nil)
        #expect(plain?.correlationData == nil)

        // Answer the way the bridge will: to the response topic, echoing the correlation data.
        if let request, let responseTopic = request.responseTopic {
            try client.publish(
                MQTTMessage(topic: responseTopic, string: "ok", correlationData: request.correlationData))
        }
        let response = await recorder.waitMessage(on: "rpc/response/x")
        #expect(response?.string == "ok")
        #expect(response?.correlationData == correlation)
        await client.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func mqtt311WorksAndHasNoProperties() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, recorder) = try startClient(broker.url) {
            $0.protocolVersion = .v311
            $0.will = MQTTMessage(topic: "v3/will", string: "gone", retain: true)
        }
        try client.subscribe("v3/#", qos: .exactlyOnce)
        #expect(await recorder.waitConnected())
        try client.publish(
            MQTTMessage(topic: "v3/a", string: "x", qos: .exactlyOnce, responseTopic: "v3/r", correlationData: [1]))
        let message = await recorder.waitMessage(on: "v3/a")
        #expect(message?.string == "x")
        #expect(message?.qos == .exactlyOnce)
        #expect(message?.responseTopic == nil)
        #expect(message?.correlationData == nil)
        await client.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func binaryAndLargePayloadsPassThroughIntact() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, recorder) = try startClient(broker.url)
        try client.subscribe("bin/#", qos: .atLeastOnce)
        #expect(await recorder.waitConnected())
        let invalidUTF8: [UInt8] = [0xff, 0xfe, 0x00, 0xc3, 0x28, 0xa0, 0xa1, 0xed, 0xa0, 0x80]
        var generator = SystemRandomNumberGenerator()
        let large = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try client.publish(MQTTMessage(topic: "bin/invalid", payload: invalidUTF8))
        try client.publish(MQTTMessage(topic: "bin/large", payload: large))
        try client.publish(MQTTMessage(topic: "bin/empty", payload: []))
        #expect(await recorder.waitMessage(on: "bin/invalid")?.payload == invalidUTF8)
        let received = await recorder.waitMessage(on: "bin/large")
        #expect(received?.payload.count == large.count)
        #expect(received?.payload == large)
        #expect(await recorder.waitMessage(on: "bin/empty")?.payload == [])
        await client.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func unsubscribeAndInvalidTopics() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, recorder) = try startClient(broker.url)
        try client.subscribe("un/a", qos: .atLeastOnce)
        try client.subscribe("un/b", qos: .atLeastOnce)
        #expect(await recorder.waitConnected())
        try client.unsubscribe("un/a")
        try client.publish(MQTTMessage(topic: "un/a", string: "dropped"))
        try client.publish(MQTTMessage(topic: "un/b", string: "kept"))
        #expect(await recorder.waitMessage(on: "un/b")?.string == "kept")
        #expect(recorder.messages.contains { $0.topic == "un/a" } == false)

        // Publishing to a filter, or subscribing to a malformed one, is refused at once.
        #expect { try client.publish(MQTTMessage(topic: "un/#", string: "x")) } throws: {
            ($0 as? MQTTError)?.code == .invalidArgument
        }
        #expect { try client.subscribe("un/#/b", qos: .atMostOnce) } throws: {
            ($0 as? MQTTError)?.code == .invalidArgument
        }
        // The unsubscribed filter is not restored after a reconnect, the other one is.
        broker.stop()
        try broker.start()
        #expect(await recorder.waitConnected(count: 2))
        try client.publish(MQTTMessage(topic: "un/a", string: "dropped again"))
        try client.publish(MQTTMessage(topic: "un/b", string: "kept again"))
        #expect(await waitUntil { recorder.messages.contains { $0.string == "kept again" } })
        #expect(recorder.messages.map(\.topic) == ["un/b", "un/b"])
        await client.shutdown(finalMessage: nil)
    }

    /// 200 publications at QoS 1 each come back through our own subscription, one after the
    /// other. (How long that takes is `scripts/bench e2e`'s broker floor, not a test.)
    @Test(.timeLimit(.minutes(1)))
    func roundTripsArriveOneAfterTheOther() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, recorder) = try startClient(broker.url)
        try client.subscribe("rtt/#", qos: .atLeastOnce)
        #expect(await recorder.waitConnected())
        #expect(try await confirmSubscription(client, recorder, probeTopic: "rtt/probe"))
        for index in 0..<200 {
            let topic = "rtt/\(index)"
            try client.publish(MQTTMessage(topic: topic, string: "\(index)", qos: .atLeastOnce))
            let received = await waitUntil(interval: .microseconds(50)) { recorder.messages.last?.topic == topic }
            #expect(received, "publication \(index) did not come back")
        }
        await client.shutdown(finalMessage: nil)
    }

    /// Publishes from several tasks at once (libmosquitto's thread-safe path plus our wake-up
    /// pipe) and checks every message arrives once; reports the rate.
    @Test(.timeLimit(.minutes(1)))
    func concurrentPublishersDeliverEverything() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, recorder) = try startClient(broker.url) { $0.maxInflight = 100 }
        try client.subscribe("load/#", qos: .atLeastOnce)
        #expect(await recorder.waitConnected())
        #expect(try await confirmSubscription(client, recorder, probeTopic: "load/probe"))
        let tasks = 4
        let perTask = 1000
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for index in 0..<perTask {
                        try client.publish(MQTTMessage(topic: "load/\(task)", string: "\(index)", qos: .atLeastOnce))
                    }
                }
            }
            try await group.waitForAll()
        }
        let expected = tasks * perTask
        #expect(await waitUntil {
            recorder.messages.filter { $0.topic != "load/probe" }.count >= expected
        })
        let elapsed = clock.now - start
        let received = recorder.messages.filter { $0.topic != "load/probe" }
        #expect(received.count == expected)
        for task in 0..<tasks {
            // Per publisher, order is kept.
            let payloads = received.filter { $0.topic == "load/\(task)" }.compactMap(\.string)
            #expect(payloads == (0..<perTask).map { "\($0)" })
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("\(expected) QoS 1 messages from \(tasks) tasks, published and received back in \(elapsed) (\(Int(Double(expected) / seconds)) msg/s)")
        await client.shutdown(finalMessage: nil)
    }
}
