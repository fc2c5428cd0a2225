"""PathFinder-lite: are the two marked endpoints joined by a dashed curve?

LRA's PathFinder (Tay et al. 2021, after Linsley et al. 2018) shows two marked dots and several
dashed curves; the label says whether one curve joins the dots. This generator draws, on a
``size`` x ``size`` grid, two curves of ``path_length`` pixels and ``n_distractors`` shorter ones.
A curve is a smooth random walk (its heading turns by a normal angle of standard deviation
``curvature`` per unit step), so consecutive pixels are 8-neighbours. It is dashed: along the
curve, ``dash_on`` pixels are drawn, then ``dash_off`` are skipped. Any two different curves keep
a Chebyshev distance of at least ``separation`` pixels. The endpoints (token 2) are the two ends of
the first curve (label 1, connected) or one end of the first and one end of the second (label 0);
both images carry the same curves, so only which ends are marked differs. Curve pixels are token 1,
background 0; the input is the image read row by row (length ``size ** 2``).

Label by construction, checkable by connectivity: drawn pixels of one curve are joined by steps of
Chebyshev length at most ``dash_off + 1``, and pixels of different curves are at least
``separation >= dash_off + 2`` apart, so :func:`endpoints_connected` (a flood fill with that step)
recovers the label from the image alone.

Implements {prf:ref}`def-sp-pathfinder-lite`.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

MIN_SIZE = 12
BACKGROUND, PATH, ENDPOINT = 0, 1, 2
N_LEVELS = 3


@dataclass(frozen=True)
class PathFinderTask:
    """Parameters of the generator (defaults: the book's 16x16 images)."""

    size: int = 16
    path_length: int = 14
    n_distractors: int = 2
    distractor_length: int = 5
    curvature: float = 0.35
    dash_on: int = 2
    dash_off: int = 1
    separation: int = 3
    balance: bool = False  # pair the labels by endpoint offset, so endpoint distances say nothing

    def __post_init__(self) -> None:
        if self.size < MIN_SIZE:
            raise ValueError(f"size must be >= {MIN_SIZE} (two separated curves and distractors must fit), got {self.size}")
        if not 3 <= self.path_length <= self.size * self.size // 8:
            raise ValueError(f"path_length must lie in [3, size**2 // 8 = {self.size * self.size // 8}], "
                             f"got {self.path_length}")
        if self.n_distractors < 0 or not 2 <= self.distractor_length <= self.path_length:
            raise ValueError(f"n_distractors must be >= 0 and distractor_length in [2, path_length={self.path_length}], "
                             f"got {self.n_distractors}, {self.distractor_length}")
        if self.curvature < 0:
            raise ValueError(f"curvature must be >= 0, got {self.curvature}")
        if self.dash_on < 1 or self.dash_off < 0:
            raise ValueError(f"dash_on must be >= 1 and dash_off >= 0, got {self.dash_on}, {self.dash_off}")
        if self.separation < self.dash_off + 2:
            raise ValueError(f"separation must be >= dash_off + 2 = {self.dash_off + 2} (else a gap could bridge two "
                             f"curves), got {self.separation}")

    @property
    def link_radius(self) -> int:
        """The longest Chebyshev step between consecutive drawn pixels of one curve."""
        return self.dash_off + 1


def _curve(rng: np.random.Generator, task: PathFinderTask, length: int, forbidden: np.ndarray):
    """Pixels ``(length, 2)`` of one smooth curve off ``forbidden`` and inside the grid, or None."""
    n = task.size
    y, x = rng.uniform(1, n - 2, size=2)
    heading = rng.uniform(0, 2 * np.pi)
    turns = rng.normal(0.0, task.curvature, size=8 * length).tolist()
    pixels = [(round(y), round(x))]
    if forbidden[pixels[0]]:
        return None
    seen = set(pixels)
    for turn in turns:
        if len(pixels) == length:
            break
        heading += turn
        y, x = y + math.cos(heading), x + math.sin(heading)
        pix = (round(y), round(x))
        if pix == pixels[-1]:
            continue
        if not (0 <= pix[0] < n and 0 <= pix[1] < n) or pix in seen or forbidden[pix]:
            return None
        pixels.append(pix)
        seen.add(pix)
    return np.array(pixels) if len(pixels) == length else None


def _dilate(mask: np.ndarray, radius: int) -> np.ndarray:
    """Pixels within Chebyshev distance ``radius`` of ``mask`` (a max filter by shifts)."""
    n = mask.shape[0]
    padded = np.zeros((n + 2 * radius, n + 2 * radius), dtype=bool)
    padded[radius: radius + n, radius: radius + n] = mask
    out = np.zeros_like(mask)
    for dr in range(2 * radius + 1):
        for dc in range(2 * radius + 1):
            out |= padded[dr: dr + n, dc: dc + n]
    return out


def sample_image(rng: np.random.Generator, task: PathFinderTask = PathFinderTask(), label: int | None = None,
                 max_tries: int = 1000) -> tuple[np.ndarray, int]:
    """One image ``(size, size)`` of tokens 0/1/2 and its label (drawn uniformly unless given)."""
    if label is None:
        label = int(rng.integers(2))
    if label not in (0, 1):
        raise ValueError(f"label must be 0 or 1, got {label}")
    lengths = [task.path_length] * 2 + [task.distractor_length] * task.n_distractors
    for _ in range(max_tries):
        occupied = np.zeros((task.size, task.size), dtype=bool)
        curves = []
        for length in lengths:
            pts = None
            forbidden = _dilate(occupied, task.separation - 1)
            for _attempt in range(50):
                pts = _curve(rng, task, length, forbidden)
                if pts is not None:
                    break
            if pts is None:
                break
            curves.append(pts)
            occupied[pts[:, 0], pts[:, 1]] = True
        if len(curves) < len(lengths):
            continue
        image = np.zeros((task.size, task.size), dtype=np.int64)
        period = task.dash_on + task.dash_off
        for pts in curves:
            drawn = pts[(np.arange(len(pts)) % period) < task.dash_on]
            image[drawn[:, 0], drawn[:, 1]] = PATH
        a, b = curves[0], curves[1]
        ends = (a[0], a[-1]) if label == 1 else (a[0] if rng.random() < 0.5 else a[-1], b[0] if rng.random() < 0.5 else b[-1])
        for r, c in ends:
            image[r, c] = ENDPOINT
        return image, label
    raise RuntimeError(f"could not place {len(lengths)} separated curves in {max_tries} tries: lower path_length, "
                       "n_distractors or separation, or raise size")


def endpoints_connected(image: np.ndarray, radius: int) -> bool:
    """Whether the two endpoint pixels are joined through non-background pixels by steps of
    Chebyshev length ``<= radius`` (a flood fill; independent of how the image was drawn)."""
    ends = np.argwhere(image == ENDPOINT)
    if len(ends) != 2:
        raise ValueError(f"image must have exactly two endpoint pixels, got {len(ends)}")
    n_rows, n_cols = image.shape
    on = image != BACKGROUND
    seen = np.zeros_like(on)
    start, goal = tuple(ends[0]), tuple(ends[1])
    seen[start] = True
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        if (r, c) == goal:
            return True
        for rr in range(max(0, r - radius), min(n_rows, r + radius + 1)):
            for cc in range(max(0, c - radius), min(n_cols, c + radius + 1)):
                if on[rr, cc] and not seen[rr, cc]:
                    seen[rr, cc] = True
                    queue.append((rr, cc))
    return False


def endpoint_offset(image: np.ndarray) -> tuple[int, int]:
    """The two endpoints' offset up to symmetry, ``(min(|dr|, |dc|), max(|dr|, |dc|))``: every Euclidean or
    Chebyshev distance between them is a function of it."""
    ends = np.argwhere(np.asarray(image) == ENDPOINT)
    if len(ends) != 2:
        raise ValueError(f"image must have exactly two endpoint pixels, got {len(ends)}")
    dr, dc = (int(v) for v in np.abs(ends[0] - ends[1]))
    return min(dr, dc), max(dr, dc)


def sample_pathfinder(n: int, rng: np.random.Generator, task: PathFinderTask = PathFinderTask()
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``n`` distinct images as row-major sequences ``(n, size ** 2)`` and their labels (balanced in law).

    With ``task.balance``, images come in pairs, one of each label with the same :func:`endpoint_offset`
    (an image waits until one of the other label and its offset is drawn; ``n`` must be even). So every
    offset carries as many connected as unconnected images, and no function of the endpoints' distance
    beats chance: the label must be read from the curves. The pairs are then shuffled.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if task.balance and n % 2:
        raise ValueError(f"n must be even when task.balance is set (images come in pairs), got {n}")
    seen: set[bytes] = set()
    seqs, labels = [], []
    waiting: dict[tuple[int, int, int], list[np.ndarray]] = {}  # (label, offset) -> images not yet paired
    while len(seqs) < n:
        image, label = sample_image(rng, task)
        key = image.tobytes()
        if key in seen:
            continue
        seen.add(key)
        if not task.balance:
            seqs.append(image.reshape(-1))
            labels.append(label)
            continue
        offset = endpoint_offset(image)
        partners = waiting.get((1 - label, *offset))
        if partners:
            seqs += [image.reshape(-1), partners.pop(0).reshape(-1)]
            labels += [label, 1 - label]
        else:
            waiting.setdefault((label, *offset), []).append(image)
    seqs, labels = np.stack(seqs), np.array(labels, dtype=np.int64)
    if task.balance:
        order = rng.permutation(n)
        seqs, labels = seqs[order], labels[order]
    return seqs, labels
