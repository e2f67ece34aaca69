import CastProtocol
import Foundation
import NIOCore

/// What armed broken replies send before the real reply (`armHostileReplies`).
public enum HostileReplyMode: String, Sendable, CaseIterable {
    /// The request's own id with broken bodies (the sender must answer its command anyway).
    case brokenBody = "broken_body"
    /// Error replies with ids that are almost the request's (`7.5`, `"7"`, `-7`, `7 + 2^32`, …):
    /// they must complete nothing, so the real reply that follows is the answer.
    case nearMiss = "near_miss"
}

// A hostile device: sends mutated versions of its real messages to its senders (see
// `HostileGenerator` for the classes). Bounded: one round of a class is a fixed list of frames.
extension SimulatedDevice {
    /// The messages this device would send now, as the generator's input.
    public func hostileContext(seed: UInt64 = 1) async -> HostileContext? {
        try? await eventLoop.submit { self.makeHostileContext(seed: seed) }.get()
    }

    /// Sends one round of each class in `classes` to every connected sender now. Returns the
    /// number of frames written.
    @discardableResult
    public func sendHostile(_ classes: [HostileClass], seed: UInt64 = 1) async -> Int {
        (try? await eventLoop.submit { () -> Int in
            let messages = HostileGenerator(self.makeHostileContext(seed: seed)).messages(classes)
            return self.writeHostile(messages)
        }.get()) ?? 0
    }

    /// Sends `messages` (e.g. one chosen from `HostileGenerator`) to every connected sender.
    @discardableResult
    public func sendHostile(messages: [HostileMessage]) async -> Int {
        (try? await eventLoop.submit { self.writeHostile(messages) }.get()) ?? 0
    }

    /// Hostile mode: every `interval`, one round of the next class of `classes` (in turn, the
    /// seed advancing each round) until `behave()`.
    public func startHostile(_ classes: [HostileClass], interval: TimeAmount, seed: UInt64 = 1) async {
        guard !classes.isEmpty else { return }
        let interval = max(interval, .milliseconds(10))
        try? await eventLoop.submit {
            self.hostileTask?.cancel()
            self.hostileRound = 0
            self.hostileTask = self.eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: interval) { _ in
                let round = self.hostileRound
                self.hostileRound += 1
                let hostileClass = classes[round % classes.count]
                let messages = HostileGenerator(self.makeHostileContext(seed: seed &+ UInt64(round))).messages(hostileClass)
                let sent = self.writeHostile(messages)
                self.logger.debug("hostile round \(round): \(hostileClass.rawValue), \(sent) frames")
            }
        }.get()
    }

    /// The next `count` requests (messages with a requestId > 0 on any namespace but the
    /// transport ones) get `mode` replies at once, before the device's real reply.
    public func armHostileReplies(_ mode: HostileReplyMode, count: Int) async {
        try? await eventLoop.submit {
            self.hostileReplyMode = mode
            self.hostileReplyBudget = max(0, min(count, 10_000))
        }.get()
    }

    /// Ends hostile mode and disarms broken replies: the device behaves again.
    public func behave() async {
        try? await eventLoop.submit {
            self.hostileTask?.cancel()
            self.hostileTask = nil
            self.hostileReplyBudget = 0
            self.replay = ReplayState()
        }.get()
    }

    /// True while hostile mode runs.
    public func isHostile() async -> Bool {
        (try? await eventLoop.submit { self.hostileTask != nil }.get()) ?? false
    }

    // MARK: - On the event loop

    func makeHostileContext(seed: UInt64) -> HostileContext {
        eventLoop.assertInEventLoop()
        let now = configuration.clock.now()
        let mediaJSON = media.map { MediaResponse.status(requestId: 0, [$0.status(at: now)]).json() }
        let pending = connections.values.sorted { $0.number < $1.number }.flatMap { connection in
            connection.lastRequests.keys.sorted().compactMap { connection.lastRequests[$0] }
        }
        return HostileContext(
            receiverStatus: receiverStatusJSON(requestId: 0), mediaStatus: mediaJSON,
            appTransport: app?.transportId ?? CastEndpoint.receiver,
            mediaSessionId: media?.mediaSessionId ?? max(1, mediaSessionCounter),
            pendingRequests: pending, seed: seed)
    }

    /// Remembers the request (for `broken_replies`) and sends armed broken replies to it.
    func noteRequest(_ message: CastMessage, on connection: SenderConnection) {
        guard !CastNamespace.isReserved(message.namespace),
              let header = CastPayloadHeader.parse(message.payload), let requestId = header.requestId, requestId > 0
        else { return }
        let request = HostileRequest(namespace: message.namespace, endpoint: message.destinationID,
                                     sourceID: message.sourceID, requestId: requestId, type: header.type ?? "")
        connection.lastRequests[message.namespace + "\u{0}" + message.sourceID] = request
        guard hostileReplyBudget > 0 else { return }
        hostileReplyBudget -= 1
        let replies = hostileReplyMode == .brokenBody
            ? HostileGenerator.brokenBodyReplies(to: request) : HostileGenerator.nearMissReplies(to: request)
        let sent = write(replies, on: connection)
        recorder.count { [sent] in $0.hostileMessagesSent += sent }
    }

    /// Writes every message to every connection; returns the number of frames.
    func writeHostile(_ messages: [HostileMessage]) -> Int {
        eventLoop.assertInEventLoop()
        var sent = 0
        for connection in connections.values.sorted(by: { $0.number < $1.number }) {
            sent += write(messages, on: connection)
        }
        recorder.count { [sent] in $0.hostileMessagesSent += sent }
        return sent
    }

    private func write(_ messages: [HostileMessage], on connection: SenderConnection) -> Int {
        guard !silenced, !shutDown, connection.channel.isActive else { return 0 }
        var sent = 0
        for message in messages {
            let destinations: [String]
            switch message.destination {
            case .broadcast:
                destinations = [CastEndpoint.broadcast]
            case .senders:
                let senders = connection.sources(connectedTo: CastEndpoint.receiver)
                destinations = senders.isEmpty ? [CastEndpoint.sender] : senders
            case .id(let id):
                destinations = connection.virtualConnections[id] == nil ? [] : [id]
            }
            for destination in destinations {
                connection.injector.writeRaw(message.frame(destinationID: destination))
                sent += 1
            }
        }
        return sent
    }
}
