import CastProtocol
import Foundation

/// What the bridge knows about one device. Kept while the device is offline (last known state).
struct DeviceState: Sendable {
    var descriptor: DeviceDescriptor
    /// Assigned once per run (TopicNameRegistry).
    let topic: String
    /// The Cast connection is up (the I/O side said `castConnected`).
    var connected = false
    /// The device answered on the current connection: availability `online`.
    var online = false
    /// Has been online at least once this run (`connected` vs `reconnected` event).
    var everOnline = false
    var offlineSince: Date?
    var receiver: ReceiverStatus?
    var receiverUpdatedAt: Date?
    /// The merged media status of the joined app; nil = no media session.
    var media: MediaStatus?
    var mediaUpdatedAt: Date?
    /// When `media.currentTime` was last true (arrival of the status that changed it).
    var positionUpdatedAt: Date?
    var lastPositionPublish: Date?
    /// Position, time and rate of the last published `media` document while playing: a new
    /// status whose position only follows from them is not a change worth republishing.
    var publishedPlayback: (position: Double, at: Date, rate: Double)?
    /// The operation running on the device (per-device order, DeviceQueue.swift).
    var inFlight: OperationToken?
    /// Work waiting for `inFlight` to finish, in arrival order.
    var waiting: [QueuedWork] = []

    init(descriptor: DeviceDescriptor, topic: String) {
        self.descriptor = descriptor
        self.topic = topic
    }

    var id: DeviceID { descriptor.id }

    /// The running app unless it is the idle screen.
    var activeApp: ReceiverApplication? { receiver?.activeApp }

    /// The state word of `<dev>/state`.
    var stateWord: String { MediaProjection.stateWord(app: activeApp, media: media) }

    /// The media position now, extrapolated while playing.
    func estimatedPosition(now: Date) -> Double? {
        guard let media, let time = media.currentTime else { return nil }
        guard media.playerState == "PLAYING", let since = positionUpdatedAt else { return time }
        let elapsed = max(0, now.timeIntervalSince(since))
        var position = time + elapsed * (media.playbackRate ?? 1)
        if let duration = media.effectiveMedia?.duration, duration > 0 { position = min(position, duration) }
        return (position * 1000).rounded() / 1000
    }

    /// True when the running app speaks the media namespace (or does not say which it speaks).
    var appSpeaksMedia: Bool {
        guard let app = activeApp else { return false }
        return app.namespaces.isEmpty || app.namespaces.contains(CastNamespace.media)
    }
}
