import CastProtocol

/// What a device client reports, in order, on its event stream.
public enum CastClientEvent: Sendable, Hashable {
    /// The device answered on a new connection (availability online). `fingerprint` is the
    /// SHA-256 of the device's TLS certificate.
    case connected(fingerprint: String?)
    /// The connection ended; the client reconnects by itself with backoff.
    case disconnected(CastDisconnectReason)
    /// A new (changed) receiver status.
    case receiverStatus(ReceiverStatus)
    /// A new (changed) media status of the joined app, merged over the previous one; empty
    /// when there is no media session.
    case mediaStatus([MediaStatus])
    /// An app session appeared (or was found running when we connected) and was joined.
    case appSessionStarted(ReceiverApplication)
    /// An app session ended (app stopped, replaced, or its transport closed).
    case appSessionEnded(ReceiverApplication)
    /// A message from the running app on a namespace that is not the platform's own.
    case appMessage(namespace: String, sourceID: String, payload: CastPayload)
    /// A message on the multizone namespace.
    case multizone(MultizoneMessage)
}
