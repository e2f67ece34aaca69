import Foundation
import MQTT
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The connection's life: the last will and a clean shutdown, reconnects that restore the
/// subscriptions or resume a persistent session, and a socket above FD_SETSIZE.
extension BrokerTests {
    @Test(.timeLimit(.minutes(1)))
    func lastWillIsPublishedAfterSIGKILL() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (observer, events) = try startClient(broker.url)
        try observer.subscribe("will/#", qos: .atLeastOnce)
        #expect(await events.waitConnected())
        #expect(try await confirmSubscription(observer, events, probeTopic: "will/probe"))

        let child = try ManagedProcess(
            try builtExecutable("mqtt-test-client"), [broker.url, uniqueID("willer"), "will/state", "offline"],
            logName: "mqtt-test-client")
        defer { child.stop() }
        let connected = await waitUntil { child.output.contains("connected") }
        #expect(connected, "mqtt-test-client did not connect:\n\(child.output)")
        #expect(events.messages.first { $0.topic == "will/state" } == nil)
        child.signal(SIGKILL)
        let will = await events.waitMessage(on: "will/state")
        #expect(will?.string == "offline")
        await observer.shutdown(finalMessage: nil)

        // And it is retained: a new subscriber gets it.
        let (late, lateEvents) = try startClient(broker.url)
        try late.subscribe("will/state", qos: .atLeastOnce)
        let retained = await lateEvents.waitMessage(on: "will/state")
        #expect(retained?.string == "offline")
        #expect(retained?.retain == true)
        await late.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func cleanShutdownPublishesTheFinalMessageAndNoWill() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, recorder) = try startClient(broker.url) {
            $0.will = MQTTMessage(topic: "bye/state", string: "will", qos: .atLeastOnce, retain: true)
        }
        #expect(await recorder.waitConnected())
        try client.publish(MQTTMessage(topic: "bye/state", string: "online", qos: .atLeastOnce, retain: true))
        await client.shutdown(
            finalMessage: MQTTMessage(topic: "bye/state", string: "offline", qos: .atLeastOnce, retain: true))
        #expect(await waitUntil { recorder.isFinished })
        #expect(recorder.disconnectReasons == ["client shut down"])
        #expect(throws: MQTTError.self) { try client.start() }
        #expect { try client.publish(MQTTMessage(topic: "bye/state", string: "late")) } throws: {
            ($0 as? MQTTError)?.code == .shutDown
        }

        // A later subscriber gets the final message, retained, and no will. The broker read the
        // closed connection before this client's connect, subscription and probe round trip, so
        // a (wrongly) published will is either the retained value or arrives before the probe.
        let (late, lateEvents) = try startClient(broker.url)
        try late.subscribe("bye/#", qos: .atLeastOnce)
        let retained = await lateEvents.waitMessage(on: "bye/state")
        #expect(retained?.string == "offline")
        #expect(try await confirmSubscription(late, lateEvents, probeTopic: "bye/probe"))
        #expect(lateEvents.messages.filter { $0.topic == "bye/state" }.count == 1)
        await late.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func subscriptionsAreRestoredAfterBrokerRestart() async throws {
        // No persistence: the restarted broker has forgotten us, so the client must resubscribe.
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, recorder) = try startClient(broker.url)
        try client.subscribe("restore/#", qos: .atLeastOnce)
        #expect(await recorder.waitConnected())
        #expect(try await confirmSubscription(client, recorder, probeTopic: "restore/probe1"))

        broker.stop()
        #expect(await waitUntil { recorder.disconnectReasons.count == 1 })
        #expect(!client.isConnected)
        // While disconnected: QoS 0 is refused, QoS 1 is queued and sent after the reconnect.
        #expect {
            try client.publish(MQTTMessage(topic: "restore/lost", string: "x", qos: .atMostOnce))
        } throws: { ($0 as? MQTTError)?.code == .noConnection }
        try client.publish(MQTTMessage(topic: "restore/queued", string: "queued while away", qos: .atLeastOnce))

        try broker.start()
        #expect(await recorder.waitConnected(count: 2))
        #expect(recorder.events.contains(.connected(sessionPresent: false)))
        #expect(client.reconnectCount == 1)
        #expect(await recorder.waitMessage(on: "restore/queued")?.string == "queued while away")
        try client.publish(MQTTMessage(topic: "restore/after", string: "after", qos: .atLeastOnce))
        #expect(await recorder.waitMessage(on: "restore/after")?.string == "after")

        // The order of connection events: connected, disconnected, connected.
        let kinds = recorder.events.compactMap { event -> String? in
            switch event {
            case .connected: "connected"
            case .disconnected: "disconnected"
            case .message: nil
            }
        }
        #expect(kinds == ["connected", "disconnected", "connected"])
        await client.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func persistentSessionDeliversWhatWasPublishedWhileAway() async throws {
        let broker = try MosquittoBroker(.init(persistence: true))
        defer { broker.stop() }
        // A fixed 3 s reconnect delay leaves time to publish while the client is provably away.
        let (client, recorder) = try startClient(broker.url, id: uniqueID("persistent")) {
            $0.reconnectInitial = .seconds(3)
            $0.reconnectMax = .seconds(3)
        }
        try client.subscribe("away/#", qos: .atLeastOnce)
        #expect(await recorder.waitConnected())
        #expect(try await confirmSubscription(client, recorder, probeTopic: "away/probe"))

        broker.stop()  // SIGTERM: mosquitto saves our session (with its subscription) to disk
        #expect(await waitUntil { recorder.disconnectReasons.count == 1 })
        try broker.start()

        let (publisher, publisherEvents) = try startClient(broker.url) { $0.cleanStart = true }
        #expect(await publisherEvents.waitConnected())
        try publisher.publish(MQTTMessage(topic: "away/cmd", string: "while away", qos: .atLeastOnce))
        await publisher.shutdown(finalMessage: nil)  // returns once the broker acknowledged it
        #expect(recorder.connectedCount == 1, "the client reconnected before the message was published")
        #expect(client.reconnectCount == 0)

        #expect(await recorder.waitConnected(count: 2))
        #expect(recorder.events.contains(.connected(sessionPresent: true)))
        let message = await recorder.waitMessage(on: "away/cmd")
        #expect(message?.string == "while away")
        #expect(message?.qos == .atLeastOnce)
        #expect(client.reconnectCount == 1)
        await client.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func worksWithASocketDescriptorAbove1024() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let hog = try DescriptorHog(above: 1100)
        defer { hog.close() }
        // Other suites run in parallel and free low descriptor numbers at any time; take them
        // back right before each connect, and try again (bounded) when one slipped through.
        var started: (MosquittoClient, EventRecorder)?
        for _ in 0..<10 {
            hog.topUp(above: 1100)
            let (candidate, candidateRecorder) = try startClient(broker.url)
            #expect(await candidateRecorder.waitConnected())
            if candidate.socketDescriptor > 1024 {
                started = (candidate, candidateRecorder)
                break
            }
            await candidate.shutdown(finalMessage: nil)
        }
        let (client, recorder) = try #require(started, "never got a socket above 1024")
        try client.subscribe("fd/#", qos: .atLeastOnce)
        #expect(client.socketDescriptor > 1024, "socket fd \(client.socketDescriptor)")
        try client.publish(MQTTMessage(topic: "fd/one", string: "1"))
        #expect(await recorder.waitMessage(on: "fd/one")?.string == "1")

        var restarts = 0
        repeat {
            restarts += 1
            broker.stop()
            #expect(await waitUntil { recorder.disconnectReasons.count == restarts })
            hog.topUp(above: 1100)
            try broker.start()
            #expect(await recorder.waitConnected(count: restarts + 1))
        } while client.socketDescriptor <= 1024 && restarts < 10
        #expect(client.socketDescriptor > 1024, "socket fd after reconnect \(client.socketDescriptor)")
        try client.publish(MQTTMessage(topic: "fd/two", string: "2"))
        #expect(await recorder.waitMessage(on: "fd/two")?.string == "2")
        await client.shutdown(finalMessage: nil)
    }
}
