import Logging
import Testing
import TestSupport

@testable import MQTT

/// libmosquitto formats a line for every packet while a log callback is set: the client reads
/// its log while connecting (the error lines complete our messages; `BrokerTests` checks one
/// from a TLS failure) and stops once the broker has accepted it, unless it logs at trace.
@Suite(.serialized) struct LibraryLogTests {
    private func client(_ url: String, level: Logger.Level) throws -> (MosquittoClient, EventRecorder) {
        var configuration = MQTTConfiguration(url: url, clientID: uniqueID("log"))
        configuration.reconnectInitial = .milliseconds(200)
        configuration.reconnectMax = .seconds(1)
        var logger = Logger(label: "mqtt-log-test")
        logger.logLevel = level
        let client = try MosquittoClient(configuration: configuration, logger: logger)
        let recorder = EventRecorder(client)
        try client.start()
        return (client, recorder)
    }

    @Test(.timeLimit(.minutes(1)))
    func readWhileConnectingAndDroppedOnceAccepted() async throws {
        let broker = try MosquittoBroker(start: false)
        defer { broker.stop() }
        let (client, recorder) = try client(broker.url, level: .info)
        // No broker yet: the attempts read libmosquitto's log.
        #expect(await waitUntil { client.readsLibraryLog })
        try broker.start()
        #expect(await waitUntil { recorder.connectedCount == 1 })
        #expect(!client.readsLibraryLog)
        // Lost and reconnecting: read again while connecting, dropped once back.
        broker.stop()
        #expect(await waitUntil { recorder.disconnectReasons.count >= 1 })
        #expect(await waitUntil { client.readsLibraryLog })
        try broker.start()
        #expect(await waitUntil { recorder.connectedCount == 2 })
        #expect(!client.readsLibraryLog)
        await client.shutdown(finalMessage: nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func keptAtTrace() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, recorder) = try client(broker.url, level: .trace)
        #expect(await waitUntil { recorder.connectedCount == 1 })
        #expect(client.readsLibraryLog)
        await client.shutdown(finalMessage: nil)
    }
}
