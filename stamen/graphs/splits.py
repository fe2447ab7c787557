"""Per-client train / validation / test splits, deterministic by seed."""

from __future__ import annotations

import torch


def split_masks(
    num_nodes: int, train_frac: float, val_frac: float, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random disjoint train/val/test boolean masks over ``num_nodes`` nodes.

    The test set takes what train and validation leave. Sizes are rounded down,
    except that a client with at least three nodes gets at least one of each.
    """
    if not (0 < train_frac < 1 and 0 <= val_frac < 1 and train_frac + val_frac < 1):
        raise ValueError(
            f"split fractions need 0 < train-frac, 0 <= val-frac and train-frac + val-frac < 1, "
            f"got {train_frac} and {val_frac}"
        )
    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(num_nodes, generator=generator)
    num_train = int(train_frac * num_nodes)
    num_val = int(val_frac * num_nodes)
    if num_nodes >= 3:
        num_train = max(num_train, 1)
        num_val = max(num_val, 1 if val_frac > 0 else 0)
    masks = []
    for start, stop in ((0, num_train), (num_train, num_train + num_val), (num_train + num_val, num_nodes)):
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[order[start:stop]] = True
        masks.append(mask)
    return masks[0], masks[1], masks[2]
