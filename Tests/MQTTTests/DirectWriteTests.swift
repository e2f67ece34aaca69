import Foundation
import MQTT
import Testing
import TestSupport

/// The publishing thread writes its packets itself when the network thread is idle (IOMutex),
/// and events can go to a handler on the network thread instead of the stream.
@Suite(.serialized) struct DirectWriteTests {
    /// Events recorded by an `onEvent` handler.
    final class HandlerEvents: @unchecked Sendable {
        private let lock = NSLock()
        private var recorded: [MQTTEvent] = []
        func append(_ event: MQTTEvent) { lock.withLock { recorded.append(event) } }
        var events: [MQTTEvent] { lock.withLock { recorded } }
        var messages: [MQTTMessage] { events.compactMap { if case .message(let m) = $0 { m } else { nil } } }
        var connects: Int { events.filter { if case .connected = $0 { true } else { false } }.count }
        var disconnects: Int { events.filter { if case .disconnected = $0 { true } else { false } }.count }
    }

    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        func set() { lock.withLock { value = true } }
        var isSet: Bool { lock.withLock { value } }
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func add(_ n: Int) { lock.withLock { value += n } }
        var total: Int { lock.withLock { value } }
    }

    private func handlerClient(_ url: String) throws -> (MosquittoClient, HandlerEvents) {
        var configuration = MQTTConfiguration(url: url, clientID: uniqueID("handler"))
        configuration.reconnectInitial = .milliseconds(200)
        configuration.reconnectMax = .seconds(1)
        let events = HandlerEvents()
        let client = try MosquittoClient(configuration: configuration, logger: testLogger, onEvent: { events.append($0) })
        try client.start()
        return (client, events)
    }

    @Test(.timeLimit(.minutes(1)))
    func onEventHandlerGetsEveryEventAndTheStreamStaysEmpty() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, events) = try handlerClient(broker.url)
        try client.subscribe("handler/#", qos: .atLeastOnce)
        #expect(await waitUntil { events.connects == 1 })
        // Published by this client (written by this task's thread) and delivered back.
        var received = false
        for i in 0..<20 where !received {
            try client.publish(MQTTMessage(topic: "handler/\(i)", string: "m\(i)", qos: .atLeastOnce))
            received = await waitUntil(timeout: .milliseconds(500)) { !events.messages.isEmpty }
        }
        #expect(received)
        for i in 0..<200 {
            try client.publish(MQTTMessage(topic: "handler/burst", string: "\(i)", qos: .atLeastOnce))
        }
        #expect(await waitUntil {
            events.messages.filter { $0.topic == "handler/burst" }.count == 200
        })
        // In order, each once.
        #expect(events.messages.filter { $0.topic == "handler/burst" }.map(\.string) == (0..<200).map { "\($0)" })
        await client.shutdown(finalMessage: nil)
        // The stream was never fed: it finishes empty.
        var streamed = 0
        for await _ in client.events { streamed += 1 }
        #expect(streamed == 0)
    }

    /// Four tasks publish as fast as they can while the broker goes away and comes back: no
    /// crash or hang, the client reconnects, and what is published afterwards arrives.
    @Test(.timeLimit(.minutes(1)))
    func publishersKeepGoingThroughABrokerRestart() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (client, events) = try handlerClient(broker.url)
        try client.subscribe("after/#", qos: .atLeastOnce)
        #expect(await waitUntil { events.connects == 1 })

        let stop = Flag()
        let published = Counter()
        let progress = Counter()
        let publishers = (0..<4).map { worker in
            Task.detached {
                var n = 0
                while !stop.isSet, n < 200_000 {
                    n += 1
                    // QoS 0 is refused while the broker is away; that is expected here.
                    try? client.publish(MQTTMessage(topic: "stress/\(worker)", string: "\(n)", qos: n % 2 == 0 ? .atLeastOnce : .atMostOnce))
                    if n % 64 == 0 {
                        progress.add(64)
                        await Task.yield()
                    }
                }
                published.add(n)
            }
        }
        // The publishers are going (while connected, while away, and once back) before each step
        // (or have all reached their 200 000).
        func morePublished() async -> Bool {
            let mark = progress.total
            return await waitUntil { progress.total >= min(mark + 4096, 4 * 200_000) }
        }
        #expect(await morePublished())
        broker.stop()
        #expect(await waitUntil { events.disconnects >= 1 })
        #expect(await morePublished())
        try broker.start()
        #expect(await waitUntil { events.connects >= 2 })
        #expect(await morePublished())
        stop.set()
        for publisher in publishers { await publisher.value }
        #expect(published.total > 0)

        // The connection still works both ways: a publication after everything queued while the
        // broker was away comes back (behind that queue, so with the generous bound).
        try client.publish(MQTTMessage(topic: "after/0", string: "ok", qos: .atLeastOnce))
        #expect(await waitUntil { events.messages.contains { $0.topic.hasPrefix("after/") } })
        #expect(client.isConnected)
        await client.shutdown(finalMessage: nil)
    }
}
