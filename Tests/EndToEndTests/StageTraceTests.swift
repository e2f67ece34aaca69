import Foundation
import Testing
import TestSupport

/// `CAST2MQTT_STAGE_TRACE` (used by `scripts/bench e2e --stages`): the daemon records every stage
/// of a command's and a status's path, in order, and writes them out when it stops.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct EndToEndStageTraceTests {
    @Test func aCommandAndAStatusLeaveEveryStageInOrder() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("stages-\(UUID().uuidString).txt").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try await withBridge(devices: ["Living Room TV"], environment: ["CAST2MQTT_STAGE_TRACE": file]) { h in
            try await h.waitOnline(["living_room_tv"])
            let reply = try await h.command("living_room_tv", "volume", "25")
            #expect(reply.status == "ok", "\(reply)")
            await h.devices[0].setVolumeRemotely(level: 0.61)
            let published = await waitUntil {
                h.observer.messages(on: h.topic("living_room_tv", "receiver")).contains {
                    String(decoding: $0.payload, as: UTF8.self).contains("0.61")
                }
            }
            #expect(published)
            h.stopDaemon()
        }
        let marks = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").compactMap { line -> (Int, Int)? in
            let parts = line.split(separator: " ")
            guard parts.count == 2, let stage = Int(parts[0]), let time = Int(parts[1]) else { return nil }
            return (stage, time)
        }
        // Each path as a subsequence of the marks (in the order recorded), times never going back.
        func contains(_ path: [Int]) -> Bool {
            var want = 0
            var last = 0
            for (stage, time) in marks where want < path.count && stage == path[want] {
                if time < last { return false }
                last = time
                want += 1
            }
            return want == path.count
        }
        #expect(contains([1, 2, 3, 4, 20, 21, 5, 6]), "command path not in the trace: \(marks.map(\.0).suffix(200))")
        #expect(contains([11, 12, 13, 14, 20, 21, 15, 16]), "status path not in the trace: \(marks.map(\.0).suffix(200))")
    }
}
