/// The state machine's actions (what the client carries out) and its states, one value per
/// phase of a connection (ConnectionStateMachine.swift changes them; nothing else does).
extension CastConnectionStateMachine {
    public enum Action: Sendable, Hashable {
        case connect
        case write([CastMessage])
        case close(CastDisconnectReason)
        case scheduleTimer(Instant)
        case scheduleReconnect(at: Instant, delay: Duration)
        case completeRequest(id: Int, message: CastMessage)
        case failRequests(ids: [Int], failure: CastRequestFailure)
        case emit(CastConnectionEvent)
    }

    struct Pending: Sendable {
        var deadline: Instant
        var namespace: String
        var endpoint: String
    }

    struct Authentication: Sendable {
        var deadline: Instant
        var context: DeviceAuthContext?
    }

    struct Session: Sendable {
        var lastReceived: Instant
        /// When we last sent a PING.
        var lastPingSent: Instant
        /// The last PING the device sent us (nil: none on this connection yet).
        var lastDevicePing: Instant?
        var answered = false
        /// Repair rounds (CONNECT + GET_STATUS again) sent on this connection before an answer.
        var repairs = 0
        var endpoints: Set<String> = []
        /// Request id → deadline, and where the answer must come from.
        var pending: [Int: Pending] = [:]
        var internalRequests: Set<Int> = []
        /// Under `report`: the device-auth check still under way (the challenge went out with
        /// CONNECT; its answer, or the deadline, gives the result).
        var authentication: Authentication?
    }

    enum State: Sendable {
        case idle
        case connecting(attempt: Int)
        case authenticating(Authentication, attempt: Int)
        case open(Session, attempt: Int)
        /// `lastReceived` is nil when the connection was never past authentication.
        case closing(attempt: Int, lastReceived: Instant?)
        case waiting(attempt: Int, until: Instant)
        case shutDown
    }
}
