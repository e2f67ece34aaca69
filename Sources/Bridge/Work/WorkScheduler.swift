import CastProtocol
import Foundation

/// Who sent a command and where its one response goes.
struct CommandContext: Sendable, Hashable {
    var name: String
    var id: JSONValue?
    /// The resolved response topic (MQTT 5 Response Topic, else the default).
    var responseTopic: String
    var correlationData: [UInt8]?
    /// When the command arrived (for the command-latency metric of `BridgeOutput.outcomes`).
    var receivedAt: Date
    /// A command still waiting at this time is answered `timeout` and never sent (`expires`).
    var expires: Date?
}

/// Why an operation was requested; decides what happens when it completes.
enum Purpose: Sendable, Hashable {
    /// Bridge-internal status reads: no response.
    case internalQuery
    /// A single-operation command: respond with `data` built from the resulting state.
    case command(CommandContext, DeviceCommand)
    /// `refresh` (a command, or for `bridge/request/refresh` without one): receiver GET_STATUS,
    /// then media GET_STATUS when an app that speaks media runs.
    case refresh(CommandContext?, mediaDone: Bool)
    case transfer(TransferJob.ID)
    case announce(AnnounceJob.ID)
    /// A step of a device's keep (Jobs/Keep.swift).
    case keep(KeepStep)
}

/// An operation handed to a device and not completed yet.
struct PendingOperation: Sendable {
    var deviceID: DeviceID
    var deadline: Date
    var purpose: Purpose
}

/// Work that waits for a device's running operation to finish.
enum QueuedWork: Sendable {
    /// An MQTT command, planned only when its turn comes (so a relative volume or seek starts
    /// from the state the previous operation left).
    case command(DeviceCommand, CommandContext)
    /// A step of the bridge's own (the next step of a refresh, transfer or announcement).
    case step(CastOperationKind, Purpose, timeout: Double?)
}

/// Per-device order: the Cast operations of one device are carried out one at a time, in the
/// order their work arrived; devices run in parallel. Owns the devices' lanes (the operation in
/// flight, the work waiting), every pending operation's deadline, and the startup hold.
///
/// Every kind of waiting work is bounded: at most `maxWaitingCommands` commands wait per device
/// (one more is answered `busy`); a job (transfer, announcement) has at most one step waiting
/// at a time and jobs come from commands; a bridge-wide refresh waits at most once per device.
struct WorkScheduler: Sendable {
    /// Commands that may wait for a busy device; past this a command is answered `busy`.
    static let maxWaitingCommands = 64

    struct Lane: Sendable {
        var inFlight: OperationToken?
        var waiting: [QueuedWork] = []
        var waitingCommands: Int { waiting.reduce(0) { n, w in if case .command = w { return n + 1 } else { return n } } }
    }

    let requestTimeout: Double
    private(set) var lanes: [DeviceID: Lane] = [:]
    private var pending: [OperationToken: PendingOperation] = [:]
    private var nextToken: UInt64 = 1
    /// Commands answered `busy` because their device's queue was full.
    private(set) var busyRejections = 0
    private var hold: StartupHold

    init(requestTimeout: Double, startedAt: Date) {
        self.requestTimeout = requestTimeout
        self.hold = StartupHold(startedAt: startedAt)
    }

    // MARK: - The startup hold (StartupHold.swift)

    /// Holds a command for a device that has not been online yet while the bridge starts; true
    /// when held. `devices`: how many the bridge knows (the hold's bound grows with them).
    mutating func holdAtStartup(_ command: StartupHold.Held, everOnline: Bool, devices: Int, now: Date) -> Bool {
        hold.hold(command, everOnline: everOnline, devices: devices, now: now)
    }

    /// The startup window has closed (for good).
    var startupHoldClosed: Bool { hold.closing != nil }

    /// Closes the startup window when it may (`StartupHold.close`); how it closed, once.
    mutating func closeStartupHold(now: Date, connecting: () -> Bool) -> StartupHold.Closing? {
        hold.close(now: now, connecting: connecting)
    }

    /// The held commands of `device` (it came online), or all of them once the window closed.
    mutating func releaseHeld(device: String?, now: Date) -> [StartupHold.Held] { hold.release(device: device, now: now) }

    /// Commands held now.
    var heldCount: Int { hold.count }

    /// Operations in flight now.
    var inFlightCount: Int { pending.count }

    /// True when the device has an operation in flight or work waiting.
    func isBusy(_ id: DeviceID) -> Bool {
        guard let lane = lanes[id] else { return false }
        return lane.inFlight != nil || !lane.waiting.isEmpty
    }

    /// Work waiting behind running operations, over every device (metrics).
    var waitingCount: Int { lanes.values.reduce(0) { $0 + $1.waiting.count } }

    /// Starts an operation on a device now, or queues it behind the device's running one (nil).
    mutating func enqueue(_ device: DeviceID, _ kind: CastOperationKind, purpose: Purpose, now: Date,
                          timeout: Double? = nil) -> CastOperation? {
        if lanes[device]?.inFlight != nil {
            lanes[device, default: Lane()].waiting.append(.step(kind, purpose, timeout: timeout))
            return nil
        }
        let token = OperationToken(nextToken)
        nextToken += 1
        lanes[device, default: Lane()].inFlight = token
        let seconds = timeout ?? requestTimeout
        // The I/O side bounds every Cast request by `request_timeout`; an operation of several
        // requests (launch, then load) gets that much per step, plus a second so that the
        // device-side error, when there is one, arrives before our own timeout.
        let deadline = seconds * Double(kind.castSteps) + 1
        pending[token] = PendingOperation(deviceID: device, deadline: now.addingTimeInterval(deadline), purpose: purpose)
        return CastOperation(token: token, deviceID: device, kind: kind, timeout: .seconds(clamping: seconds))
    }

    enum Admission { case ready, queued, busy(rejections: Int) }

    /// A command for an online device: runs now when the device is free, else waits (or `busy`).
    mutating func admit(_ command: DeviceCommand, device: DeviceID, _ ctx: CommandContext) -> Admission {
        guard isBusy(device) else { return .ready }
        let waiting = lanes[device]?.waitingCommands ?? 0
        guard waiting < Self.maxWaitingCommands else {
            busyRejections += 1
            return .busy(rejections: busyRejections)
        }
        lanes[device, default: Lane()].waiting.append(.command(command, ctx))
        return .queued
    }

    /// A bridge-wide refresh for a device, unless one already waits for it (nil: none to start now).
    mutating func refresh(_ device: DeviceID, now: Date) -> CastOperation? {
        let alreadyWaiting = lanes[device]?.waiting.contains { work in
            if case .step(_, .refresh(nil, _), _) = work { return true } else { return false }
        } ?? false
        guard !alreadyWaiting else { return nil }
        return enqueue(device, .getReceiverStatus, purpose: .refresh(nil, mediaDone: false), now: now)
    }

    /// Forgets a pending operation and frees its device for the next one.
    mutating func complete(_ token: OperationToken) -> PendingOperation? {
        guard let op = pending.removeValue(forKey: token) else { return nil }
        if lanes[op.deviceID]?.inFlight == token { lanes[op.deviceID]?.inFlight = nil }
        return op
    }

    /// The next waiting work of a free device (nil while it runs an operation or nothing waits).
    mutating func next(_ device: DeviceID) -> QueuedWork? {
        guard let lane = lanes[device], lane.inFlight == nil else { return nil }
        guard !lane.waiting.isEmpty else {
            lanes[device] = nil  // idle: no lane kept for it
            return nil
        }
        return lanes[device]?.waiting.removeFirst()
    }

    /// Pending operations past their deadline, forgotten (their devices are free).
    mutating func expiredOperations(now: Date) -> [PendingOperation] {
        pending.keys.sorted().compactMap { token in
            guard let op = pending[token], op.deadline <= now else { return nil }
            return complete(token)
        }
    }

    /// Waiting commands past their `expires`, removed from their queues.
    mutating func expiredCommands(now: Date) -> [CommandContext] {
        var expired: [CommandContext] = []
        for device in lanes.keys.sorted() {
            lanes[device]?.waiting.removeAll { work in
                guard case .command(_, let ctx) = work, let expires = ctx.expires, expires <= now else { return false }
                expired.append(ctx)
                return true
            }
        }
        return expired
    }

    /// The pending operations of a device, forgotten (it went offline or was removed).
    mutating func abandonOperations(of device: DeviceID) -> [PendingOperation] {
        pending.keys.sorted().compactMap { token in pending[token]?.deviceID == device ? complete(token) : nil }
    }

    /// Removes and returns the first waiting work of a device, running or not (draining).
    mutating func popWaiting(_ device: DeviceID) -> QueuedWork? {
        guard lanes[device]?.waiting.isEmpty == false else { return nil }
        return lanes[device]?.waiting.removeFirst()
    }

    /// Removes the waiting steps of a device that serve `purpose` (a job that ended early).
    mutating func dropSteps(_ device: DeviceID, of purpose: Purpose) {
        lanes[device]?.waiting.removeAll { work in
            if case .step(_, let p, _) = work { return p == purpose } else { return false }
        }
    }

    /// Every pending operation, forgotten (shutdown).
    mutating func abandonAll() -> [PendingOperation] {
        pending.keys.sorted().compactMap { complete($0) }
    }

    var deviceIDsWithWork: [DeviceID] { lanes.keys.sorted() }
}
