print("LoopDemo")
