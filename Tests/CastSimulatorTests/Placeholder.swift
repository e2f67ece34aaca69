import Testing

@Test func CastSimulatorPlaceholder() {}
