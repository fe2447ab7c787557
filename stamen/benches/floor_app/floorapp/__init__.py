"""The Flower floor: a ServerApp and ClientApp that exchange NumPy weights and do nothing else."""
