import Foundation
import MQTT
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// TLS and authentication, and a broker that stops answering or a host that never does.
extension BrokerTests {
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
        #expect(await waitUntil { untrusting.lastError != nil }, "the untrusting client never failed")
        #expect(untrusting.lastError?.code == .tls, "\(String(describing: untrusting.lastError))")
        #expect(untrustingEvents.connectedCount == 0)
        #expect(untrusting.lastError?.message.contains("certificate verify failed") == true, "\(String(describing: untrusting.lastError))")
        await untrusting.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func wrongPasswordGivesAClearErrorAndBacksOff() async throws {
        let broker = try MosquittoBroker(.init(users: ["bridge": "right-password"]))
        defer { broker.stop() }
        for version in MQTTProtocolVersion.allCases {
            let (logger, log) = RecordingLog.logger()
            let (client, recorder) = try startClient(broker.url, logger: logger) {
                $0.protocolVersion = version
                $0.username = "bridge"
                $0.password = "wrong-password"
                $0.reconnectInitial = .milliseconds(200)
                $0.reconnectMax = .seconds(5)
            }
            #expect(await waitUntil { !recorder.disconnectReasons.isEmpty })
            let reason = recorder.disconnectReasons.first?.lowercased() ?? ""
            #expect(
                reason.contains("not authori") || reason.contains("bad user name or password"),
                "MQTT \(version.rawValue): \(reason)")
            #expect(client.lastError?.code == .notAuthorized)
            #expect(!client.isConnected)
            // Backoff, no spinning: each refused attempt is followed by a wait twice as long as
            // the one before, as the client says when it gives the attempt up.
            #expect(await waitUntil { log.retryDelays.count >= 3 }, "\(log.messages)")
            #expect(Array(log.retryDelays.prefix(3)) == [Duration.milliseconds(200), .milliseconds(400), .milliseconds(800)].map { "\($0)" },
                    "\(log.messages)")
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

    @Test(.timeLimit(.minutes(2)))
    func keepaliveKeepsAnIdleConnectionAndDetectsAFrozenBroker() async throws {
        let broker = try MosquittoBroker()
        defer {
            broker.signal(SIGCONT)
            broker.stop()
        }
        // At trace the client keeps reading libmosquitto's packet log, which names each PINGRESP.
        let (logger, log) = RecordingLog.logger(level: .trace)
        let (client, recorder) = try startClient(broker.url, logger: logger) { $0.keepalive = 5 }
        #expect(await recorder.waitConnected())
        // Idle for longer than 1.5 x keepalive, when the broker drops a client it has not heard
        // from: our loop sends PINGREQ and the broker answers, twice, and we stay connected.
        #expect(await waitUntil { log.count(containing: "PINGRESP") >= 2 }, "\(log.messages.suffix(20))")
        #expect(recorder.disconnectReasons.isEmpty)
        #expect(client.isConnected)

        // A frozen broker answers nothing: PINGRESP is late and the client gives up the connection.
        broker.signal(SIGSTOP)
        let clock = ContinuousClock()
        let frozenAt = clock.now
        #expect(await waitUntil { !recorder.disconnectReasons.isEmpty })
        print("keepalive 5 s: frozen broker detected after \(clock.now - frozenAt): \(recorder.disconnectReasons)")
        broker.signal(SIGCONT)
        #expect(await recorder.waitConnected(count: 2))
        await client.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)), arguments: MQTTProtocolVersion.allCases)
    func connectingToASilentHostIsBoundedAndShutdownStaysPrompt(version: MQTTProtocolVersion) async throws {
        let silent = try SilentListener()
        let (logger, log) = RecordingLog.logger()
        let (client, recorder) = try startClient("mqtt://127.0.0.1:\(silent.port)", logger: logger) {
            $0.protocolVersion = version
            $0.keepalive = 5
        }
        // The attempt gives up after about `keepalive` seconds instead of the kernel's ~2 minutes.
        #expect(await waitUntil { client.lastError != nil })
        print("MQTT \(version.rawValue), silent host: \(String(describing: client.lastError))")
        #expect([.system, .connectionLost].contains(client.lastError?.code), "\(String(describing: client.lastError))")
        #expect(client.lastError?.message.contains("Unknown error") == false)
        #expect(recorder.connectedCount == 0)
        // Shut down in the middle of the next attempt: the network thread stops, rather than being
        // left behind at the 5 s safety timeout, which the client would log. The attempt starts
        // 200 ms after the failure and lasts up to the keepalive (the silent host never answers),
        // so once the client counts a second attempt, it is under way.
        let attempts = client.connectAttempts
        #expect(await waitUntil { client.connectAttempts > attempts })
        let clock = ContinuousClock()
        let start = clock.now
        await client.shutdown(finalMessage: nil)
        print("MQTT \(version.rawValue), silent host: shutdown during an attempt took \(clock.now - start)")
        #expect(log.count(containing: "did not stop") == 0, "\(log.messages)")
        #expect(await waitUntil { recorder.isFinished })
    }
}
