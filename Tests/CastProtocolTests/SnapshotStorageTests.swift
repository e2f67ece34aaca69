import Foundation
import Testing

@testable import CastProtocol

/// A `DeviceSnapshot` keeps its media status out of line (`OutOfLine`): what that must not
/// change (a value with value semantics, equal and hashed by content) and what it is for (the
/// snapshot's inline size, which every copy of every device pays; docs/performance.md).
@Suite struct SnapshotStorageTests {
    let media = MediaStatus(mediaSessionId: 1, media: MediaInformation(contentId: "http://x/a.mp3", duration: 300),
                            playerState: "PLAYING", currentTime: 10, playbackRate: 1, supportedMediaCommands: 15)

    @Test func aCopyKeepsItsValueWhenTheOriginalChanges() {
        var a = DeviceSnapshot(generation: 1, link: .online, media: media)
        let b = a
        a.media?.currentTime = 20
        a.media?.media?.contentId = "http://x/b.mp3"
        #expect(b.media?.currentTime == 10)
        #expect(b.media?.media?.contentId == "http://x/a.mp3")
        #expect(a.media?.currentTime == 20)
        #expect(a.media?.media?.contentId == "http://x/b.mp3")
        a.media = nil
        #expect(a.media == nil)
        #expect(b.media == media)
    }

    @Test func equalAndHashedByContentNotByBox() {
        let a = DeviceSnapshot(generation: 1, link: .online, media: media)
        var b = DeviceSnapshot(generation: 1, link: .online, media: nil)
        #expect(a != b)
        b.media = media  // another box, the same content
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        b.media?.playerState = "PAUSED"
        #expect(a != b)
        #expect(DeviceSnapshot() == DeviceSnapshot(media: nil))
    }

    @Test func theMediaStatusIsNotInline() {
        // Each copy of a snapshot (the session machine's current and last published ones, the
        // bridge's record, a dictionary bucket, an input on its way) pays this. Inline, the media
        // status alone was ~1.5 KiB of it.
        let size = MemoryLayout<DeviceSnapshot>.size
        print("MemoryLayout<DeviceSnapshot>.size = \(size), MediaStatus inline would be \(MemoryLayout<MediaStatus?>.size)")
        #expect(MemoryLayout<OutOfLine<MediaStatus>>.size == MemoryLayout<Int>.size)
        #expect(size < MemoryLayout<MediaStatus?>.size)
    }
}
