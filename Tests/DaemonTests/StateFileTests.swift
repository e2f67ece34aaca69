import Bridge
import Foundation
import Logging
import Testing

@testable import cast2mqtt

/// State files are written from each device's kept encoding: only changed devices are encoded
/// again, and the file is what `JSONEncoder` (sorted keys) makes of the whole snapshot.
@Suite struct StateFileTests {
    static func device(_ i: Int, name: String? = nil) -> PublishedSnapshot.Device {
        PublishedSnapshot.Device(topic: "device_\(i)", name: name ?? "Device \(i)", source: "static",
                                 discovery: ["homeassistant/device/cast2mqtt_\(i)/config"],
                                 certificate: i % 2 == 0 ? "ab\(i)" : nil)
    }

    static func whole(_ snapshot: PublishedSnapshot) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return [UInt8](try encoder.encode(snapshot))
    }

    @Test func onlyChangedDevicesAreEncodedAgainAndTheFileIsTheSame() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("statefile-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = PublishedFile(stateDir: dir, logger: Logger(label: "test.statefile"))
        var snapshot = PublishedSnapshot(devices: [:], bridge: ["homeassistant/device/cast2mqtt_bridge/config"])
        for i in 0..<50 { snapshot.devices[String(format: "%032x", i)] = Self.device(i) }

        file.save(snapshot)
        #expect(file.entriesEncoded == 50)
        #expect(file.load() == snapshot)
        #expect([UInt8](try #require(FileManager.default.contents(atPath: file.path))) == (try Self.whole(snapshot)))

        snapshot.devices[String(format: "%032x", 7)] = Self.device(7, name: "Renamed \"7\"")
        snapshot.devices[String(format: "%032x", 99)] = Self.device(99)
        snapshot.devices[String(format: "%032x", 3)] = nil
        file.save(snapshot)
        #expect(file.entriesEncoded == 52)
        #expect(file.load() == snapshot)
        #expect([UInt8](try #require(FileManager.default.contents(atPath: file.path))) == (try Self.whole(snapshot)))

        file.save(snapshot)
        #expect(file.entriesEncoded == 52)
        snapshot.devices = [:]
        file.save(snapshot)
        #expect(file.load() == snapshot)
        #expect([UInt8](try #require(FileManager.default.contents(atPath: file.path))) == (try Self.whole(snapshot)))
    }

    @Test func sessionsToo() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("statefile-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = SessionFile(stateDir: dir, logger: Logger(label: "test.statefile"))
        var snapshot = SessionSnapshot()
        file.save(snapshot)
        #expect(file.load() == snapshot)
        snapshot.devices["a"] = .init(appId: "CC1AD845", sessionId: "s", transportId: "t", mediaSessionId: 1, contentId: "x")
        snapshot.devices["b"] = .init(appId: "CC1AD845", sessionId: nil, transportId: nil, mediaSessionId: nil, contentId: nil,
                                      loadedByBridge: true)
        file.save(snapshot)
        #expect(file.load() == snapshot)
        #expect(file.entriesEncoded == 2)
    }
}
