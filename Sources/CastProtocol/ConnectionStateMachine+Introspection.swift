/// What the connection state machine tells about itself (for the client, logs and tests): read
/// only, kept apart from the events and states that change it.
extension CastConnectionStateMachine {
    /// True once the device answered on the current connection.
    public var isConnected: Bool {
        if case .open(let session, _) = state { return session.answered }
        return false
    }

    /// True while a channel is open (answered or not, authenticating included).
    public var isOpen: Bool {
        switch state {
        case .open, .authenticating: return true
        default: return false
        }
    }

    /// True while the device is being authenticated on a new channel.
    public var isAuthenticating: Bool {
        if case .authenticating = state { return true }
        return false
    }

    /// True from the decision to close the channel until it is closed.
    public var isClosing: Bool {
        if case .closing = state { return true }
        return false
    }

    /// When the device last sent anything on the current (or closing) connection.
    public var lastHeard: Instant? {
        switch state {
        case .open(let session, _): return session.lastReceived
        case .closing(_, let lastReceived): return lastReceived
        default: return nil
        }
    }

    public var isShutDown: Bool {
        if case .shutDown = state { return true }
        return false
    }

    /// Endpoints with an open virtual connection.
    public var connectedEndpoints: Set<String> {
        if case .open(let session, _) = state { return session.endpoints }
        return []
    }

    /// Request ids awaiting an answer (not counting the machine's own status request).
    public var pendingRequestIDs: [Int] {
        if case .open(let session, _) = state {
            return session.pending.keys.filter { !session.internalRequests.contains($0) }.sorted()
        }
        return []
    }

    /// A short name of the state (for logs and tests).
    public var stateName: String {
        switch state {
        case .idle: return "idle"
        case .connecting: return "connecting"
        case .authenticating: return "authenticating"
        case .open(let s, _): return s.answered ? "connected" : "open"
        case .closing: return "closing"
        case .waiting: return "waiting"
        case .shutDown: return "shutDown"
        }
    }
}
