import CastProtocol
import Foundation
import Synchronization
import NIOCore

/// One message a simulated device received, as it arrived.
public struct RecordedMessage: Sendable, Hashable {
    /// Order of arrival on this device, from 1.
    public var sequence: Int
    /// Which TCP connection it came on (from 1, counting accepted connections).
    public var connection: Int
    public var namespace: String
    public var sourceID: String
    public var destinationID: String
    /// The JSON `type`, nil for binary or non-JSON payloads.
    public var type: String?
    public var requestId: Int?
    public var payload: CastPayload
    /// False when the device did not act on it (no virtual connection, unknown endpoint, silenced).
    public var delivered: Bool
    public var date: Date
    /// When it was recorded, in CLOCK_MONOTONIC nanoseconds (the same clock as Python's
    /// `time.monotonic_ns()`), so another process on the host can measure latency against it.
    public var monotonicNanoseconds: UInt64

    /// The payload parsed as JSON, nil for binary or non-JSON payloads.
    public var json: JSONValue? {
        guard let text = payload.text else { return nil }
        return try? CastJSON.decode(JSONValue.self, from: text)
    }
}

/// Counters of one device since it started (restarts do not reset them).
public struct SimulatorCounters: Sendable, Hashable, Codable {
    public var connectionsAccepted = 0
    public var messagesReceived = 0
    public var launches = 0
    public var loads = 0
    public var restarts = 0
    /// Hostile messages sent (`sendHostile`, hostile mode, armed broken replies).
    public var hostileMessagesSent = 0
    /// `GET /setup/eureka_info` requests answered (any status, both transports).
    public var eurekaRequests = 0
    /// Messages the device would have sent while silenced (its own PINGs, broadcasts): how far
    /// a silence has gone in the device's own time, for a test that must know it lasted.
    public var withheldWhileSilenced = 0
    /// Sender (Cast) connections open now, the most ever open at once, and the longest time in
    /// milliseconds that two or more were open at once (an overlap still open is not counted
    /// until it ends): what the tests of several bridge instances read to check that one device
    /// is never held by two of them for longer than a handover.
    public var openConnections = 0
    public var maxOpenConnections = 0
    public var longestOverlapMilliseconds = 0
    public init() {}
}

/// Thread-safe store of what a device received; bounded (oldest entries go first).
final class Recorder: Sendable {
    private struct State {
        var messages: [RecordedMessage] = []
        var counters = SimulatorCounters()
        var sequence = 0
    }
    private let state = Mutex(State())
    let limit: Int

    init(limit: Int = 50_000) { self.limit = limit }

    func record(_ message: CastMessage, connection: Int, delivered: Bool) {
        let header = CastPayloadHeader.parse(message.payload)
        let monotonic = NIODeadline.now().uptimeNanoseconds
        state.withLock { s in
            s.sequence += 1
            s.counters.messagesReceived += 1
            s.messages.append(RecordedMessage(
                sequence: s.sequence, connection: connection, namespace: message.namespace,
                sourceID: message.sourceID, destinationID: message.destinationID, type: header?.type,
                requestId: header?.requestId, payload: message.payload, delivered: delivered, date: Date(),
                monotonicNanoseconds: monotonic))
            if s.messages.count > limit { s.messages.removeFirst(s.messages.count - limit) }
        }
    }

    func count(_ update: @Sendable (inout SimulatorCounters) -> Void) {
        state.withLock { update(&$0.counters) }
    }

    var counters: SimulatorCounters { state.withLock { $0.counters } }

    func messages(namespace: String?, type: String?) -> [RecordedMessage] {
        state.withLock { s in
            s.messages.filter { m in
                (namespace == nil || m.namespace == namespace) && (type == nil || m.type == type)
            }
        }
    }

    func clear() { state.withLock { $0.messages.removeAll() } }
}
