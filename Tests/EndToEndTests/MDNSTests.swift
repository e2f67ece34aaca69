import CastProtocol
import Foundation
import MQTT
import Testing
import TestSupport

/// The whole path over mDNS: `cast-sim --mdns` announces a device through avahi-daemon (started
/// on the loopback interface by scripts/test), the daemon discovers it, connects, and forgets
/// it when the announcement goes away.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct EndToEndMDNSTests {
    @Test func deviceAnnouncedOverMDNSAppearsAndDisappears() async throws {
        try AvahiTestDaemon.requireRunning()
        let name = "Mdns Test \(UUID().uuidString.prefix(6))"
        let slug = name.lowercased().replacingOccurrences(of: " ", with: "_")
        let port = try FreePort.tcp()
        let sim = try ManagedProcess(try builtExecutable("cast-sim"), ["--mdns", "--device", "\(name):\(port)"],
                                     logName: "cast-sim-mdns")
        defer { sim.stop() }
        try await withBridge(devices: [], mdnsName: name) { h in

            let online = await h.observer.wait(h.topic(slug, "availability"), timeout: .seconds(30)) { $0 == "online" }
            #expect(online != nil, "not discovered over mDNS; cast-sim:\n\(sim.output.suffix(2000))\nbridge:\n\(h.log.suffix(3000))")
            let info = await h.observer.waitJSON(h.topic(slug, "info")) { $0["source"]?.stringValue == "mdns" }
            #expect(info?["port"]?.intValue == port)
            // The type comes from what the device announces (its `ca` capabilities: video out),
            // not from its port: a simulator on a free port is a video device, not a group.
            #expect(info?["cast_type"]?.stringValue == "video")
            let reply1 = try await h.command(slug, "volume", "25")
            #expect(reply1.status == "ok")

            // The device goes away, announcement and all (unplugged): it goes offline but is
            // not removed, keeps its Home Assistant entities, and comes back when announced again.
            sim.stop()
            #expect(await h.observer.wait(h.topic(slug, "availability"), timeout: .seconds(20)) { $0 == "offline" } != nil)
            let again = try ManagedProcess(try builtExecutable("cast-sim"), ["--mdns", "--device", "\(name):\(port)"],
                                           logName: "cast-sim-mdns-again")
            defer { again.stop() }
            let back = await h.observer.wait(h.topic(slug, "availability"), timeout: .seconds(30)) { $0 == "online" }
            #expect(back != nil, "not back online; bridge:\n\(h.log.suffix(3000))")
            // Never removed meanwhile: a removal on the goodbye would have been published before
            // the device was back.
            #expect(!h.observer.messages(on: "cast2mqtt/bridge/event").contains {
                String(decoding: $0.payload, as: UTF8.self).contains("device_removed")
            })
            #expect(!h.observer.messages.contains { $0.topic.hasPrefix("homeassistant/") && $0.payload.isEmpty })
        }
    }
}
