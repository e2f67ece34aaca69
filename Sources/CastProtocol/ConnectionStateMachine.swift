/// The connection to one Cast device as a value: it takes events (what happened) and returns
/// actions (what to do), so that the channel handler is the only place that does I/O and every
/// rule here is tested with a manual clock.
///
/// States:
/// - `idle`: not started.
/// - `connecting(attempt)`: a TCP + TLS connect is under way.
/// - `authenticating(auth, attempt)`: with `deviceAuth: require`, the channel is up and our
///   AuthChallenge is out (nothing else is sent before the device is checked); the answer, or
///   `requestTimeout` without one, gives the result, which is emitted. Authenticated: the
///   machine goes on to `open`. A failure: the channel is closed (`unauthenticated`) and
///   retried with backoff like a failed connect. Under `report` the check costs the connection
///   nothing: the challenge goes out with CONNECT and the status request, the machine is `open`
///   at once, and the result is emitted when the answer (or the deadline) comes.
/// - `open(session)`: the channel is active; `session.answered` turns true with the first
///   message from the receiver platform (`receiver-0` on the receiver namespace: its answer to
///   GET_STATUS, or a status broadcast); only then is the device `connected`. Heartbeats keep
///   the connection alive but prove nothing about the platform: a device still booting, or one
///   that lost our CONNECT on a congested Wi-Fi, answers PINGs and refuses everything else.
///   When the status is not answered within `requestTimeout`, the machine repairs the
///   connection once (CONNECT + GET_STATUS again) and, when that is not answered either, drops
///   it and reconnects with backoff.
/// - `closing(attempt, lastReceived)`: the machine gave up on the open channel (heartbeat
///   timeout, unresponsive platform, CLOSE from the platform, a move) and asked for it to be
///   closed; the disconnect is already reported and pending requests already failed, so a slow
///   TLS close (NIOSSL waits for the peer's close_notify) delays nothing. `channelClosed` ends it.
/// - `waiting(attempt, until)`: backing off before the next connect.
/// - `shutDown`: final.
///
/// Actions: `connect`, `write(messages)`, `close(reason)`, `scheduleTimer(deadline)` (the single
/// timer of the connection: heartbeat, liveness and request deadlines),
/// `scheduleReconnect(at, delay)`, `completeRequest(id, message)`, `failRequests(ids, failure)`,
/// `emit(event)`.
public struct CastConnectionStateMachine<Instant: InstantProtocol>: Sendable
where Instant.Duration == Duration, Instant: Sendable {
    public let configuration: CastConnectionConfiguration
    /// Repair rounds on a connection whose platform does not answer, before it is dropped.
    public static var maxRepairs: Int { 1 }
    /// Read by the introspection in ConnectionStateMachine+Introspection.swift; changed only here.
    private(set) var state: State = .idle
    private var nextRequestID = 1

    public init(configuration: CastConnectionConfiguration) {
        self.configuration = configuration
    }

    // MARK: - Events

    /// Start connecting.
    public mutating func start() -> [Action] {
        guard case .idle = state else { return [] }
        state = .connecting(attempt: 0)
        return [.connect]
    }

    /// The TCP + TLS connect failed.
    public mutating func connectFailed(_ reason: CastDisconnectReason, now: Instant, jitter: Double) -> [Action] {
        guard case .connecting(let attempt) = state else { return [] }
        return backOff(attempt: attempt + 1, now: now, jitter: jitter)
    }

    /// The channel is up: open the platform virtual connection and ask for the receiver status,
    /// or, with `deviceAuth` on, challenge the device first. `auth` carries this connection's
    /// nonce, TLS certificate, time and trust anchors (nil: the check fails on the TLS certificate).
    public mutating func channelActive(now: Instant, auth: DeviceAuthContext? = nil) -> [Action] {
        guard case .connecting(let attempt) = state else { return [] }
        guard configuration.deviceAuth != .off else { return openSession(now: now, attempt: attempt) }
        guard let auth, auth.tlsCertificateDER != nil else {
            state = .authenticating(Authentication(deadline: now, context: nil), attempt: attempt)
            return authenticationEnded(.failed(.tlsCertificate), now: now)
        }
        let deadline = now.advanced(by: configuration.requestTimeout)
        let challenge = CastMessage(sourceID: configuration.senderID, destinationID: CastEndpoint.receiver,
                                    namespace: CastNamespace.deviceAuth,
                                    payload: .binary(DeviceAuthMessages.challenge(nonce: auth.nonce)))
        if configuration.deviceAuth == .report {
            return openSession(now: now, attempt: attempt, checking: (Authentication(deadline: deadline, context: auth), challenge))
        }
        state = .authenticating(Authentication(deadline: deadline, context: auth), attempt: attempt)
        return [.write([challenge]), .scheduleTimer(deadline)]
    }

    /// `checking`: under `report`, the check that runs beside the session (its challenge goes
    /// out first, in the same write).
    private mutating func openSession(now: Instant, attempt: Int,
                                      checking: (Authentication, CastMessage)? = nil) -> [Action] {
        var session = Session(lastReceived: now, lastPingSent: now)
        session.endpoints.insert(CastEndpoint.receiver)
        session.authentication = checking?.0
        let status = platformStatusRequest(&session, now: now)
        state = .open(session, attempt: attempt)
        let messages = (checking.map { [$0.1] } ?? []) + [connectMessage(to: CastEndpoint.receiver), heartbeat(.ping), status]
        return [.write(messages), .scheduleTimer(nextDeadline(session))]
    }

    /// Under `report`: the check running beside an open session ended.
    private mutating func sessionCheckEnded(_ session: inout Session, _ result: DeviceAuthResult) -> Action {
        session.authentication = nil
        return .emit(.authentication(result, admitted: true))
    }

    /// The check ended: say so, then go on or refuse the device as the policy says.
    private mutating func authenticationEnded(_ result: DeviceAuthResult, now: Instant) -> [Action] {
        guard case .authenticating(_, let attempt) = state else { return [] }
        let admitted = result.isAuthenticated || configuration.deviceAuth != .require
        let event = Action.emit(.authentication(result, admitted: admitted))
        if admitted { return [event] + openSession(now: now, attempt: attempt) }
        state = .closing(attempt: attempt, lastReceived: nil)
        return [event, .close(.unauthenticated(result.failure ?? .malformed))]
    }

    /// The receiver GET_STATUS that proves the platform answers: an internal request (its answer
    /// is delivered as a status, never as a request completion).
    private mutating func platformStatusRequest(_ session: inout Session, now: Instant) -> CastMessage {
        let id = allocateRequestID()
        session.pending[id] = Pending(deadline: now.advanced(by: configuration.requestTimeout),
                                      namespace: CastNamespace.receiver, endpoint: CastEndpoint.receiver)
        session.internalRequests.insert(id)
        return message(to: CastEndpoint.receiver, namespace: CastNamespace.receiver,
                       json: ReceiverRequest.getStatus.json(requestId: id))
    }

    /// A message arrived from the device.
    public mutating func messageReceived(_ message: CastMessage, now: Instant) -> [Action] {
        if case .authenticating(let auth, _) = state {
            // Only the answer to the challenge counts; nothing else is expected before it.
            guard message.namespace == CastNamespace.deviceAuth, let context = auth.context else { return [] }
            return authenticationEnded(context.verify(message.payload), now: now)
        }
        guard case .open(var session, var attempt) = state else { return [] }
        var actions: [Action] = []
        session.lastReceived = now
        if message.namespace == CastNamespace.deviceAuth {
            // Under `report`, the answer to the challenge sent with CONNECT; anything else on the
            // namespace (a second answer, one nobody asked for) means nothing.
            if let context = session.authentication?.context {
                actions.append(sessionCheckEnded(&session, context.verify(message.payload)))
            }
            state = .open(session, attempt: attempt)
            return actions
        }
        if !session.answered, message.namespace == CastNamespace.receiver, message.sourceID == CastEndpoint.receiver {
            session.answered = true
            attempt = 0
            actions.append(.emit(.connected))
        }
        defer { if case .open = state { state = .open(session, attempt: attempt) } }

        switch message.namespace {
        case CastNamespace.heartbeat:
            if HeartbeatMessage.parse(message.payload) == .ping {
                session.lastDevicePing = now
                var pong = heartbeat(.pong)
                pong.destinationID = message.sourceID
                actions.append(.write([pong]))
            }
            return actions
        case CastNamespace.connection:
            if case .close = ConnectionMessage.parse(message.payload) {
                if message.sourceID == CastEndpoint.receiver {
                    return actions + beginClosing(session, attempt: attempt, .closedByDevice)
                }
                session.endpoints.remove(message.sourceID)
                // What waits for an answer from there will not get one: it fails now, not at its
                // deadline (one clear answer, at once).
                var closed: [Int] = []
                for (id, request) in session.pending where request.endpoint == message.sourceID { closed.append(id) }
                closed.sort()
                for id in closed { session.pending[id] = nil }
                let visible = closed.filter { session.internalRequests.remove($0) == nil }
                if !visible.isEmpty { actions.append(.failRequests(ids: visible, failure: .endpointClosed)) }
                actions.append(.emit(.virtualConnectionClosed(endpoint: message.sourceID)))
            }
            return actions
        default:
            break
        }
        // The message is delivered first, so that the owner's view of the device is up to date
        // by the time the request it answers completes.
        actions.append(.emit(.message(message)))
        // A reply must carry the request's id *and* come from where the request went, on its
        // namespace: an app's own protocol may use `requestId` too.
        if let header = CastPayloadHeader.parse(message.payload), let id = header.requestId, id != 0,
           let request = session.pending[id], request.namespace == message.namespace,
           request.endpoint == message.sourceID, header.type != "LAUNCH_STATUS" {
            session.pending[id] = nil
            if session.internalRequests.remove(id) == nil {
                actions.append(.completeRequest(id: id, message: message))
            }
        }
        return actions
    }

    /// The connection's timer fired: heartbeat, liveness, request deadlines, or backoff expiry.
    public mutating func timerFired(now: Instant) -> [Action] {
        switch state {
        case .authenticating(let auth, _):
            guard now >= auth.deadline else { return [.scheduleTimer(auth.deadline)] }
            return authenticationEnded(.failed(.noAnswer), now: now)
        case .open(var session, let attempt):
            if now >= session.lastReceived.advanced(by: configuration.heartbeatTimeout) {
                return beginClosing(session, attempt: attempt, .heartbeatTimeout)
            }
            var actions: [Action] = []
            if let auth = session.authentication, now >= auth.deadline {
                actions.append(sessionCheckEnded(&session, .failed(.noAnswer)))
            }
            if now >= heartbeatTurn(session) {
                session.lastPingSent = now
                actions.append(.write([heartbeat(.ping)]))
            }
            // Plain loops, no key paths: this runs on every timer of every device, and in this
            // generic type a key path is resolved at run time on each call.
            var expired: [Int] = []
            for (id, request) in session.pending where request.deadline <= now { expired.append(id) }
            expired.sort()
            if !expired.isEmpty {
                for id in expired { session.pending[id] = nil }
                let visible = expired.filter { session.internalRequests.remove($0) == nil }
                if !visible.isEmpty { actions.append(.failRequests(ids: visible, failure: .timeout)) }
                if !session.answered, visible.count < expired.count {
                    // The platform status went unanswered: repair once, then give up on this
                    // connection (the reconnect backs off like any failed attempt).
                    guard session.repairs < Self.maxRepairs else {
                        return actions + beginClosing(session, attempt: attempt, .unresponsive)
                    }
                    session.repairs += 1
                    let status = platformStatusRequest(&session, now: now)
                    actions.append(.write([connectMessage(to: CastEndpoint.receiver), status]))
                }
            }
            state = .open(session, attempt: attempt)
            actions.append(.scheduleTimer(nextDeadline(session)))
            return actions
        case .waiting(let attempt, let until):
            guard now >= until else { return [] }
            state = .connecting(attempt: attempt)
            return [.connect]
        default:
            return []
        }
    }

    /// Reconnect at once (e.g. mDNS announced the device again or at a new address).
    public mutating func reconnectNow() -> [Action] {
        guard case .waiting(let attempt, _) = state else { return [] }
        state = .connecting(attempt: attempt)
        return [.connect]
    }

    /// Close the current channel deliberately (e.g. the device moved); it reconnects with backoff.
    public mutating func dropConnection(_ reason: CastDisconnectReason) -> [Action] {
        if case .authenticating(_, let attempt) = state {
            state = .closing(attempt: attempt, lastReceived: nil)
            return [.close(reason)]
        }
        guard case .open(let session, let attempt) = state else { return [] }
        return beginClosing(session, attempt: attempt, reason)
    }

    /// The channel closed (after `close`, or by the peer, or on error). Fails pending requests,
    /// reports the disconnect (unless `closing` already did), schedules the reconnect.
    public mutating func channelClosed(_ reason: CastDisconnectReason, now: Instant, jitter: Double) -> [Action] {
        switch state {
        case .open(let session, let attempt):
            return endingActions(session, reason) + backOff(attempt: attempt + 1, now: now, jitter: jitter)
        case .closing(let attempt, _), .authenticating(_, let attempt):
            return backOff(attempt: attempt + 1, now: now, jitter: jitter)
        case .connecting(let attempt):
            return backOff(attempt: attempt + 1, now: now, jitter: jitter)
        default:
            return []
        }
    }

    /// Allocates a request id and builds the actions to send a request that expects an answer.
    /// Throws `notConnected` unless the device has answered on the current connection, and
    /// `payloadTooLarge` for a message over the 64 KiB frame limit (nothing is sent then).
    /// Opens the virtual connection to `destination` first when needed.
    public mutating func sendRequest(
        namespace: String, destination: String, timeout: Duration? = nil, now: Instant,
        payload: (Int) -> CastPayload
    ) throws(CastRequestFailure) -> (id: Int, actions: [Action]) {
        guard case .open(var session, let attempt) = state, session.answered else {
            if case .shutDown = state { throw .shuttingDown }
            throw .notConnected
        }
        let id = allocateRequestID()
        let request = CastMessage(sourceID: configuration.senderID, destinationID: destination,
                                  namespace: namespace, payload: payload(id))
        guard CastFraming.fits(request) else { throw .payloadTooLarge(bytes: CastFraming.encodedSize(request)) }
        var messages: [CastMessage] = []
        if !session.endpoints.contains(destination) {
            session.endpoints.insert(destination)
            messages.append(connectMessage(to: destination))
        }
        messages.append(request)
        session.pending[id] = Pending(deadline: now.advanced(by: timeout ?? configuration.requestTimeout),
                                      namespace: namespace, endpoint: destination)
        state = .open(session, attempt: attempt)
        return (id, [.write(messages), .scheduleTimer(nextDeadline(session))])
    }

    /// Sends a message that expects no answer (e.g. a custom-namespace message), opening the
    /// virtual connection to `destination` first when needed.
    public mutating func send(namespace: String, destination: String, payload: CastPayload) throws(CastRequestFailure) -> [Action] {
        guard case .open(var session, let attempt) = state, session.answered else {
            if case .shutDown = state { throw .shuttingDown }
            throw .notConnected
        }
        let message = CastMessage(sourceID: configuration.senderID, destinationID: destination,
                                  namespace: namespace, payload: payload)
        guard CastFraming.fits(message) else { throw .payloadTooLarge(bytes: CastFraming.encodedSize(message)) }
        var messages: [CastMessage] = []
        if !session.endpoints.contains(destination) {
            session.endpoints.insert(destination)
            messages.append(connectMessage(to: destination))
        }
        messages.append(message)
        state = .open(session, attempt: attempt)
        return [.write(messages)]
    }

    /// Opens a virtual connection to an app endpoint (no-op when already open).
    public mutating func connectEndpoint(_ endpoint: String) -> [Action] {
        guard case .open(var session, let attempt) = state, !session.endpoints.contains(endpoint) else { return [] }
        session.endpoints.insert(endpoint)
        state = .open(session, attempt: attempt)
        return [.write([connectMessage(to: endpoint)])]
    }

    /// Closes the virtual connection to an endpoint, politely.
    public mutating func closeEndpoint(_ endpoint: String) -> [Action] {
        guard case .open(var session, let attempt) = state, session.endpoints.contains(endpoint) else { return [] }
        session.endpoints.remove(endpoint)
        state = .open(session, attempt: attempt)
        return [.write([closeMessage(to: endpoint)])]
    }

    /// Forget an endpoint the device already closed or that no longer exists.
    public mutating func forgetEndpoint(_ endpoint: String) {
        guard case .open(var session, let attempt) = state else { return }
        session.endpoints.remove(endpoint)
        state = .open(session, attempt: attempt)
    }

    /// The owner gave up waiting on a request (e.g. it was cancelled): stop tracking it.
    public mutating func cancelRequest(_ id: Int) {
        guard case .open(var session, let attempt) = state else { return }
        session.pending[id] = nil
        state = .open(session, attempt: attempt)
    }

    /// Shut down: close every virtual connection politely (apps first, then the platform), close
    /// the channel, fail what is pending. Final.
    public mutating func shutdown() -> [Action] {
        let previous = state
        state = .shutDown
        switch previous {
        case .open(let session, _):
            var actions: [Action] = []
            let apps = session.endpoints.filter { $0 != CastEndpoint.receiver }.sorted()
            var closes = apps.map { closeMessage(to: $0) }
            if session.endpoints.contains(CastEndpoint.receiver) { closes.append(closeMessage(to: CastEndpoint.receiver)) }
            if !closes.isEmpty { actions.append(.write(closes)) }
            let ids = session.pending.keys.filter { !session.internalRequests.contains($0) }.sorted()
            if !ids.isEmpty { actions.append(.failRequests(ids: ids, failure: .shuttingDown)) }
            actions.append(.close(.shutdown))
            if session.answered { actions.append(.emit(.disconnected(.shutdown))) }
            return actions
        case .connecting, .closing, .authenticating:
            return [.close(.shutdown)]
        default:
            return []
        }
    }

    // MARK: - Helpers

    private mutating func allocateRequestID() -> Int {
        let id = nextRequestID
        nextRequestID = nextRequestID >= Int(Int32.max) ? 1 : nextRequestID + 1
        return id
    }

    private mutating func backOff(attempt: Int, now: Instant, jitter: Double) -> [Action] {
        let delay = configuration.backoff.delay(attempt: attempt, jitter: jitter)
        let until = now.advanced(by: delay)
        state = .waiting(attempt: attempt, until: until)
        return [.scheduleReconnect(at: until, delay: delay)]
    }

    /// The machine gives up on the open channel for `reason`: `close` it (the owner calls
    /// `channelClosed` when it is really gone), and report the end now.
    private mutating func beginClosing(_ session: Session, attempt: Int, _ reason: CastDisconnectReason) -> [Action] {
        state = .closing(attempt: attempt, lastReceived: session.lastReceived)
        return [.close(reason)] + endingActions(session, reason)
    }

    /// Pending requests fail, and an answered connection reports its end.
    private func endingActions(_ session: Session, _ reason: CastDisconnectReason) -> [Action] {
        var actions: [Action] = []
        let ids = session.pending.keys.filter { !session.internalRequests.contains($0) }.sorted()
        if !ids.isEmpty { actions.append(.failRequests(ids: ids, failure: .connectionLost)) }
        if session.answered { actions.append(.emit(.disconnected(reason))) }
        return actions
    }
}
