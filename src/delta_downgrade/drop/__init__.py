"""The drop's transaction, below the features and rewrites that write through it: the run
(:mod:`.run`), the plan (:mod:`.plan`) and the validation (:mod:`.validation`)."""
