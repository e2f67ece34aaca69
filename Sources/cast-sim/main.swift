print("cast-sim: not yet")
