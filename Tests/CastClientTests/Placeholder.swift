import Testing

@Test func CastClientPlaceholder() {}
