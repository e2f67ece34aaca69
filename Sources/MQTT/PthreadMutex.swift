#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A pthread mutex for the connection's `io` lock, which the network thread holds across its loop
/// (released only around its waits) and publishers take with `tryLock`: that is why this is a
/// lock/unlock type and not a closure-scoped one like `Mutex`, which guards every other value
/// in this module.
final class PthreadMutex: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
    /// True when the mutex was free and is now held by the caller.
    func tryLock() -> Bool { pthread_mutex_trylock(mutex) == 0 }
}
