import Foundation
import MQTT
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The client against a real mosquitto on 127.0.0.1. Serialized: the descriptor test changes the
/// process's descriptor table, and the reconnect tests depend on timing.
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
        #expect(await waitUntil(timeout: .seconds(30)) { recorder.isFinished })
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
        let connected = await waitUntil(timeout: .seconds(10)) { child.output.contains("connected") }
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
        #expect(await waitUntil(timeout: .seconds(30)) { recorder.isFinished })
        #expect(recorder.disconnectReasons == ["client shut down"])
        #expect(throws: MQTTError.self) { try client.start() }
        #expect { try client.publish(MQTTMessage(topic: "bye/state", string: "late")) } throws: {
            ($0 as? MQTTError)?.code == .shutDown
        }

        // Give a (wrongly) published will time to arrive, then check the retained value.
        try await Task.sleep(for: .milliseconds(300))
        let (late, lateEvents) = try startClient(broker.url)
        try late.subscribe("bye/state", qos: .atLeastOnce)
        let retained = await lateEvents.waitMessage(on: "bye/state")
        #expect(retained?.string == "offline")
        try await Task.sleep(for: .milliseconds(200))
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
        #expect(await waitUntil(timeout: .seconds(10)) { recorder.disconnectReasons.count == 1 })
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
        #expect(await waitUntil(timeout: .seconds(30)) { recorder.disconnectReasons.count == 1 })
        try broker.start()

        let (publisher, publisherEvents) = try startClient(broker.url) { $0.cleanStart = true }
        #expect(await publisherEvents.waitConnected())
        try publisher.publish(MQTTMessage(topic: "away/cmd", string: "while away", qos: .atLeastOnce))
        await publisher.shutdown(finalMessage: nil)  // returns once the broker acknowledged it
        #expect(recorder.connectedCount == 1, "the client reconnected before the message was published")
        #expect(client.reconnectCount == 0)

        #expect(await recorder.waitConnected(count: 2, timeout: .seconds(10)))
        #expect(recorder.events.contains(.connected(sessionPresent: true)))
        let message = await recorder.waitMessage(on: "away/cmd")
        #expect(message?.string == "while away")
        #expect(message?.qos == .atLeastOnce)
        #expect(client.reconnectCount == 1)
        await client.shutdown(finalMessage: nil)
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
    func tlsWithGeneratedCAAndInsecureMode() async throws {
        let broker = try MosquittoBroker(.init(tls: true))
        defer { broker.stop() }
        let (client, recorder) = try startClient(broker.tlsURL) { $0.caFile = broker.caFile }
        try client.subscribe("tls/#", qos: .atLeastOnce)
        #expect(await recorder.waitConnected(), "TLS connect failed: \(String(describing: client.lastError))")
        try client.publish(MQTTMessage(topic: "tls/x", string: "secret"))
        #expect(await recorder.waitMessage(on: "tls/x")?.string == "secret")

        // insecure: no CA at all, so only skipping verification lets this connect.
        let (insecure, insecureEvents) = try startClient(broker.tlsURL) { $0.insecure = true }
        #expect(await insecureEvents.waitConnected(), "insecure TLS failed: \(String(describing: insecure.lastError))")

        // Both reconnect over TLS after a broker restart.
        broker.stop()
        try broker.start()
        #expect(await recorder.waitConnected(count: 2), "TLS reconnect failed: \(String(describing: client.lastError))")
        #expect(
            await insecureEvents.waitConnected(count: 2),
            "insecure TLS reconnect failed: \(String(describing: insecure.lastError))")
        try client.publish(MQTTMessage(topic: "tls/y", string: "again"))
        #expect(await recorder.waitMessage(on: "tls/y")?.string == "again")
        await client.shutdown(finalMessage: nil)
        await insecure.shutdown(finalMessage: nil)

        // Without the CA the broker's certificate is not trusted.
        let (untrusting, untrustingEvents) = try startClient(broker.tlsURL)
        #expect(await untrustingEvents.waitConnected(timeout: .seconds(2)) == false)
        #expect(untrusting.lastError?.code == .tls, "\(String(describing: untrusting.lastError))")
        #expect(untrusting.lastError?.message.contains("certificate verify failed") == true, "\(String(describing: untrusting.lastError))")
        await untrusting.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func wrongPasswordGivesAClearErrorAndBacksOff() async throws {
        let broker = try MosquittoBroker(.init(users: ["bridge": "right-password"]))
        defer { broker.stop() }
        for version in MQTTProtocolVersion.allCases {
            let (client, recorder) = try startClient(broker.url) {
                $0.protocolVersion = version
                $0.username = "bridge"
                $0.password = "wrong-password"
                $0.reconnectInitial = .milliseconds(200)
                $0.reconnectMax = .seconds(5)
            }
            #expect(await waitUntil(timeout: .seconds(30)) { !recorder.disconnectReasons.isEmpty })
            let reason = recorder.disconnectReasons.first?.lowercased() ?? ""
            #expect(
                reason.contains("not authori") || reason.contains("bad user name or password"),
                "MQTT \(version.rawValue): \(reason)")
            #expect(client.lastError?.code == .notAuthorized)
            #expect(!client.isConnected)
            // Backoff, no spinning: 200 ms doubling gives at most 4 attempts in 2 s.
            try await Task.sleep(for: .seconds(2))
            #expect(recorder.disconnectReasons.count <= 5, "\(recorder.disconnectReasons.count) attempts")
            #expect(recorder.connectedCount == 0)
            await client.shutdown(finalMessage: nil)
        }

        // The right password, read from a password file, works.
        let passwordFile = broker.directory + "/client-password"
        try "right-password\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let (client, recorder) = try startClient(broker.url) {
            $0.username = "bridge"
            $0.passwordFile = passwordFile
        }
        #expect(await recorder.waitConnected())
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
        let received = await recorder.waitMessage(on: "bin/large", timeout: .seconds(20))
        #expect(received?.payload.count == large.count)
        #expect(received?.payload == large)
        #expect(await recorder.waitMessage(on: "bin/empty")?.payload == [])
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
        for _ in 0..<5 {
            hog.topUp(above: 1100)
            let (candidate, candidateRecorder) = try startClient(broker.url)
            _ = await candidateRecorder.waitConnected()
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
            #expect(await waitUntil(timeout: .seconds(10)) { recorder.disconnectReasons.count == restarts })
            hog.topUp(above: 1100)
            try broker.start()
            #expect(await recorder.waitConnected(count: restarts + 1))
        } while client.socketDescriptor <= 1024 && restarts < 3
        #expect(client.socketDescriptor > 1024, "socket fd after reconnect \(client.socketDescriptor)")
        try client.publish(MQTTMessage(topic: "fd/two", string: "2"))
        #expect(await recorder.waitMessage(on: "fd/two")?.string == "2")
        await client.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func keepaliveKeepsAnIdleConnectionAndDetectsAFrozenBroker() async throws {
        let broker = try MosquittoBroker()
        defer {
            broker.signal(SIGCONT)
            broker.stop()
        }
        let (client, recorder) = try startClient(broker.url) { $0.keepalive = 5 }
        #expect(await recorder.waitConnected())
        // Idle for longer than the keepalive: our loop must send PINGREQ or the broker drops us
        // after 1.5 x keepalive.
        try await Task.sleep(for: .seconds(8))
        #expect(recorder.disconnectReasons.isEmpty)
        #expect(client.isConnected)

        // A frozen broker answers nothing: PINGRESP is late and the client gives up the connection.
        broker.signal(SIGSTOP)
        let clock = ContinuousClock()
        let frozenAt = clock.now
        #expect(await waitUntil(timeout: .seconds(20)) { !recorder.disconnectReasons.isEmpty })
        let detectedAfter = clock.now - frozenAt
        print("keepalive 5 s: frozen broker detected after \(detectedAfter)")
        #expect(detectedAfter < .seconds(15))
        broker.signal(SIGCONT)
        #expect(await recorder.waitConnected(count: 2, timeout: .seconds(15)))
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
            var received = false
            for _ in 0..<20_000 where !received {
                received = recorder.messages.last?.topic == topic
                if !received { try await Task.sleep(for: .microseconds(50)) }
            }
            #expect(received, "publication \(index) did not come back")
        }
        await client.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)), arguments: MQTTProtocolVersion.allCases)
    func connectingToASilentHostIsBoundedAndShutdownStaysPrompt(version: MQTTProtocolVersion) async throws {
        let silent = try SilentListener()
        let (client, recorder) = try startClient("mqtt://127.0.0.1:\(silent.port)") {
            $0.protocolVersion = version
            $0.keepalive = 5
        }
        // The attempt gives up after about `keepalive` seconds instead of the kernel's ~2 minutes.
        #expect(await waitUntil(timeout: .seconds(30)) { client.lastError != nil })
        print("MQTT \(version.rawValue), silent host: \(String(describing: client.lastError))")
        #expect([.system, .connectionLost].contains(client.lastError?.code), "\(String(describing: client.lastError))")
        #expect(client.lastError?.message.contains("Unknown error") == false)
        #expect(recorder.connectedCount == 0)
        // Shut down in the middle of the next attempt: prompt, not after the 5 s safety timeout.
        try await Task.sleep(for: .milliseconds(700))
        let clock = ContinuousClock()
        let start = clock.now
        await client.shutdown(finalMessage: nil)
        // (Bounded below the 5 s safety timeout with room for a busy machine.)
        #expect(clock.now - start < .seconds(4), "shutdown took \(clock.now - start)")
        #expect(await waitUntil(timeout: .seconds(30)) { recorder.isFinished })
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
        _ = await waitUntil { recorder.messages.contains { $0.string == "kept again" } }
        #expect(recorder.messages.map(\.topic) == ["un/b", "un/b"])
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
        #expect(await waitUntil(timeout: .seconds(30)) {
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
