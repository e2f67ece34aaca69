import CastProtocol

/// What a device client reports, in order.
public enum CastClientEvent: Sendable, Hashable {
    /// The device changed (came online, went offline, a new receiver or media status, group
    /// membership): the whole device as the client knows it (`CastSessionMachine`).
    case snapshot(DeviceSnapshot)
    /// A message from the running app on a namespace that is not the platform's own.
    case appMessage(namespace: String, sourceID: String, payload: CastPayload)
}
