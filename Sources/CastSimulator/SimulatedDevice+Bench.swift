import CastProtocol
import NIOCore

extension SimulatedDevice {
    /// Gives the current media item a new title and broadcasts the MEDIA_STATUS that shows it (as
    /// a device does when the playing track's metadata changes). Returns the CLOCK_MONOTONIC time
    /// in nanoseconds taken just before the status was written to the senders, or nil when there
    /// is no media session. Used by the end-to-end benchmark to time status → MQTT.
    public func broadcastMediaTitle(_ title: String) async -> UInt64? {
        try? await eventLoop.submit { () -> UInt64? in
            guard var session = self.media, let running = self.app,
                  session.items.indices.contains(session.currentIndex),
                  var media = session.items[session.currentIndex].media
            else { return nil }
            var metadata = media.metadata ?? MediaMetadata(metadataType: 0)
            metadata.title = title
            media.metadata = metadata
            session.items[session.currentIndex].media = media
            self.media = session
            let json = MediaResponse.status(requestId: 0, [session.status(at: self.configuration.clock.now())]).json()
            let written = NIODeadline.now().uptimeNanoseconds
            self.broadcast(from: running.transportId, namespace: CastNamespace.media, json: json)
            return written
        }.get() ?? nil
    }
}
