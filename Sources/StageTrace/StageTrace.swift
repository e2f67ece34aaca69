#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Points on the command and status paths, in the order an input passes them.
public enum Stage: UInt8, Sendable, CaseIterable {
    // A command: MQTT in → Cast out.
    /// libmosquitto's socket polled readable (the MQTT thread is awake).
    case mqttReadable = 1
    /// libmosquitto has parsed a PUBLISH and called back.
    case mqttDelivered = 2
    /// The message is in the input queue (the core's loop woken if it slept).
    case mqttQueued = 3
    /// The core's loop took it from the queue.
    case commandTaken = 4
    /// The Cast messages of a device are written to its channel (encoded, not yet flushed).
    case castWritten = 5
    /// The channel was flushed: TLS-sealed and handed to the kernel.
    case castFlushed = 6
    // A status: Cast in → MQTT out.
    /// Bytes read from a device's socket, before TLS.
    case castRead = 11
    /// One Cast message decoded (TLS opened, frame and protobuf read).
    case castDecoded = 12
    /// The device's snapshot is in the input queue.
    case snapshotQueued = 13
    /// The core's loop took a snapshot from the queue.
    case snapshotTaken = 14
    /// A publication handed to libmosquitto ...
    case publishing = 15
    /// ... and back (written to the socket when the MQTT thread was idle).
    case published = 16
    // Both.
    /// The core starts handling an input ...
    case coreStart = 20
    /// ... and returns its output.
    case coreEnd = 21
}

/// Optional timestamps at the stages of the command and status paths, for `scripts/bench e2e
/// --parts hops --stages`: with `CAST2MQTT_STAGE_TRACE=<file>` in the environment, every `mark`
/// records (stage, CLOCK_REALTIME ns) into a preallocated buffer (a million marks, then it stops
/// recording) and `flush()` (at shutdown) writes them as "stage nanoseconds" lines. Without the
/// variable a mark is one load and one branch.
public enum StageTrace {
    private static let path: String? = getenv("CAST2MQTT_STAGE_TRACE").map { String(cString: $0) }
    public static let enabled: Bool = path != nil

    @inline(__always)
    public static func mark(_ stage: Stage) {
        if enabled { Recorder.shared.record(stage) }
    }

    /// Writes what was recorded to the file named by the environment (appending); no-op when off.
    public static func flush() {
        guard let path else { return }
        Recorder.shared.write(to: path)
    }

    /// `@unchecked Sendable`: `count` and the buffers' contents are touched only under `lock`
    /// (a mutex at a fixed address, allocated once; the recorder lives as long as the process).
    private final class Recorder: @unchecked Sendable {
        static let shared = Recorder()
        private let capacity = 1 << 20
        private let stages: UnsafeMutablePointer<UInt8>
        private let times: UnsafeMutablePointer<Int64>
        private var count = 0
        private let lock: UnsafeMutablePointer<pthread_mutex_t>

        private init() {
            stages = .allocate(capacity: capacity)
            times = .allocate(capacity: capacity)
            lock = .allocate(capacity: 1)
            lock.initialize(to: pthread_mutex_t())
            pthread_mutex_init(lock, nil)
        }

        func record(_ stage: Stage) {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let ns = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
            pthread_mutex_lock(lock)
            if count < capacity {
                stages[count] = stage.rawValue
                times[count] = ns
                count += 1
            }
            pthread_mutex_unlock(lock)
        }

        func write(to path: String) {
            pthread_mutex_lock(lock)
            defer { pthread_mutex_unlock(lock) }
            guard count > 0, let file = fopen(path, "a") else { return }
            for i in 0..<count { fputs("\(stages[i]) \(times[i])\n", file) }
            fclose(file)
            count = 0
        }
    }
}
