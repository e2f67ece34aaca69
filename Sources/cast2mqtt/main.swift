print("cast2mqtt: not yet")
