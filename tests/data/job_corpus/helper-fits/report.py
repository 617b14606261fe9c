print("folds summarised")
