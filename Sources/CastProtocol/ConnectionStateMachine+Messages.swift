/// The messages the connection state machine sends and its timer arithmetic: pure functions of
/// the configuration and the session, kept apart from the events and states.
extension CastConnectionStateMachine {
    /// When we PING next: `heartbeatInterval` after our last PING, like any sender, unless the
    /// device has PINGed us since then. Such a device proves it is alive with its own PINGs, and
    /// our PONGs prove us to it, so a PING of ours would only add a round trip (and a wake-up) on
    /// both ends: we PING it only once it has been quiet for `heartbeatTimeout -
    /// heartbeatInterval / 2`, which leaves it half an interval to answer before the liveness
    /// rule (nothing at all for `heartbeatTimeout`: drop) applies, as for any device. The timer
    /// then wakes about every other PING of the device (10 s by default) instead of every
    /// interval. The half interval keeps that look off the device's own PING times: a look
    /// exactly two PINGs after the last one would race the next PING and send a needless PING
    /// every other time.
    func heartbeatTurn(_ session: Session) -> Instant {
        let regular = session.lastPingSent.advanced(by: configuration.heartbeatInterval)
        guard let devicePing = session.lastDevicePing, devicePing > session.lastPingSent else { return regular }
        let quiet = session.lastReceived.advanced(by: configuration.heartbeatTimeout - configuration.heartbeatInterval / 2)
        return regular < quiet ? quiet : regular
    }

    func nextDeadline(_ session: Session) -> Instant {
        var deadline = heartbeatTurn(session)
        let dead = session.lastReceived.advanced(by: configuration.heartbeatTimeout)
        if dead < deadline { deadline = dead }
        for request in session.pending.values where request.deadline < deadline { deadline = request.deadline }
        if let auth = session.authentication, auth.deadline < deadline { deadline = auth.deadline }
        return deadline
    }

    func message(to destination: String, namespace: String, json: String) -> CastMessage {
        CastMessage(sourceID: configuration.senderID, destinationID: destination, namespace: namespace,
                    payload: .string(json))
    }

    func heartbeat(_ kind: HeartbeatMessage) -> CastMessage {
        message(to: CastEndpoint.receiver, namespace: CastNamespace.heartbeat, json: kind.json())
    }

    func connectMessage(to destination: String) -> CastMessage {
        let info = SenderInfo(version: "cast2mqtt", platform: 6, systemVersion: "Linux")
        // connType 0 (strong) everywhere: LAUNCH is refused on invisible connections, and we
        // want app notifications.
        let connect = ConnectionMessage.connect(userAgent: configuration.userAgent, connType: 0,
                                                senderInfo: info, protocolVersions: nil)
        return message(to: destination, namespace: CastNamespace.connection, json: connect.json())
    }

    func closeMessage(to destination: String) -> CastMessage {
        message(to: destination, namespace: CastNamespace.connection, json: ConnectionMessage.close(reasonCode: 5).json())
    }
}
