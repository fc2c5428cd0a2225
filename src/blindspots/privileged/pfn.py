"""PIQL's privileged foundation model: a PFN-style outlier detector with meta-PI and program-PI prefixes.

Implements the model of {cite}`ding2026piql` for the training chapter, and the rule of
{prf:ref}`thm-pi-no-leakage` that the generator program is never a test-time input.

A task's rows form one sequence ``[prefix tokens, context rows, query rows]``:

* a context row embeds its (standardised, zero-padded) features, its feature mask and its label;
  a query row embeds its features and mask and a learned "no label" vector instead;
* the attention mask (:func:`attention_mask`) lets every position attend to the prefix and the context
  only, never to a query, so each query's output depends on the context and on itself (through the
  residual stream) alone;
* prefix tokens carry the privileged information: **meta-PI**, the nine meta-features per feature of
  :func:`blindspots.privileged.metafeatures.meta_features` computed on the *raw* context (before the
  model's standardisation) and squashed by ``sign(m) log(1 + |m|)``; and **program-PI**, the mixture
  ``x_g = (1 - alpha) * student + alpha * teacher`` (:func:`blindspots.privileged.teacher_forcing.mix_embeddings`)
  of the frozen program encoder's prefix embeddings (teacher) and a :class:`SetStudent`'s prediction of
  them from the labelled context;
* the output is the anomaly logit of each query row, ``P(anomaly) = sigmoid(logit)``.

``alpha`` follows :func:`blindspots.privileged.teacher_forcing.teacher_forcing_weight` (1 for the first
10 % of training, cosine decay to 0 at 40 %, then 0). At evaluation only the student is used:
:meth:`PFN.predict_proba` takes no program, and :meth:`PFN.forward` refuses one in eval mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .metafeatures import META_FEATURE_NAMES, meta_features
from .program import PAD_ID, ProgramEncoder, ProgramTokenizer, seeded_init
from .teacher_forcing import _single_thread, mix_embeddings, teacher_forcing_weight

#: The four training variants: name -> (meta-PI prefix, program-PI prefix with teacher forcing).
VARIANTS: dict = {"baseline": (False, False), "meta": (True, False), "program": (False, True), "both": (True, True)}
_STD_FLOOR = 1e-6
_CLAMP = 10.0


def attention_mask(n_prefix: int, n_context: int, n_query: int, device=None) -> torch.Tensor:
    """Boolean ``(L, L)`` mask, ``True`` = may not attend: every row sees the prefix and context columns only."""
    for name, v, low in (("n_prefix", n_prefix, 0), ("n_context", n_context, 1), ("n_query", n_query, 0)):
        if not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    length = n_prefix + n_context + n_query
    mask = torch.zeros(length, length, dtype=torch.bool, device=device)
    mask[:, n_prefix + n_context:] = True
    return mask


def meta_pi(context_x: np.ndarray, feature_mask: np.ndarray) -> np.ndarray:
    """Meta-PI ``(B, d_max, 9)``: meta-features of each raw context, zero on padded features, then
    ``sign(m) log(1 + |m|)`` so that heavy-tailed statistics (kurtosis) stay on a usable scale."""
    cx = np.asarray(context_x, dtype=float)
    if cx.ndim != 3 or cx.shape[1] < 1:
        raise ValueError(f"context_x must have shape (tasks, points >= 1, d_max), got {cx.shape}")
    m = meta_features(cx) * np.asarray(feature_mask, dtype=float)[..., None]
    return np.sign(m) * np.log1p(np.abs(m))


def standardise(context_x: torch.Tensor, query_x: torch.Tensor, feature_mask: torch.Tensor):
    """Standardise context and query by the context's per-feature mean and std; padded features stay 0."""
    mean = context_x.mean(dim=1, keepdim=True)
    std = context_x.std(dim=1, keepdim=True, unbiased=False).clamp_min(_STD_FLOOR)
    m = feature_mask[:, None, :].to(context_x.dtype)
    f = lambda x: ((x - mean) / std).clamp(-_CLAMP, _CLAMP) * m  # noqa: E731
    return f(context_x), f(query_x)


class SetStudent(nn.Module):
    """The student: learned queries cross-attend over embedded context rows ``[x, mask, y]`` and predict
    the program encoder's prefix embeddings ``(B, prefix, program_width)`` from the data alone."""

    def __init__(self, d_max: int, width: int, heads: int, prefix: int, program_width: int):
        super().__init__()
        self.rows = nn.Sequential(nn.Linear(2 * d_max + 1, width), nn.GELU(), nn.Linear(width, width))
        self.queries = nn.Parameter(0.1 * torch.randn(prefix, width))
        self.cross = nn.MultiheadAttention(width, heads, dropout=0.0, batch_first=True)
        self.out = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, program_width))

    def forward(self, cx: torch.Tensor, cy: torch.Tensor, feature_mask: torch.Tensor) -> torch.Tensor:
        m = feature_mask[:, None, :].expand(-1, cx.shape[1], -1).to(cx.dtype)
        h = self.rows(torch.cat([cx, m, cy[..., None].to(cx.dtype)], dim=-1))
        q = self.queries.expand(cx.shape[0], -1, -1)
        out, _ = self.cross(q, h, h, need_weights=False)
        return self.out(out + q)


@dataclass
class PFNOutput:
    """``logits (B, m)``; ``student``/``teacher`` prefix embeddings (program-PI only, else ``None``);
    ``hidden``: per layer (0 = embeddings) the mean over context rows ``(B, width)``, if asked for."""

    logits: torch.Tensor
    student: torch.Tensor | None = None
    teacher: torch.Tensor | None = None
    hidden: list | None = None


class PFN(nn.Module):
    """PFN-style outlier detector (module docstring).

    Parameters
    ----------
    d_max : padded feature count of the tasks.
    width, layers, heads : transformer size (``width`` a multiple of ``heads``).
    meta : add ``meta_tokens`` meta-PI prefix tokens.
    meta_size : length of the flattened meta vector (default ``d_max * 9``, :func:`meta_pi`); a richer
        meta-PI (:func:`blindspots.privileged.piql.meta_pi_plus`) passes its own size.
    program_encoder : a frozen :class:`~blindspots.privileged.program.ProgramEncoder`; when given the model
        has program-PI prefix tokens (one per encoder prefix) and a :class:`SetStudent`.
    seed : seeds the initial weights (torch's global RNG state is restored afterwards).
    """

    def __init__(self, d_max: int, *, width: int = 64, layers: int = 3, heads: int = 4, meta: bool = False,
                 meta_tokens: int = 2, meta_size: int | None = None, program_encoder: ProgramEncoder | None = None,
                 seed: int = 0):
        super().__init__()
        for name, v, low in (("d_max", d_max, 1), ("width", width, 1), ("layers", layers, 1), ("heads", heads, 1),
                             ("meta_tokens", meta_tokens, 1)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
        if width % heads:
            raise ValueError(f"width must be a multiple of heads = {heads}, got {width}")
        if meta_size is not None and (isinstance(meta_size, bool) or not isinstance(meta_size, (int, np.integer))
                                      or meta_size < 1):
            raise ValueError(f"meta_size must be None or an integer >= 1, got {meta_size!r}")
        self.d_max, self.width, self.meta, self.meta_tokens = int(d_max), int(width), bool(meta), int(meta_tokens)
        self.program_encoder = program_encoder
        if program_encoder is not None and any(p.requires_grad for p in program_encoder.parameters()):
            raise ValueError("program_encoder must be frozen (pretrain it, then program.freeze it) "
                             "before the PFN uses it")
        with seeded_init(seed):
            self.rows = nn.Linear(2 * d_max, width)
            self.label = nn.Embedding(2, width)
            self.no_label = nn.Parameter(0.1 * torch.randn(width))
            # shared layers first, so that variants with the same seed start from the same shared weights
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(width, heads, 2 * width, dropout=0.0, batch_first=True, norm_first=True)
                for _ in range(layers))
            self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 1))
            if self.meta:
                n_meta = (d_max * len(META_FEATURE_NAMES) if meta_size is None else int(meta_size)) + d_max
                self.meta_net = nn.Sequential(nn.Linear(n_meta, width), nn.GELU(),
                                              nn.Linear(width, meta_tokens * width))
            if program_encoder is not None:
                pw, pp = program_encoder.width, program_encoder.prefix
                self.student = SetStudent(d_max, width, heads, pp, pw)
                self.program_proj = nn.Linear(pw, width)

    @property
    def uses_program(self) -> bool:
        return self.program_encoder is not None

    def _prefix(self, cx_raw_meta, cx, cy, mask, program_ids, alpha):
        tokens, student, teacher = [], None, None
        if self.meta:
            if cx_raw_meta is None:
                raise ValueError("meta must be given (meta_pi of the raw context) for a model with meta-PI")
            flat = torch.cat([cx_raw_meta.flatten(1), mask.to(cx.dtype)], dim=-1)
            tokens.append(self.meta_net(flat).view(len(cx), self.meta_tokens, self.width))
        if self.uses_program:
            student = self.student(cx, cy, mask)
            xg = student
            if program_ids is not None:
                with torch.no_grad():  # the encoder is frozen: no graph through it
                    teacher = self.program_encoder(program_ids)
                xg = mix_embeddings(student, teacher, alpha)
            elif alpha != 0:
                raise ValueError(f"alpha must be 0 without program_ids, got {alpha!r}")
            tokens.append(self.program_proj(xg))
        return tokens, student, teacher

    def forward(self, context_x, context_y, query_x, feature_mask, meta=None, program_ids=None, alpha: float = 0.0,
                return_hidden: bool = False) -> PFNOutput:
        """The training path. ``program_ids`` (the generator programs) are accepted in training mode only;
        with them the program prefix is ``(1 - alpha) * student + alpha * teacher``."""
        if program_ids is not None and not self.training:
            raise ValueError("program_ids must be None at evaluation: the generator program is training-time "
                             "privileged information and only the student is used (call predict_proba)")
        if program_ids is not None and not self.uses_program:
            raise ValueError("program_ids given to a model without a program encoder")
        cx, qx = standardise(context_x, query_x, feature_mask)
        n, m = cx.shape[1], qx.shape[1]
        if n < 1:
            raise ValueError(f"context_x must hold at least one point, got shape {tuple(context_x.shape)}")
        prefix, student, teacher = self._prefix(meta, cx, context_y, feature_mask, program_ids, alpha)
        fm = feature_mask[:, None, :].to(cx.dtype)
        ctx = self.rows(torch.cat([cx, fm.expand(-1, n, -1)], dim=-1)) + self.label(context_y.long())
        qry = self.rows(torch.cat([qx, fm.expand(-1, m, -1)], dim=-1)) + self.no_label
        h = torch.cat([*prefix, ctx, qry], dim=1)
        p = h.shape[1] - n - m
        att = attention_mask(p, n, m, device=h.device)
        hidden = [h[:, p:p + n].mean(dim=1)] if return_hidden else None
        for block in self.blocks:
            h = block(h, src_mask=att)
            if return_hidden:
                hidden.append(h[:, p:p + n].mean(dim=1))
        return PFNOutput(self.head(h[:, p + n:])[..., 0], student, teacher, hidden)

    @torch.no_grad()
    def predict_proba(self, context_x, context_y, query_x, feature_mask, meta=None) -> torch.Tensor:
        """``P(anomaly)`` per query row ``(B, m)``: the deployable model, with the student's prefix only.

        There is no program argument: at evaluation the generator program never reaches the model.
        """
        was = self.training
        self.eval()
        try:
            return torch.sigmoid(self(context_x, context_y, query_x, feature_mask, meta=meta).logits)
        finally:
            self.train(was)


# ----------------------------------------------------------------------------- batches and training
def batch_tensors(batch, *, meta: bool = False, tokenizer: ProgramTokenizer | None = None,
                  max_len: int | None = None, device="cpu") -> dict:
    """Tensors of a :class:`~blindspots.privileged.priors.TaskBatch`: ``context_x``, ``context_y``, ``query_x``,
    ``query_y``, ``feature_mask``, ``meta`` (if asked) and ``program_ids`` (if a tokenizer is given; training only)."""
    f = lambda a, dt=torch.float32: torch.as_tensor(np.asarray(a), dtype=dt, device=device)  # noqa: E731
    out = {"context_x": f(batch.context_x), "context_y": f(batch.context_y, torch.long), "query_x": f(batch.query_x),
           "query_y": f(batch.query_y), "feature_mask": f(batch.feature_mask, torch.bool), "meta": None,
           "program_ids": None}
    if meta:
        out["meta"] = f(meta_pi(batch.context_x, batch.feature_mask))
    if tokenizer is not None:
        if max_len is None:
            raise ValueError("max_len must be given with a tokenizer")
        ids = tokenizer.encode_batch(batch.generators, max_len)
        longest = int((ids != PAD_ID).sum(axis=1).max())
        out["program_ids"] = f(ids[:, :longest], torch.long)  # padding past the longest program changes nothing
    return out


def training_loss(model: PFN, tensors: dict, progress: float, embed_weight: float = 1.0):
    """``(loss, parts)`` at training ``progress`` in [0, 1]: query BCE, plus, for program-PI, the student's
    squared error to the (frozen) teacher embedding times ``embed_weight``; ``alpha`` from the schedule."""
    alpha = teacher_forcing_weight(progress) if model.uses_program else 0.0
    ids = tensors["program_ids"] if model.uses_program else None
    out = model(tensors["context_x"], tensors["context_y"], tensors["query_x"], tensors["feature_mask"],
                meta=tensors["meta"], program_ids=ids, alpha=alpha)
    bce = nn.functional.binary_cross_entropy_with_logits(out.logits, tensors["query_y"])
    parts = {"bce": float(bce.detach()), "alpha": alpha, "embed": 0.0}
    loss = bce
    if out.teacher is not None and embed_weight > 0:
        embed = ((out.student - out.teacher.detach()) ** 2).mean()
        parts["embed"] = float(embed.detach())
        loss = loss + embed_weight * embed
    return loss, parts


def fit_pfn(model: PFN, batches, *, steps: int, lr: float = 1e-3, embed_weight: float = 1.0,
            progress: bool = False, desc: str = "", on_step=None) -> list[dict]:
    """The training loop every PFN variant shares: Adam on the trainable parameters, cosine learning rate
    over ``steps``, one :func:`training_loss` step per tensor dict of ``batches`` (an iterable, consumed
    lazily so a prior can sample as it goes), ``on_step(step, model)`` after every step (validation).
    Returns the per-step parts of :func:`training_loss`; the model is left in eval mode.
    """
    from tqdm import tqdm  # the console bar: tqdm.auto warns in a notebook without ipywidgets

    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    log = []
    model.train()  # every dropout is 0: train mode changes no numbers, only which kernels run
    for step, tensors in zip(tqdm(range(steps), disable=not progress, desc=desc), batches):
        loss, parts = training_loss(model, tensors, step / steps, embed_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        log.append(parts)
        if on_step is not None:
            on_step(step + 1, model)
            model.train()
    if len(log) != steps:
        raise ValueError(f"batches ran out after {len(log)} of steps={steps}")
    model.eval()
    return log


def train_pfn(variant: str, prior, *, steps: int, batch: int, rng: np.random.Generator, width: int = 64,
              layers: int = 3, heads: int = 4, lr: float = 1e-3, embed_weight: float = 1.0,
              program_encoder: ProgramEncoder | None = None, tokenizer: ProgramTokenizer | None = None,
              max_len: int = 512, seed: int = 0, device="cpu", progress: bool = False,
              on_step=None) -> tuple[PFN, list[dict]]:
    """Train one variant of :data:`VARIANTS` on fresh tasks of ``prior`` every step (:func:`fit_pfn`).

    Program variants need the frozen ``program_encoder`` and its ``tokenizer``. ``on_step(step, model)``
    is called after every step (validation curves). Returns the model (eval mode) and the per-step parts
    of :func:`training_loss`.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    for name, v in (("steps", steps), ("batch", batch)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    use_meta, use_program = VARIANTS[variant]
    if use_program and (program_encoder is None or tokenizer is None):
        raise ValueError(f"variant {variant!r} needs program_encoder and tokenizer")

    def batches():
        while True:
            yield batch_tensors(prior.sample_batch(batch, rng), meta=use_meta,
                                tokenizer=tokenizer if use_program else None, max_len=max_len, device=device)

    with _single_thread(device):
        model = PFN(prior.d_max, width=width, layers=layers, heads=heads, meta=use_meta,
                    program_encoder=program_encoder if use_program else None, seed=seed).to(device)
        log = fit_pfn(model, batches(), steps=steps, lr=lr, embed_weight=embed_weight, progress=progress,
                      desc=variant, on_step=on_step)
    return model, log


def steps_to_reach(curve, target: float, steps=None, *, higher_is_better: bool = False) -> float:
    """The first step at which ``curve`` reaches ``target`` (``<=`` for a loss, ``>=`` with ``higher_is_better``,
    e.g. AUROC); ``inf`` if never: the speedup numerator. ``steps`` gives the step of each curve point
    (default ``1..len(curve)``).
    """
    curve = np.asarray(curve, dtype=float)
    steps = np.arange(1, len(curve) + 1) if steps is None else np.asarray(steps)
    if curve.shape != steps.shape:
        raise ValueError(f"steps must match curve's shape {curve.shape}, got {steps.shape}")
    hit = np.flatnonzero(curve >= target if higher_is_better else curve <= target)
    return float(steps[hit[0]]) if hit.size else math.inf


def task_aurocs(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """AUROC of each row of ``y, p (tasks, queries)`` by the rank-sum formula (ties get average ranks);
    NaN where a row's queries hold one label only."""
    from scipy.stats import rankdata

    y = np.asarray(y).astype(bool)
    r = rankdata(np.asarray(p, dtype=float), axis=1)
    n1 = y.sum(axis=1)
    n0 = y.shape[1] - n1
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = ((r * y).sum(axis=1) - n1 * (n1 + 1) / 2) / (n1 * n0)
    return np.where((n1 > 0) & (n0 > 0), auc, np.nan)


def bce(y: np.ndarray, p: np.ndarray) -> float:
    """Mean log-loss (nats) of probabilities ``p`` for labels ``y``."""
    p = np.clip(np.asarray(p, dtype=float), 1e-12, 1 - 1e-12)
    y = np.asarray(y, dtype=float)
    return float(-(y * np.log(p) + (1 - y) * np.log1p(-p)).mean())


def evaluate_pfn(model: PFN, batch, device="cpu") -> dict:
    """Held-out metrics of the deployable model on a :class:`~blindspots.privileged.priors.TaskBatch`.

    Returns ``bce`` (mean query log-loss, nats, :func:`bce`), ``auroc`` (mean over tasks whose queries hold
    both labels, with ``auroc_tasks`` their count), ``pooled_auroc`` (all queries together), the per-task
    AUROCs ``task_auroc`` (:func:`task_aurocs`, NaN where undefined) and ``per_family`` mean AUROC. The
    program is never used.
    """
    from sklearn.metrics import roc_auc_score

    t = batch_tensors(batch, meta=model.meta, device=device)
    with _single_thread(device):
        p = model.predict_proba(t["context_x"], t["context_y"], t["query_x"], t["feature_mask"], meta=t["meta"])
    p = p.double().cpu().numpy()
    y = np.asarray(batch.query_y)
    task = task_aurocs(y, p)
    ok = ~np.isnan(task)
    fams = np.array(batch.families) if batch.generators else np.array(["real"] * len(y))
    per_family = {str(f): float(np.nanmean(task[fams == f])) for f in sorted(set(fams)) if np.any(ok[fams == f])}
    pooled = float(roc_auc_score(y.ravel(), p.ravel())) if 0 < y.sum() < y.size else float("nan")
    return {"bce": bce(y, p), "auroc": float(task[ok].mean()) if ok.any() else float("nan"),
            "auroc_tasks": int(ok.sum()), "pooled_auroc": pooled, "task_auroc": task, "per_family": per_family}
