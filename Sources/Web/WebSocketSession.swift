import Foundation
import HummingbirdWebSocket
import NIOCore

/// One open page: a snapshot first, then what changed (at most one update per `interval`, so a
/// device that changes fast costs a few messages a second), the bridge's counters every two
/// seconds, and the answers to its commands. Reading, writing and the stats timer are three
/// child tasks of one group; the page closing ends all three.
struct WebSocketSession {
    /// Largest message a page may send (a command with its body).
    static let maxMessage = 65_536
    /// Shortest time between two updates to one page.
    static let interval: Duration = .milliseconds(200)
    static let statsInterval: Duration = .seconds(2)

    let server: WebServer

    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async {
        let hub = server.hub
        let (client, wake) = hub.connect()
        server.metrics.webClients.record(hub.clientCount)
        defer {
            hub.disconnect(client)
            server.metrics.webClients.record(hub.clientCount)
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await read(inbound, client: client, outbound: outbound) }
            group.addTask { await write(outbound, client: client, wake: wake) }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: Self.statsInterval)
                    hub.wake(client)
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Commands from the page; anything else it sends is ignored.
    func read(_ inbound: WebSocketInboundStream, client: Int, outbound: WebSocketOutboundWriter) async {
        var messages = inbound.messages(maxSize: Self.maxMessage).makeAsyncIterator()
        while let message = try? await messages.next() {
            guard case .text(let text) = message,
                  let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                  object["type"] as? String == "command" else { continue }
            switch WebHub.parseCommand(object) {
            case .success(let request):
                if case .failure(let rejection) = server.hub.send(request, from: client) {
                    server.hub.answer(client, WebHub.rejection(ref: request.ref, name: request.name, rejection))
                }
            case .failure(let rejection):
                let ref = (object["ref"] as? String).map { String($0.prefix(64)) } ?? ""
                let name = (object["command"] as? String).map { String($0.prefix(64)) } ?? ""
                server.hub.answer(client, WebHub.rejection(ref: ref, name: name, rejection))
            }
        }
    }

    func write(_ outbound: WebSocketOutboundWriter, client: Int, wake: AsyncStream<Void>) async {
        let hub = server.hub
        var version: UInt64 = 0
        var logs: UInt64 = 0
        var lastStats = ContinuousClock.now - Self.statsInterval
        do {
            let snapshot = hub.snapshot(meta: server.meta)
            version = snapshot.version
            try await send(snapshot.message, outbound)
            for await _ in wake {
                let update = hub.update(client: client, after: version)
                version = update.version
                if update.resync {
                    let snapshot = hub.snapshot(meta: server.meta)
                    version = snapshot.version
                    try await send(snapshot.message, outbound)
                } else if let message = update.message {
                    try await send(message, outbound)
                }
                let tail = hub.logTail.lines(after: logs)
                if !tail.lines.isEmpty {
                    logs = tail.latest
                    try await send(Self.logMessage(tail.lines.map(\.text)), outbound)
                }
                if ContinuousClock.now - lastStats >= Self.statsInterval - .milliseconds(50) {
                    lastStats = .now
                    try await send(server.statsMessage(), outbound)
                }
                try await Task.sleep(for: Self.interval)
            }
        } catch {
            // The page went away (or the server is stopping): the group ends the session.
        }
    }

    func send(_ bytes: [UInt8], _ outbound: WebSocketOutboundWriter) async throws {
        try await outbound.writeTextMessage(String(decoding: bytes, as: UTF8.self))
    }

    static func logMessage(_ lines: [String]) -> [UInt8] {
        var json = JSONText(capacity: 256 * lines.count)
        json.raw(#"{"type":"log","lines":["#)
        for (n, line) in lines.enumerated() {
            if n > 0 { json.raw(",") }
            json.string(line)
        }
        json.raw("]}")
        return json.bytes
    }
}

extension WebHub {
    /// Wakes one page (its stats timer).
    func wake(_ client: Int) {
        let wake = state.withLock { $0.clients[client]?.wake }
        wake?.yield()
    }

    /// A message for one page only (a refused command), sent with its next update.
    func answer(_ client: Int, _ response: [UInt8]) {
        let wake = state.withLock { s -> AsyncStream<Void>.Continuation? in
            s.clients[client]?.direct.append(response)
            return s.clients[client]?.wake
        }
        wake?.yield()
    }
}
