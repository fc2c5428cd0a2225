"""ListOps by the rules of the Long Range Arena (Tay et al. 2021), generated offline.

An expression is a tree. A node above the maximum depth is a leaf (a value 0-9) with probability
:data:`LEAF_PROB` = 0.75 and otherwise an operator, MIN, MAX, MED (integer median) or SM (sum
mod 10), with 2 to ``max_args`` children; a node at the maximum depth is always a leaf. The root is
at depth 1. Its value, in 0-9, is the label (10 classes).

Tokenisation as in LRA's input pipeline: an operator opens with its name (``[MIN``), its children
follow, and ``]`` closes it; the brackets of the nested-tuple text format are dropped. The length of
an expression is its number of tokens (values, operator names and closing brackets), and LRA keeps
only expressions inside a length window; so does :func:`sample_listops`, after removing duplicates
(so that no expression is both in the training and in the test split).

Implements {prf:ref}`def-sp-listops`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OPERATORS: tuple[str, ...] = ("[MIN", "[MAX", "[MED", "[SM")
CLOSE = "]"
LEAF_PROB = 0.75
N_CLASSES = 10
# Token ids: values 0-9 are their own ids, then the operators and the closing bracket.
TOKEN_IDS: dict[str, int] = {**{str(v): v for v in range(10)},
                             **{op: 10 + i for i, op in enumerate(OPERATORS)}, CLOSE: 14}
N_TOKENS = len(TOKEN_IDS)  # 15 content tokens; padding, mask and CLS ids are chosen by the caller


@dataclass(frozen=True)
class ListOpsTask:
    """Parameters of the generator: the length window (inclusive, in tokens), depth and arity."""

    min_length: int = 50
    max_length: int = 200
    max_depth: int = 6
    max_args: int = 5
    root_operators: tuple[str, ...] = OPERATORS  # a subset fixes the root's operator (the root is then never a leaf)

    def __post_init__(self) -> None:
        if not self.root_operators or any(op not in OPERATORS for op in self.root_operators):
            raise ValueError(f"root_operators must be a non-empty subset of {OPERATORS}, got {self.root_operators}")
        if self.max_args < 2:
            raise ValueError(f"max_args must be >= 2 (an operator has 2 to max_args children), got {self.max_args}")
        if self.max_depth < 1:
            raise ValueError(f"max_depth must be >= 1, got {self.max_depth}")
        if self.min_length < 1 or self.max_length < self.min_length:
            raise ValueError(f"the length window must satisfy 1 <= min_length <= max_length, got "
                             f"[{self.min_length}, {self.max_length}]")
        longest = max_tree_length(self.max_depth, self.max_args)
        lengths = feasible_lengths(self.max_depth, self.max_args, min(self.max_length, longest))
        if not any(self.min_length <= n <= self.max_length for n in lengths):
            raise ValueError(f"no tree with max_depth={self.max_depth}, max_args={self.max_args} has a length in "
                             f"[{self.min_length}, {self.max_length}] (lengths reach at most {longest}; lengths 2 and 3 "
                             "never occur): widen the window or raise max_depth / max_args")


def max_tree_length(max_depth: int, max_args: int) -> int:
    """The longest expression: every node above ``max_depth`` an operator with ``max_args`` children."""
    length = 1
    for _ in range(max_depth - 1):
        length = 2 + max_args * length
        if length > 10 ** 7:  # longer than any window worth checking
            return length
    return length


def feasible_lengths(max_depth: int, max_args: int, cap: int) -> set[int]:
    """Every expression length up to ``cap`` that some tree of depth ``<= max_depth`` has."""
    reach = np.zeros(cap + 1, dtype=bool)  # lengths of a subtree rooted at the current depth
    reach[1] = True
    for _ in range(max_depth - 1):
        sums, total = reach.copy(), np.zeros(cap + 1, dtype=bool)
        for _k in range(2, max_args + 1):  # sums of k child lengths, k = 2..max_args
            sums = np.convolve(sums.astype(float), reach.astype(float))[: cap + 1] > 0.5
            total |= sums
        reach = np.zeros(cap + 1, dtype=bool)
        reach[1] = True
        reach[2:] = total[: cap - 1]  # the operator and its ']' add 2
    return set(int(i) for i in np.flatnonzero(reach))


def sample_tree(rng: np.random.Generator, task: ListOpsTask, depth: int = 1):
    """One random expression: an int (leaf) or ``(operator, [children])``."""
    # A restricted root is always an operator; the default keeps LRA's law (and its random stream), whose leaf
    # roots the length window rejects.
    if depth == 1 and tuple(task.root_operators) != OPERATORS and task.max_depth > 1:
        op = task.root_operators[int(rng.integers(len(task.root_operators)))]
        n_args = int(rng.integers(2, task.max_args + 1))
        return op, [sample_tree(rng, task, 2) for _ in range(n_args)]
    if depth < task.max_depth and rng.random() >= LEAF_PROB:
        op = OPERATORS[int(rng.integers(len(OPERATORS)))]
        n_args = int(rng.integers(2, task.max_args + 1))
        return op, [sample_tree(rng, task, depth + 1) for _ in range(n_args)]
    return int(rng.integers(10))


def apply_operator(op: str, values: list[int]) -> int:
    """MIN, MAX, MED (``int`` of the median, as LRA's ``int(np.median(...))``) or SM (sum mod 10)."""
    if op == "[MIN":
        return min(values)
    if op == "[MAX":
        return max(values)
    if op == "[MED":
        return int(np.median(values))
    if op == "[SM":
        return sum(values) % 10
    raise ValueError(f"operator must be one of {OPERATORS}, got {op!r}")


def evaluate(tree) -> int:
    """The value of a tree from :func:`sample_tree`."""
    if isinstance(tree, (int, np.integer)):
        return int(tree)
    op, children = tree
    return apply_operator(op, [evaluate(c) for c in children])


def tree_tokens(tree) -> list[str]:
    """The LRA token sequence of a tree: ``[MAX 2 [MIN 4 7 ] 0 ]``, split at spaces."""
    if isinstance(tree, (int, np.integer)):
        return [str(int(tree))]
    op, children = tree
    out = [op]
    for c in children:
        out += tree_tokens(c)
    return out + [CLOSE]


def evaluate_tokens(tokens: list[str] | str) -> int:
    """Evaluate an expression written as LRA tokens (a string is split at spaces; ``(`` and ``)`` are ignored).

    An independent path from :func:`evaluate`: a stack machine over the tokens.
    """
    if isinstance(tokens, str):
        tokens = tokens.replace("(", " ").replace(")", " ").split()
    stack: list[list] = []
    result = None
    for tok in tokens:
        if tok in OPERATORS:
            stack.append([tok])
        elif tok == CLOSE:
            if not stack:
                raise ValueError("unbalanced expression: ']' without an open operator")
            op, *args = stack.pop()
            if len(args) < 1:
                raise ValueError(f"operator {op} closed without arguments")
            value = apply_operator(op, args)
            if stack:
                stack[-1].append(value)
            else:
                result = value
        elif tok.isdigit() and len(tok) == 1:
            if stack:
                stack[-1].append(int(tok))
            elif result is None:
                result = int(tok)
            else:
                raise ValueError("expression has more than one top-level value")
        else:
            raise ValueError(f"unknown token {tok!r}: tokens are 0-9, {OPERATORS} and ']'")
    if stack or result is None:
        raise ValueError("unbalanced or empty expression")
    return result


def evaluate_recursive(tokens: list[str]) -> int:
    """A second evaluator, written apart from :func:`apply_operator`: recursive descent over the tokens.

    MED is the floor of the mean of the two middle values (odd count: the middle value), which is what
    ``int(np.median(...))`` gives for values in 0-9.
    """
    def parse(at: int) -> tuple[int, int]:
        tok = tokens[at]
        if tok not in OPERATORS:
            return int(tok), at + 1
        args, at = [], at + 1
        while tokens[at] != CLOSE:
            value, at = parse(at)
            args.append(value)
        ordered = sorted(args)
        mid = len(ordered) // 2
        result = {"[MIN": ordered[0], "[MAX": ordered[-1], "[SM": sum(args) - 10 * (sum(args) // 10),
                  "[MED": ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) // 2}[tok]
        return result, at + 1

    value, end = parse(0)
    if end != len(tokens):
        raise ValueError(f"expression ends at token {end} of {len(tokens)}")
    return value


def encode(tokens: list[str], pad_to: int, pad_id: int) -> np.ndarray:
    """Token ids of :data:`TOKEN_IDS`, padded with ``pad_id`` to ``pad_to``."""
    if len(tokens) > pad_to:
        raise ValueError(f"pad_to must be >= the expression length {len(tokens)}, got {pad_to}")
    ids = np.full(pad_to, pad_id, dtype=np.int64)
    ids[: len(tokens)] = [TOKEN_IDS[t] for t in tokens]
    return ids


def sample_listops(n: int, rng: np.random.Generator, task: ListOpsTask = ListOpsTask(), *,
                   pad_id: int, max_tries: int = 2_000_000) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    """``n`` distinct expressions with lengths in the window: ids ``(n, max_length)``, labels, token lists.

    Rejection sampling as in LRA (trees outside the window are redrawn); ``max_tries`` trees at most,
    then a ``RuntimeError`` saying how many were accepted.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    seen: set[tuple[str, ...]] = set()
    kept: list[list[str]] = []
    for _ in range(max_tries):
        toks = tree_tokens(sample_tree(rng, task))
        if task.min_length <= len(toks) <= task.max_length:
            key = tuple(toks)
            if key not in seen:
                seen.add(key)
                kept.append(toks)
                if len(kept) == n:
                    break
    else:
        raise RuntimeError(f"only {len(kept)} of {n} expressions in the window [{task.min_length}, "
                           f"{task.max_length}] after max_tries={max_tries} trees: widen the window or raise max_tries")
    ids = np.stack([encode(t, task.max_length, pad_id) for t in kept])
    labels = np.array([evaluate_tokens(t) for t in kept], dtype=np.int64)
    return ids, labels, kept
