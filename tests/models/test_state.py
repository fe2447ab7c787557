"""copy_state: load_state_dict's outcome, its errors included, copied in place where that is all it does."""

import pytest
import torch

from stamen.models import build_model
from stamen.models.state import copy_state


def _gcn() -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model("gcn", 12, 3, hidden=8, num_layers=2, dropout=0.5)


def test_the_model_holds_the_given_tensors_in_its_own_parameters():
    model, other = _gcn(), _gcn()
    with torch.no_grad():
        for param in other.parameters():
            param.add_(1.0)
    params = list(model.parameters())
    copy_state(model, other.state_dict())
    assert all(a is b for a, b in zip(params, model.parameters()))  # in place: an optimizer over them still applies
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), other.state_dict().values()))


def test_a_missing_key_or_a_wrong_shape_gets_load_state_dicts_error():
    model, state = _gcn(), _gcn().state_dict()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(RuntimeError, match="Missing key"):
        copy_state(model, {k: v for k, v in state.items() if k != "head.bias"})
    with pytest.raises(RuntimeError, match="size mismatch"):
        copy_state(model, {**state, "head.bias": torch.zeros(4)})
    with pytest.raises(RuntimeError, match="size mismatch"):  # (1,) would broadcast in a plain copy
        copy_state(model, {**state, "head.bias": torch.zeros(1)})
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_a_module_with_load_hooks_is_loaded_by_load_state_dict():
    model, state = _gcn(), _gcn().state_dict()
    seen = []
    model.head.register_load_state_dict_pre_hook(lambda *args: seen.append(args[2]))
    copy_state(model, state)
    assert seen == ["head."]
