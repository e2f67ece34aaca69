import Testing

@Test func MQTTPlaceholder() {}
