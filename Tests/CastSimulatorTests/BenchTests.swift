import CastProtocol
import CastSimulator
import NIOCore
import Testing
import TestSupport

@Suite("Simulator bench hooks")
struct BenchTests {
    @Test("media_title broadcasts a MEDIA_STATUS with the new title and returns when it was written")
    func mediaTitle() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            let device = sim.devices[0]
            #expect(await device.broadcastMediaTitle("nothing plays") == nil)
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                _ = try await MediaTests.loaded(client)
                let before = NIODeadline.now().uptimeNanoseconds
                let written = try #require(await device.broadcastMediaTitle("Bench 1"))
                #expect(written >= before && written <= NIODeadline.now().uptimeNanoseconds)
                let status = await client.waitFor(namespace: CastNamespace.media, type: "MEDIA_STATUS", requestId: 0) {
                    $0.firstStatus?["media"]?["metadata"]?["title"]?.stringValue == "Bench 1"
                }
                #expect(status?.firstStatus?["playerState"]?.stringValue == "PLAYING")
            }
        }
    }

    @Test("recorded messages carry the monotonic time they arrived")
    func recordedMonotonic() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let before = NIODeadline.now().uptimeNanoseconds
                _ = try await client.launch("CC1AD845", requestId: 1)
                let launch = try #require(device.received(namespace: CastNamespace.receiver, type: "LAUNCH").first)
                // Stamped from the same clock, between sending and now.
                #expect((before...NIODeadline.now().uptimeNanoseconds).contains(launch.monotonicNanoseconds))
            }
        }
    }
}
