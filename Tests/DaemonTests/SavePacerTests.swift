import Testing

@testable import cast2mqtt

/// State files: written at once after a change, then at most once a second while changes keep
/// coming, and at shutdown whatever is pending.
@Suite struct SavePacerTests {
    @Test func writesAtOnceThenAtMostOncePerInterval() {
        var pacer = SavePacer(interval: .seconds(1))
        let t0 = ContinuousClock.now
        var written = pacer.take(now: t0)
        #expect(!written, "nothing changed yet")
        pacer.changed()
        written = pacer.take(now: t0)
        #expect(written, "the first change is written at once")
        written = pacer.take(now: t0)
        #expect(!written, "and only once")
        // A burst of changes within the second: none written until the interval has passed.
        var early = 0
        for i in 1...1000 {
            pacer.changed()
            if pacer.take(now: t0.advanced(by: .microseconds(i * 900))) { early += 1 }
        }
        #expect(early == 0)
        #expect(pacer.pending)
        written = pacer.take(now: t0.advanced(by: .seconds(1)))
        #expect(written, "the next tick writes the burst once")
        #expect(!pacer.pending)
        written = pacer.take(now: t0.advanced(by: .seconds(5)))
        #expect(!written)
    }

    @Test func shutdownWritesWhatIsPending() {
        var pacer = SavePacer(interval: .seconds(1))
        let t0 = ContinuousClock.now
        pacer.changed()
        var written = pacer.take(now: t0)
        #expect(written)
        pacer.changed()
        written = pacer.take(now: t0.advanced(by: .milliseconds(10)))
        #expect(!written)
        written = pacer.take(now: t0.advanced(by: .milliseconds(20)), force: true)
        #expect(written)
        written = pacer.take(now: t0.advanced(by: .milliseconds(30)), force: true)
        #expect(!written, "nothing left to write")
    }
}
