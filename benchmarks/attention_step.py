"""One training step of Part II's encoder with the fused attention kernel against the explicit scores.

Training calls ``scaled_dot_product_attention`` when nothing reads or edits the scores; recording them
(``set_record``) forces the explicit ``softmax(Q K^T / sqrt(d_h)) V``. Prints, for the book's three sequence
lengths (the digits, ListOps, PathFinder), the median step time of each path on one torch thread and
their ratio, measured in this run.
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F

from blindspots.selfpretraining import mini_lra, presets, train

REPEATS, STEPS = 5, 10
CASES = (("digits", 64, 1), ("ListOps", 120, 1), ("PathFinder", 256, 2))  # name, tokens, layers


def step_seconds(length: int, layers: int, explicit: bool) -> float:
    sizes = presets.PRESETS["selfpretraining/04_mini_lra_arms"]["book"]
    model = train.build_model(mini_lra.model_config(sizes, layers), seed=0, device="cpu")
    model.set_record(explicit)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 5, (sizes["batch_size"], length), generator=gen)
    y = torch.randint(0, 2, (sizes["batch_size"],), generator=gen)
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(STEPS):
            loss = F.cross_entropy(model.classify(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        times.append((time.perf_counter() - start) / STEPS)
    return statistics.median(times)


def main() -> None:
    torch.set_num_threads(1)  # as every seed worker runs
    for name, length, layers in CASES:
        fused, explicit = step_seconds(length, layers, False), step_seconds(length, layers, True)
        print(f"{name:>10} ({length} tokens, {layers} layer(s)): fused {1e3 * fused:6.1f} ms, explicit "
              f"{1e3 * explicit:6.1f} ms per step; explicit/fused = {explicit / fused:.2f}")


if __name__ == "__main__":
    main()
