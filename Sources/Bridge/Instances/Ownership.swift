import CastProtocol
import Foundation

/// One instance's view of the instances and claims on its base topic, and what it holds
/// (mqtt-api.md §10; docs/scaling.md). A pure value: the core feeds it what arrives from the
/// broker, in the broker's order, and carries out what it answers (`OwnershipEffects`). It never
/// reads a clock and does no I/O.
///
/// A device this instance holds is, in turn:
/// - `claiming(epoch)`: its claim is out, not read back yet (no connection, no publishing);
/// - `confirmed(epoch)`: its claim came back as the retained value: connect, publish, run commands;
/// - `gated(epoch)`: it was confirmed, then the broker connection was lost or the process was
///   frozen; nothing is published and no command runs until the device's current claim has been
///   received again and this instance's own document has come back (`confirmAfterGate`).
public struct Ownership: Sendable {
    public enum Holding: Sendable, Hashable {
        case claiming(Int), confirmed(Int), gated(Int)
        var epoch: Int {
            switch self {
            case .claiming(let e), .confirmed(let e), .gated(let e): return e
            }
        }
    }

    /// What a command for a device is to this instance, decided when it arrives (the broker's order).
    public enum CommandDecision: Sendable, Hashable {
        /// This instance owns the device (confirmed): run it now.
        case run
        /// This instance is taking the device (or will, by the rule): hold it until it owns the
        /// device and it is online, or answer `busy` with `retry_after` past the bound.
        case hold
        /// Another live instance owns it, or the rule names another: not ours to answer.
        case ignore
    }

    public let me: String
    let base: String
    let version: String
    let started: Date
    let willDelay: Int
    let configuredPrimary: String?
    /// Seconds after this instance's own document came back `online` before it claims devices
    /// nobody claims.
    public static let settle: TimeInterval = 2
    /// The instance document is republished at most this often when its device set changes.
    public static let documentInterval: TimeInterval = 1

    /// Every instance document received (the own one only once read back).
    private(set) var documents: [String: InstanceDocument] = [:]
    /// The newest claim seen per device (by epoch, ties to the lower name) and the last one
    /// received (the broker's retained value).
    private(set) var claims: [DeviceID: Claim] = [:]
    private var retained: [DeviceID: Claim] = [:]
    /// What this instance holds.
    private(set) var holding: [DeviceID: Holding] = [:]
    /// Devices the daemon has connected (told by `connect`, until `release`).
    private var connected: Set<DeviceID> = []
    /// The devices taken over from another instance, by that instance: when it comes back, what
    /// its libmosquitto resent from before its freeze is overwritten (docs/scaling.md).
    private var takenFrom: [DeviceID: String] = [:]
    /// The last other instance whose claim for a device was received, and, for a device this
    /// instance was confirmed for after such a claim, that instance: it may have published the
    /// device's topics while it held its own claim confirmed (two claims of one epoch, each read
    /// back before the other), and those can reach the broker after the owner's. Its next
    /// instance document, which it publishes after letting a device go (after those topics, on
    /// the same connection), makes the owner publish the device's topics again.
    private var lastForeignClaim: [DeviceID: String] = [:]
    private var contested: [DeviceID: String] = [:]
    /// This instance's reach: device → quality.
    private(set) var reach: [DeviceID: Double] = [:]
    /// Preference lists by device id.
    private var prefer: [DeviceID: [String]] = [:]
    /// When the own `online` document came back (nil: not yet since the last connect or freeze).
    private(set) var onlineSince: Date?
    /// After a connect or a freeze: every holding is gated until the own document comes back.
    private var gated = true
    private(set) var stopping = false
    /// The own `stopping` document came back: from here on this instance answers nothing that
    /// another instance can take.
    private(set) var stoppingSeen = false
    private var documentDirty = true
    /// Bumped at every connect and freeze; see `InstanceDocument.seq`.
    private var documentSeq = 0
    private var lastDocument: Date?
    private var settlePending = false
    /// Instances whose malformed messages were logged (once each).
    private var malformedLogged: Set<String> = []

    public init(me: String, base: String, version: String, started: Date, willDelay: Int, primary: String?) {
        self.me = me
        self.base = base
        self.version = version
        self.started = started
        self.willDelay = willDelay
        self.configuredPrimary = primary
    }

    // MARK: - Topics

    public var instancesPrefix: String { "\(base)/bridge/instances/" }
    public var claimsPrefix: String { "\(base)/bridge/claims/" }
    public var documentTopic: String { instancesPrefix + me }
    public var subscriptions: [String] { [instancesPrefix + "+", claimsPrefix + "+"] }

    // MARK: - Queries

    /// The live instances: document present and `online`.
    public var live: [String] { documents.filter { $0.value.state == .online }.keys.sorted() }

    /// The live instances that reach `id`.
    func candidates(_ id: DeviceID) -> [String] {
        documents.compactMap { name, doc in doc.state == .online && (doc.devices[id] ?? 0) > 0 ? name : nil }
    }

    /// The owner the rule names for `id` now.
    public func ruleOwner(_ id: DeviceID) -> String? {
        InstanceRule.owner(device: id, candidates: candidates(id), holder: claims[id]?.owner, prefer: prefer[id] ?? [])
    }

    /// The owner of a device: the holder of its newest claim.
    public func owner(_ id: DeviceID) -> String? { claims[id]?.owner }

    /// True while this instance may publish for, and run commands on, `id`.
    public func owns(_ id: DeviceID) -> Bool {
        if case .confirmed? = holding[id] { return true }
        return false
    }

    public var isPrimary: Bool { InstanceRule.primary(live: live, configured: configuredPrimary) == me }

    /// Every device claimed, with its owner (bridge/devices, the web page).
    public var owners: [DeviceID: String] { claims.mapValues(\.owner) }

    public func decide(_ id: DeviceID) -> CommandDecision {
        let live = documents[me]?.state == .online
        switch holding[id] {
        case .confirmed?:
            if !stoppingSeen || candidates(id).allSatisfy({ $0 == me }) { return .run }
        case .claiming?, .gated?:
            // Still live in everyone's view (its document is there): the command is this
            // instance's to answer, once it knows whether it still owns the device.
            if live { return .hold }
        case nil:
            break
        }
        let owner = claims[id]?.owner
        if let owner, owner != me, documents[owner]?.state == .online { return .ignore }
        let next = ruleOwner(id)
        // The rule's next owner takes it; with no candidate at all, the holder of the claim.
        if next == me || (next == nil && owner == me) { return .hold }
        return .ignore
    }

    /// After `stop`: every device this instance holds has been taken by another, or none other can
    /// take it (then it keeps it to the end).
    public var handedOver: Bool {
        stoppingSeen && holding.keys.allSatisfy { id in candidates(id).allSatisfy { $0 == me } }
    }

    // MARK: - Inputs

    /// The broker connection is (again) up: every holding is gated until the own document (the
    /// one just published: `seq`) comes back, and the claims received by then decide.
    ///
    /// The tables are kept: the session is persistent, so what changed while this instance was
    /// away (a will, a newer claim) arrives in order, and the restored subscriptions deliver the
    /// retained values again before the own document comes back.
    public mutating func connected(now: Date) -> OwnershipEffects {
        gate(now: now, "the broker connection is (re)established")
    }

    /// The process was frozen longer than the keepalive (a monotonic-clock gap): the broker has
    /// probably fired the will; hold everything until the claims say what is still ours.
    public mutating func resumed(now: Date, gap: TimeInterval) -> OwnershipEffects {
        gate(now: now, "the process was frozen for \(Int(gap)) s")
    }

    private mutating func gate(now: Date, _ why: String) -> OwnershipEffects {
        var fx = OwnershipEffects()
        if !holding.isEmpty { fx.logs.append("\(why): holding \(holding.count) devices until their claims are confirmed") }
        gated = true
        onlineSince = nil
        // A claim not read back may never have reached the broker: the rule decides again.
        holding = holding.filter { if case .claiming = $0.value { return false }; return true }
        for (id, h) in holding { holding[id] = .gated(h.epoch) }
        documentSeq += 1
        documentDirty = true
        publishDocument(now: now, force: true, &fx)
        return fx
    }

    /// This instance's reach of a device changed (discovered, connected, removed: quality 0).
    public mutating func reach(_ id: DeviceID, quality: Double, prefer list: [String], now: Date) -> OwnershipEffects {
        var fx = OwnershipEffects()
        if list.isEmpty { prefer.removeValue(forKey: id) } else { prefer[id] = list }
        let old = reach[id] ?? 0
        if quality > 0 { reach[id] = quality } else { reach.removeValue(forKey: id) }
        if old != quality {
            documentDirty = true
            publishDocument(now: now, force: false, &fx)
        }
        return fx
    }

    /// A message on `<base>/bridge/instances/<name>` (empty: cleared).
    public mutating func documentReceived(_ name: String, _ payload: [UInt8], now: Date) -> OwnershipEffects {
        var fx = OwnershipEffects()
        guard InstanceRule.isValidName(name) else { return fx }
        let before = documents[name]
        if payload.isEmpty {
            documents.removeValue(forKey: name)
            if before != nil { fx.logs.append("instance \(name) is gone") }
        } else {
            switch InstanceDocument.parse(payload) {
            case .failure(let error):
                if malformedLogged.insert("doc:" + name).inserted {
                    fx.logs.append("ignoring the instance document of \(name): \(error) (logged once)")
                }
                return fx
            case .success(let doc):
                documents[name] = doc
                if before?.state != doc.state { fx.logs.append("instance \(name) is \(doc.state.rawValue)") }
            }
        }
        if name == me { ownDocumentReceived(documents[name], now: now, &fx) }
        if name != me, before == nil, documents[name] != nil {
            // Back after a will (or a freeze): overwrite what its libmosquitto may have resent.
            let back = takenFrom.filter { $0.value == name }.map(\.key)
            for id in back where owns(id) && !fx.refresh.contains(id) { fx.refresh.append(id) }
            for id in back { takenFrom.removeValue(forKey: id) }
        }
        if name != me, documents[name] != nil, contested.values.contains(name) {
            // An instance that contested a device this one owns has published since it let the
            // device go: what it published before is overwritten.
            for (id, other) in contested.sorted(by: { $0.key < $1.key }) where other == name {
                if owns(id), !fx.refresh.contains(id) { fx.refresh.append(id) }
                contested.removeValue(forKey: id)
            }
        }
        fx.primary = isPrimary
        evaluateAll(now: now, &fx)
        return fx
    }

    private mutating func ownDocumentReceived(_ doc: InstanceDocument?, now: Date, _ fx: inout OwnershipEffects) {
        guard let doc else {
            // Cleared while this instance runs (a will fired during a freeze, or someone cleared
            // it): say it again, and hold everything until it is back.
            if !stopping {
                let again = gate(now: now, "this instance's document was cleared (its will fired)")
                fx.publications += again.publications
                fx.logs += again.logs
            }
            return
        }
        if doc.state == .stopping {
            stoppingSeen = true
            return
        }
        // Only the document published last counts (not a copy queued before a reconnect).
        guard doc.seq == documentSeq else { return }
        if onlineSince == nil { onlineSince = now }
        guard gated else { return }
        gated = false
        // The claims received since the connect are the broker's retained values.
        for (id, h) in holding.sorted(by: { $0.key < $1.key }) {
            // The last claim received is this instance's (the newest, or an echo of an older one
            // it said before the newest): still its own.
            if let claim = claims[id], claim.owner == me, retained[id]?.owner == me {
                holding[id] = .confirmed(claim.epoch)
                if connected.contains(id) {
                    // Still ours: its claim and retained topics go out again, as every retained
                    // topic does after a connect (the broker may be another one, or a restarted one).
                    fx.publications.append(claimPublication(id, claim))
                    fx.refresh.append(id)
                } else {
                    connect(id, &fx)
                }
            } else if case .claiming = h {
                continue
            } else {
                fx.logs.append("\(id): no longer ours (claim \(claims[id]?.description ?? "none")); letting it go")
                lose(id, &fx)
            }
        }
    }

    /// A message on `<base>/bridge/claims/<device id>` (empty: cleared).
    public mutating func claimReceived(_ id: DeviceID, _ payload: [UInt8], now: Date) -> OwnershipEffects {
        var fx = OwnershipEffects()
        guard InstanceDocument.isDeviceID(id) else { return fx }
        if payload.isEmpty {
            if claims[id] != nil { fx.ownersChanged = true }
            claims.removeValue(forKey: id)
            retained.removeValue(forKey: id)
            if holding[id] != nil { lose(id, &fx) }
            evaluate(id, now: now, &fx)
            return fx
        }
        let claim: Claim
        switch Claim.parse(payload) {
        case .failure(let error):
            if malformedLogged.insert("claim:" + id).inserted { fx.logs.append("ignoring the claim of \(id): \(error) (logged once)") }
            return fx
        case .success(let c): claim = c
        }
        retained[id] = claim
        if claim.owner != me { lastForeignClaim[id] = claim.owner }
        let previous = claims[id]
        if previous.map({ claim.supersedes($0) || claim == $0 }) ?? true { claims[id] = claim }
        if claims[id]?.owner != previous?.owner { fx.ownersChanged = true }
        guard let best = claims[id] else { return fx }
        if best.owner == me {
            if retained[id] == best {
                if gated {
                    holding[id] = .gated(best.epoch)
                } else {
                    let was = holding[id]
                    if !owns(id) { fx.logs.append("\(id): claimed (epoch \(best.epoch))") }
                    if !owns(id), let other = lastForeignClaim[id] { contested[id] = other }
                    holding[id] = .confirmed(best.epoch)
                    if !connected.contains(id) {
                        connect(id, &fx)
                    } else if !Self.isConfirmed(was) {
                        // Confirmed again while connected (its claim had to be said again): what
                        // the losing instance published meanwhile is overwritten.
                        fx.refresh.append(id)
                    }
                }
            } else if claim.owner != me, !stopping {
                // An older or equal claim of a losing instance overwrote ours at the broker: say
                // ours again, newer, so the retained value is the owner's (once: the claim is
                // the table's when it comes back). An older claim of this instance's own is an
                // echo of what it said before: the newer one follows.
                let e = best.epoch + 1
                if case .claiming(let pending)? = holding[id], pending >= e { return fx }
                holding[id] = .claiming(e)
                fx.publications.append(claimPublication(id, Claim(owner: me, epoch: e)))
            }
        } else if case .claiming(let pending)? = holding[id], pending > best.epoch {
            // This instance is saying a newer claim than the one it sees (made against it, or
            // against an echo of an older one): that claim decides when it comes back, not this.
        } else if holding[id] != nil || connected.contains(id) {
            fx.logs.append("\(id): \(best.owner) claimed it (epoch \(best.epoch)); letting it go")
            lose(id, &fx)
        }
        evaluate(id, now: now, &fx)
        return fx
    }

    /// SIGTERM: say `stopping`; the others take the devices (this instance lets each go when it
    /// sees the newer claim); `handedOver` says when that is done.
    public mutating func stop(now: Date) -> OwnershipEffects {
        var fx = OwnershipEffects()
        stopping = true
        documentDirty = true
        publishDocument(now: now, force: true, &fx)
        return fx
    }

    /// About once a second: a rate-limited document, devices waiting for the settle time.
    public mutating func tick(now: Date) -> OwnershipEffects {
        var fx = OwnershipEffects()
        if documentDirty { publishDocument(now: now, force: false, &fx) }
        if settlePending, let since = onlineSince, now.timeIntervalSince(since) >= Self.settle {
            settlePending = false
            evaluateAll(now: now, &fx)
        }
        return fx
    }

    // MARK: - The rule at work

    private mutating func evaluateAll(now: Date, _ fx: inout OwnershipEffects) {
        var ids = Set(reach.keys)
        ids.formUnion(claims.keys)
        for id in ids.sorted() { evaluate(id, now: now, &fx) }
    }

    /// Claims `id` when the rule names this instance and it does not hold the newest claim.
    private mutating func evaluate(_ id: DeviceID, now: Date, _ fx: inout OwnershipEffects) {
        guard !stopping, !gated, let since = onlineSince, ruleOwner(id) == me else { return }
        let current = claims[id]
        if current?.owner == me { return }
        if case .claiming(let e)? = holding[id], e > (current?.epoch ?? 0) { return }
        if current == nil, now.timeIntervalSince(since) < Self.settle {
            settlePending = true
            return
        }
        let claim = Claim(owner: me, epoch: (current?.epoch ?? 0) + 1)
        if let from = current?.owner { takenFrom[id] = from }
        holding[id] = .claiming(claim.epoch)
        fx.publications.append(claimPublication(id, claim))
        fx.logs.append("\(id): claiming (epoch \(claim.epoch)\(current.map { ", from \($0.owner)" } ?? ""))")
    }

    private static func isConfirmed(_ holding: Holding?) -> Bool {
        if case .confirmed? = holding { return true }
        return false
    }

    private mutating func connect(_ id: DeviceID, _ fx: inout OwnershipEffects) {
        connected.insert(id)
        fx.connect.append(id)
    }

    private mutating func lose(_ id: DeviceID, _ fx: inout OwnershipEffects) {
        // What this instance published for the device is followed by its document (the owner
        // that contested it republishes the device's topics when it reads it).
        if connected.contains(id) { documentDirty = true }
        contested.removeValue(forKey: id)
        holding.removeValue(forKey: id)
        takenFrom.removeValue(forKey: id)
        if connected.remove(id) != nil { fx.release.append(id) }
    }

    private func claimPublication(_ id: DeviceID, _ claim: Claim) -> Publication {
        Publication(topic: claimsPrefix + id, payload: JSONOutput.bytes(claim.json), retain: true)
    }

    private mutating func publishDocument(now: Date, force: Bool, _ fx: inout OwnershipEffects) {
        if !force, let last = lastDocument, now.timeIntervalSince(last) < Self.documentInterval { return }
        documentDirty = false
        lastDocument = now
        let doc = InstanceDocument(state: stopping ? .stopping : .online, version: version, started: started,
                                   willDelay: willDelay, devices: reach, seq: documentSeq)
        fx.publications.append(Publication(topic: documentTopic, payload: JSONOutput.bytes(doc.json), retain: true))
    }
}

/// What the daemon and the core do for an `Ownership` answer.
public struct OwnershipEffects: Sendable {
    /// Instance documents and claims (retained, QoS `mqtt.qos`).
    public var publications: [Publication] = []
    /// Devices this instance now owns (confirmed): connect them.
    public var connect: [DeviceID] = []
    /// Devices this instance lost: close their Cast connections (without stopping the app).
    public var release: [DeviceID] = []
    /// Owned devices whose retained topics must be republished (a stale owner came back).
    public var refresh: [DeviceID] = []
    public var logs: [String] = []
    /// Whether this instance is the primary now (set when it may have changed).
    public var primary: Bool?
    /// A device's owner changed (`bridge/devices` lists the owners).
    public var ownersChanged = false
}
