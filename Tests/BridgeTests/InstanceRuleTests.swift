import Foundation
import Testing
@testable import Bridge

/// The rule that names a device's owner among instances (Instances/InstanceRule.swift).
@Suite struct InstanceRuleTests {
    let device = tvID

    /// The hash is a fixed function of its input: the same in every process, run and platform
    /// (these values were computed by an independent implementation, in Python).
    @Test func hashIsStableAcrossProcesses() {
        #expect(InstanceRule.hash(instance: "alpha", device: device) == 0x92bc_73ea_c8d2_ff57)
        #expect(InstanceRule.hash(instance: "beta", device: device) == 0x1289_d0fb_0e1e_b28e)
        #expect(InstanceRule.hash(instance: "", device: "") == 0x71b8_262b_b6e2_e086)
    }

    @Test func rendezvousPicksTheHighestHashWhateverTheOrder() {
        let a = InstanceRule.owner(device: device, candidates: ["alpha", "beta", "gamma"], holder: nil)
        let b = InstanceRule.owner(device: device, candidates: ["gamma", "alpha", "beta"], holder: nil)
        let best = ["alpha", "beta", "gamma"].max { InstanceRule.hash(instance: $0, device: device) < InstanceRule.hash(instance: $1, device: device) }
        #expect(a == best)
        #expect(b == best)
        #expect(InstanceRule.owner(device: device, candidates: [String](), holder: nil) == nil)
    }

    @Test func preferenceComesFirstThenTheHolderThenTheHash() {
        let all = ["alpha", "beta", "gamma"]
        // The first preferred candidate, even over the holder.
        #expect(InstanceRule.owner(device: device, candidates: all, holder: "alpha", prefer: ["zeta", "gamma", "beta"]) == "gamma")
        // No preferred candidate: the holder keeps it (sticky).
        #expect(InstanceRule.owner(device: device, candidates: all, holder: "beta", prefer: ["zeta"]) == "beta")
        #expect(InstanceRule.owner(device: device, candidates: all, holder: "gamma") == "gamma")
        // A holder that is no candidate (gone, or cannot reach the device) does not count.
        let hashed = InstanceRule.owner(device: device, candidates: all, holder: nil)
        #expect(InstanceRule.owner(device: device, candidates: all, holder: "omega") == hashed)
    }

    @Test func equalHashesGoToTheLowerName() {
        let owner = InstanceRule.owner(device: device, candidates: ["beta", "alpha", "gamma"], holder: nil, hash: { _, _ in 7 })
        #expect(owner == "alpha")
    }

    /// Rendezvous hashing spreads devices evenly and, when an instance goes, moves only its own.
    @Test func spreadIsEvenAndOnlyTheLostInstancesDevicesMove() {
        let ids = (0..<3000).map { String(format: "%032x", $0 &* 2_654_435_761) }
        let three = ["alpha", "beta", "gamma"]
        var count: [String: Int] = [:]
        var before: [String: String] = [:]
        for id in ids {
            let owner = InstanceRule.owner(device: id, candidates: three, holder: nil) ?? ""
            before[id] = owner
            count[owner, default: 0] += 1
        }
        for name in three { #expect((800...1200).contains(count[name] ?? 0), "\(name): \(count[name] ?? 0)") }
        for id in ids where before[id] != "beta" {
            #expect(InstanceRule.owner(device: id, candidates: ["alpha", "gamma"], holder: nil) == before[id])
        }
    }

    @Test func primaryIsTheConfiguredOneWhileLiveElseTheLowestName() {
        #expect(InstanceRule.primary(live: ["beta", "alpha"], configured: nil) == "alpha")
        #expect(InstanceRule.primary(live: ["beta", "alpha"], configured: "beta") == "beta")
        #expect(InstanceRule.primary(live: ["gamma", "alpha"], configured: "beta") == "alpha")
        #expect(InstanceRule.primary(live: [String](), configured: nil) == nil)
    }

    @Test func namesAreChecked() {
        #expect(InstanceRule.isValidName("upstairs-1_b"))
        for bad in ["", "a/b", "a+", "#", "é", String(repeating: "a", count: 65), "a b"] {
            #expect(!InstanceRule.isValidName(bad), "\(bad)")
        }
    }
}
