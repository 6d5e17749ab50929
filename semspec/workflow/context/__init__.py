"""Context management: assembler, budget, runtime monitor, checkpoint, token estimator."""
