import Synchronization

/// Retained publications handed over in bulk — everything the bridge republishes after a
/// (re)connect, ~60 000 of them at 10 000 devices — held here and fed to libmosquitto a window at
/// a time as they complete (the broker's PUBACK; for QoS 0, the write).
///
/// libmosquitto sends in the order it was given. Handed over at once, the republish after a
/// broker restart queued ~8 s of messages in front of everything published after it: a command's
/// response, a device's new state. Held here, what is published meanwhile waits behind at most
/// `window` of them. A publication on a held topic (newer by definition: the state it carries is
/// current) replaces the held one — a clear as well — so a stale copy can never land after it.
///
/// Thread-safe: the consumer adds and publishes; libmosquitto's completions (on its network
/// thread, or on the consumer's when it writes directly) make room and feed the next ones.
final class BulkPublisher: Sendable {
    /// Bulk publications in libmosquitto's hands at once: enough to keep the broker's receive
    /// window (20 by default) full, few enough that one queued behind them waits little.
    static let window = 64

    private struct State {
        /// Topics in the order they were added; a topic no longer in `held` is skipped.
        var order: [String] = []
        var head = 0
        var held: [String: MQTTMessage] = [:]
        /// Message ids handed to libmosquitto and not yet completed.
        var outstanding: Set<Int32> = []
        /// Hand-overs under way (their message id is not known yet).
        var handing = 0
        /// Completions that arrived while a hand-over was under way, for ids not yet recorded.
        var early: Set<Int32> = []

        mutating func next(window: Int) -> MQTTMessage? {
            guard outstanding.count + handing < window else { return nil }
            while head < order.count {
                let topic = order[head]
                head += 1
                if let message = held.removeValue(forKey: topic) {
                    handing += 1
                    return message
                }
            }
            order.removeAll(keepingCapacity: false)
            head = 0
            return nil
        }
    }

    private let state = Mutex(State())
    /// Held publications (read without the lock on every direct publish), and those handed over
    /// and not yet completed (read without the lock on every completion).
    private let heldCount = Atomic<Int>(0)
    private let inFlight = Atomic<Int>(0)
    private let window: Int

    init(window: Int = BulkPublisher.window) {
        self.window = window
    }

    /// Publications held now, and handed over but not completed.
    var counts: (held: Int, outstanding: Int) { state.withLock { ($0.held.count, $0.outstanding.count + $0.handing) } }

    /// Holds `message`, replacing a held one of the same topic.
    func add(_ message: MQTTMessage) {
        state.withLock { s in
            if s.held.updateValue(message, forKey: message.topic) == nil { s.order.append(message.topic) }
            heldCount.store(s.held.count, ordering: .relaxed)
        }
    }

    /// A publication on `topic` is being handed over directly: a held one is stale.
    func supersede(_ topic: String) {
        guard heldCount.load(ordering: .relaxed) > 0 else { return }
        state.withLock { s in
            if s.held.removeValue(forKey: topic) != nil { heldCount.store(s.held.count, ordering: .relaxed) }
        }
    }

    /// Hands held publications to `publish` (which returns libmosquitto's message id, or nil when
    /// the message could not be handed over) while the window has room.
    func pump(_ publish: (MQTTMessage) -> Int32?) {
        while let message = state.withLock({ s -> MQTTMessage? in
            let next = s.next(window: window)
            heldCount.store(s.held.count, ordering: .relaxed)
            inFlight.store(s.outstanding.count + s.handing, ordering: .relaxed)
            return next
        }) {
            let mid = publish(message)
            state.withLock { s in
                s.handing -= 1
                if let mid, s.early.remove(mid) == nil { s.outstanding.insert(mid) }
                if s.handing == 0 { s.early.removeAll() }
                inFlight.store(s.outstanding.count + s.handing, ordering: .relaxed)
            }
        }
    }

    /// libmosquitto completed message `mid` (any message): true when it was a bulk one (room
    /// for the next).
    func completed(_ mid: Int32) -> Bool {
        // Every publication's completion comes here; without a bulk under way, no lock.
        guard inFlight.load(ordering: .relaxed) > 0 else { return false }
        return state.withLock { s in
            defer { inFlight.store(s.outstanding.count + s.handing, ordering: .relaxed) }
            if s.outstanding.remove(mid) != nil { return true }
            if s.handing > 0 { s.early.insert(mid) }
            return false
        }
    }

    /// Connected (again): what was outstanding is libmosquitto's to resend or lost with the
    /// session; either way it no longer holds the window.
    func connected() {
        state.withLock { s in
            s.outstanding.removeAll()
            s.early.removeAll()
            inFlight.store(s.handing, ordering: .relaxed)
        }
    }
}
