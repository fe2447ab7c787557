"""The DP-SGD warnings that say nothing to a user are silenced; any other warning still shows."""

import warnings


def test_the_dp_sgd_warnings_that_say_nothing_to_a_user_are_silenced():
    from stamen.models.opacus_quiet import silence_warnings

    with warnings.catch_warnings(record=True) as seen:
        silence_warnings()  # as on import (the test runner resets warning filters per test)
        warnings.warn("Optimal order is the largest alpha. Please expand", UserWarning, stacklevel=1)
        warnings.warn("Full backward hook is firing when gradients are computed", UserWarning, stacklevel=1)
        warnings.warn("another warning", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["another warning"]
