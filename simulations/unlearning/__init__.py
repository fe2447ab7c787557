"""The in-process unlearning experiment: the app's engine and the server's unlearning flow over an
in-process grid, several seeds, retraining as the yardstick (:mod:`~simulations.unlearning.harness`),
and the figures and targets over seeds (:mod:`~simulations.unlearning.targets`)."""
