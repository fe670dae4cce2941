print("aic")
