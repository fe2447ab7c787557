"""Experiments over many runs or units of work: sweeps, tuning, the unlearning experiment, the privacy audit and
certification jobs, with the journal and progress that let a long one resume from disk."""
