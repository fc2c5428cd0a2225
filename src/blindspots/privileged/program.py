"""Program privileged information: a generator as a DSL program, its tokens, and the program encoder.

Implements PIQL's program PI {cite}`ding2026piql`: each task generator of
:mod:`blindspots.privileged.priors` is serialised to a token sequence of a small domain-specific
language, a tokenizer maps the tokens to ids and back, and a transformer *program encoder* maps the
ids to a fixed number of prefix embeddings. The encoder is pretrained contrastively (perturbed
programs of one generator close, other generators far) and then frozen.

DSL grammar (one token per word; ``F`` a float, ``I`` an integer, ``*n`` repeated)::

    program   := <bos> "family" body <eos>
    body      := "gmm" "dim" I "components" I gmm_comp*K gmm_out
               | "scm" "dim" I "layers" I "width" I "keep" F "noise" F "seed" I I "features" I*D scm_out
               | "copula" "dim" I ( "kind" "gaussian" "corr" F*(D(D-1)/2) | "kind" "clayton" "theta" F )
                 marginal*D cop_out
    gmm_comp  := "component" "mean" F*D "var" F*D
    gmm_out   := "outlier" "inflate" "subdims" I I*n "scale" F "quantiles" F F
    scm_out   := "outlier" "noise" "nodes" I I*n "scale" F
    marginal  := "marginal" ("lognormal"|"gamma"|"t"|"weibull") F "loc" F "scale" F
    cop_out   := "outlier" "reflect" "dims" I I*n

Numbers: an integer ``0..999`` is one token (``"17"``); a float is rounded to 3 decimals and written
as an optional ``"-"``, its integer part and a fraction token (``-1.234 -> "-" "1" ".234"``). So the
vocabulary is small (about 2,050 ids) and a program round-trips exactly to 3 decimals. The SCM's
weights are not written out: its ``weight_seed`` (below ``10**6``, two tokens ``seed // 1000`` and
``seed % 1000``) fixes them, so the program still determines the generator; the encoder sees the
SCM's structure and noise, not its weights.
"""

from __future__ import annotations

import contextlib
import math
from typing import Sequence

import numpy as np
import torch
from torch import nn

from .priors import MARGINALS, CopulaGenerator, GMMGenerator, SCMGenerator

WORDS: tuple[str, ...] = (
    "<pad>", "<bos>", "<eos>", "family", "gmm", "scm", "copula", "dim", "components", "component", "mean", "var",
    "outlier", "inflate", "subdims", "scale", "quantiles", "layers", "width", "keep", "noise", "seed", "features",
    "nodes", "kind", "gaussian", "clayton", "corr", "theta", "marginal", *MARGINALS, "loc", "reflect", "dims", "-",
)
MAX_INT: int = 999
PAD_ID: int = 0


# ----------------------------------------------------------------------------- serialisation
def _int_tokens(v: int) -> list[str]:
    v = int(v)
    if not 0 <= v <= MAX_INT:
        raise ValueError(f"an integer in a program must lie in [0, {MAX_INT}], got {v}")
    return [str(v)]


def _float_tokens(v: float) -> list[str]:
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"a float in a program must be finite, got {v!r}")
    whole, frac = f"{abs(v):.3f}".split(".")  # correctly rounded decimal, as Python's round(v, 3)
    if int(whole) > MAX_INT:
        raise ValueError(f"a float in a program must have |value| < {MAX_INT + 1}, got {v!r}")
    sign = ["-"] if v < 0 and (int(whole) or int(frac)) else []
    return sign + [whole, f".{frac}"]


def _floats(vs) -> list[str]:
    return [t for v in vs for t in _float_tokens(v)]


def _ints(vs) -> list[str]:
    return [t for v in vs for t in _int_tokens(v)]


def serialise(generator) -> list[str]:
    """The DSL token sequence of a GMM, SCM or copula generator (module docstring)."""
    g = generator
    out = ["<bos>", "family"]
    if isinstance(g, GMMGenerator):
        out += ["gmm", "dim", *_int_tokens(g.dim), "components", *_int_tokens(g.components)]
        for mu, var in zip(g.means, g.variances):
            out += ["component", "mean", *_floats(mu), "var", *_floats(var)]
        out += ["outlier", "inflate", "subdims", *_int_tokens(len(g.sub_dims)), *_ints(g.sub_dims),
                "scale", *_float_tokens(g.inflation), "quantiles", *_floats((g.inlier_quantile, g.anomaly_quantile))]
    elif isinstance(g, SCMGenerator):
        if not 0 <= g.weight_seed < (MAX_INT + 1) ** 2:
            raise ValueError(f"weight_seed must lie in [0, {(MAX_INT + 1) ** 2 - 1}], got {g.weight_seed}")
        out += ["scm", "dim", *_int_tokens(g.dim), "layers", *_int_tokens(g.layers), "width", *_int_tokens(g.width),
                "keep", *_float_tokens(g.keep_prob), "noise", *_float_tokens(g.noise_std),
                "seed", *_ints(divmod(g.weight_seed, MAX_INT + 1)), "features", *_ints(g.feature_nodes),
                "outlier", "noise", "nodes", *_int_tokens(len(g.anomaly_nodes)), *_ints(g.anomaly_nodes),
                "scale", *_float_tokens(g.anomaly_scale)]
    elif isinstance(g, CopulaGenerator):
        out += ["copula", "dim", *_int_tokens(g.dim), "kind", g.kind]
        if g.kind == "gaussian":
            c = np.asarray(g.correlation)
            out += ["corr", *_floats(c[np.triu_indices(g.dim, 1)])]
        else:
            out += ["theta", *_float_tokens(g.theta)]
        for name, shape, loc, scale in g.marginals:
            out += ["marginal", name, *_float_tokens(shape), "loc", *_float_tokens(loc), "scale", *_float_tokens(scale)]
        out += ["outlier", "reflect", "dims", *_int_tokens(len(g.reflect_dims)), *_ints(g.reflect_dims)]
    else:
        raise ValueError(f"generator must be a GMMGenerator, SCMGenerator or CopulaGenerator, got {type(g).__name__}")
    return out + ["<eos>"]


class _Reader:
    def __init__(self, tokens: Sequence[str]):
        self.tokens, self.i = list(tokens), 0

    def _next(self) -> str:
        if self.i >= len(self.tokens):
            raise ValueError(f"program ended early at token {self.i}")
        self.i += 1
        return self.tokens[self.i - 1]

    def word(self, *allowed: str) -> str:
        t = self._next()
        if t not in allowed:
            raise ValueError(f"program token {self.i - 1} must be one of {allowed}, got {t!r}")
        return t

    def int(self) -> int:
        t = self._next()
        if not t.isdigit():
            raise ValueError(f"program token {self.i - 1} must be an integer, got {t!r}")
        return int(t)

    def ints(self, n: int) -> tuple:
        return tuple(self.int() for _ in range(n))

    def float(self) -> float:
        sign = 1.0
        if self.i < len(self.tokens) and self.tokens[self.i] == "-":
            self.i, sign = self.i + 1, -1.0
        whole = self.int()
        t = self._next()
        if not (len(t) == 4 and t[0] == "." and t[1:].isdigit()):
            raise ValueError(f"program token {self.i - 1} must be a fraction like '.123', got {t!r}")
        return sign * float(f"{whole}{t}")  # the double nearest the decimal, as round(v, 3) gives

    def floats(self, n: int) -> tuple:
        return tuple(self.float() for _ in range(n))


def parse(tokens: Sequence[str]):
    """The generator a DSL token sequence describes (inverse of :func:`serialise` to 3 decimals)."""
    r = _Reader(tokens)
    r.word("<bos>")
    r.word("family")
    family = r.word("gmm", "scm", "copula")
    r.word("dim")
    d = r.int()
    if family == "gmm":
        r.word("components")
        k = r.int()
        means, variances = [], []
        for _ in range(k):
            r.word("component")
            r.word("mean")
            means.append(r.floats(d))
            r.word("var")
            variances.append(r.floats(d))
        r.word("outlier"), r.word("inflate"), r.word("subdims")
        sub = r.ints(r.int())
        r.word("scale")
        inflation = r.float()
        r.word("quantiles")
        lo, hi = r.floats(2)
        g = GMMGenerator(tuple(means), tuple(variances), sub, inflation, lo, hi)
    elif family == "scm":
        r.word("layers")
        layers = r.int()
        r.word("width")
        width = r.int()
        r.word("keep")
        keep = r.float()
        r.word("noise")
        noise = r.float()
        r.word("seed")
        hi_, lo_ = r.ints(2)
        r.word("features")
        nodes = r.ints(d)
        r.word("outlier"), r.word("noise"), r.word("nodes")
        anom = r.ints(r.int())
        r.word("scale")
        g = SCMGenerator(layers, width, keep, noise, hi_ * (MAX_INT + 1) + lo_, nodes, anom, r.float())
    else:
        r.word("kind")
        kind = r.word("gaussian", "clayton")
        corr, theta = (), 0.0
        if kind == "gaussian":
            r.word("corr")
            c = np.eye(d)
            c[np.triu_indices(d, 1)] = r.floats(d * (d - 1) // 2)
            c = np.triu(c, 1) + np.triu(c, 1).T + np.eye(d)
            corr = tuple(tuple(float(v) for v in row) for row in c)
        else:
            r.word("theta")
            theta = r.float()
        margins = []
        for _ in range(d):
            r.word("marginal")
            name = r.word(*MARGINALS)
            shape = r.float()
            r.word("loc")
            loc = r.float()
            r.word("scale")
            margins.append((name, shape, loc, r.float()))
        r.word("outlier"), r.word("reflect"), r.word("dims")
        g = CopulaGenerator(kind, tuple(margins), r.ints(r.int()), correlation=corr, theta=theta)
    r.word("<eos>")
    if r.i != len(r.tokens):
        raise ValueError(f"program has {len(r.tokens) - r.i} tokens after <eos>")
    return g


# ----------------------------------------------------------------------------- tokenizer
class ProgramTokenizer:
    """DSL tokens <-> integer ids: the words, integers ``0..999`` and fractions ``.000..999``.

    ``values`` holds each id's numeric features ``(log1p(integer), fraction)`` (zeros for words), which
    the encoder adds to the token embedding so that nearby numbers start out close.
    """

    def __init__(self):
        self.vocab: tuple[str, ...] = WORDS + tuple(str(i) for i in range(MAX_INT + 1)) + tuple(
            f".{i:03d}" for i in range(1000))
        self.ids: dict[str, int] = {t: i for i, t in enumerate(self.vocab)}
        vals = np.zeros((len(self.vocab), 2), dtype=np.float32)
        for i in range(MAX_INT + 1):
            vals[self.ids[str(i)], 0] = np.log1p(i)
            vals[self.ids[f".{i:03d}"], 1] = i / 1000
        self.values = vals

    def __len__(self) -> int:
        return len(self.vocab)

    def encode(self, tokens: Sequence[str]) -> np.ndarray:
        """Ids of ``tokens`` (``ValueError`` naming an unknown token)."""
        try:
            return np.array([self.ids[t] for t in tokens], dtype=np.int64)
        except KeyError as e:
            raise ValueError(f"token {e.args[0]!r} is not in the program vocabulary") from None

    def decode(self, ids) -> list[str]:
        """Tokens of ``ids``, padding dropped."""
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= len(self.vocab)):
            raise ValueError(f"ids must lie in [0, {len(self.vocab) - 1}], got range [{ids.min()}, {ids.max()}]")
        return [self.vocab[i] for i in ids if i != PAD_ID]

    def encode_batch(self, generators: Sequence, max_len: int) -> np.ndarray:
        """Padded ids ``(len(generators), max_len)`` of the generators' programs."""
        out = np.full((len(generators), max_len), PAD_ID, dtype=np.int64)
        for b, g in enumerate(generators):
            ids = self.encode(serialise(g))
            if len(ids) > max_len:
                raise ValueError(f"max_len must be >= the program length {len(ids)} (a {g.family} of dim {g.dim}), "
                                 f"got {max_len}")
            out[b, :len(ids)] = ids
        return out


# ----------------------------------------------------------------------------- perturbations
def perturb_generator(generator, rng: np.random.Generator, scale: float = 0.05):
    """A nearby generator of the same structure: the positive pair of contrastive pretraining.

    GMM: means moved by ``scale`` component standard deviations, variances by a factor ``exp(scale z)``,
    components reordered (they are exchangeable). SCM: noise and anomaly scales by ``exp(scale z)``
    (same weights). Copula: marginal parameters, ``theta`` and correlations jittered by ``scale``.
    Structure (family, dimension, counts, anomaly subsets) is kept.
    """
    if not scale >= 0:
        raise ValueError(f"scale must be >= 0, got {scale!r}")
    g = generator
    if isinstance(g, GMMGenerator):
        mu, var = np.asarray(g.means), np.asarray(g.variances)
        order = rng.permutation(len(mu))
        mu = mu + scale * np.sqrt(var) * rng.standard_normal(mu.shape)
        var = np.maximum(var * np.exp(scale * rng.standard_normal(var.shape)), 1e-3)
        return GMMGenerator(_nest(mu[order]), _nest(var[order]), g.sub_dims, g.inflation, g.inlier_quantile,
                            g.anomaly_quantile)
    if isinstance(g, SCMGenerator):
        f = np.exp(scale * rng.standard_normal(2))
        return SCMGenerator(g.layers, g.width, g.keep_prob, round(g.noise_std * f[0], 3), g.weight_seed,
                            g.feature_nodes, g.anomaly_nodes, round(max(1.0, g.anomaly_scale * f[1]), 3))
    if isinstance(g, CopulaGenerator):
        margins = tuple((name, round(shape * math.exp(scale * rng.standard_normal()), 3),
                         round(loc + scale * rng.standard_normal(), 3),
                         round(sc * math.exp(scale * rng.standard_normal()), 3))
                        for name, shape, loc, sc in g.marginals)
        if g.kind == "clayton":
            return CopulaGenerator("clayton", margins, g.reflect_dims,
                                   theta=round(g.theta * math.exp(scale * rng.standard_normal()), 3))
        c = np.asarray(g.correlation)
        noise = scale * rng.standard_normal(c.shape)
        c2 = np.clip(c + np.triu(noise, 1) + np.triu(noise, 1).T, -0.99, 0.99)
        np.fill_diagonal(c2, 1.0)
        c2 = np.vectorize(lambda v: round(float(v), 3))(c2)
        if np.linalg.eigvalsh(c2).min() < 1e-2:  # keep a valid correlation matrix
            c2 = c
        return CopulaGenerator("gaussian", margins, g.reflect_dims, correlation=_nest(c2))
    raise ValueError(f"generator must be a GMMGenerator, SCMGenerator or CopulaGenerator, got {type(g).__name__}")


def _nest(a) -> tuple:
    return tuple(tuple(float(v) for v in row) for row in np.asarray(a))


# ----------------------------------------------------------------------------- the program encoder
@contextlib.contextmanager
def seeded_init(seed: int):
    """Build modules under torch's global RNG seeded with ``seed``, restoring the global state afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        yield


class ProgramEncoder(nn.Module):
    """Transformer program encoder: ids ``(B, L)`` -> prefix embeddings ``(B, prefix, width)``.

    Token embedding plus a linear map of the token's numeric features and a learned position;
    a transformer encoder over the non-padding tokens; ``prefix`` learned queries cross-attend over
    its outputs. :meth:`embed` is the normalised projection used by the contrastive loss.
    """

    def __init__(self, tokenizer: ProgramTokenizer, *, width: int = 32, layers: int = 2, heads: int = 4,
                 prefix: int = 4, max_len: int = 512, seed: int = 0):
        super().__init__()
        for name, v, low in (("width", width, 1), ("layers", layers, 1), ("heads", heads, 1),
                             ("prefix", prefix, 1), ("max_len", max_len, 8)):
            if not isinstance(v, int) or v < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
        if width % heads:
            raise ValueError(f"width must be a multiple of heads = {heads}, got {width}")
        self.max_len, self.prefix, self.width = max_len, prefix, width
        with seeded_init(seed):
            self.token = nn.Embedding(len(tokenizer), width, padding_idx=PAD_ID)
            self.value = nn.Linear(2, width)
            self.position = nn.Embedding(max_len, width)
            layer = nn.TransformerEncoderLayer(width, heads, 2 * width, dropout=0.0, batch_first=True,
                                               norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.queries = nn.Parameter(0.1 * torch.randn(prefix, width))
            self.cross = nn.MultiheadAttention(width, heads, dropout=0.0, batch_first=True)
            self.norm = nn.LayerNorm(width)
            self.head = nn.Sequential(nn.Linear(prefix * width, width), nn.GELU(), nn.Linear(width, width))
        self.register_buffer("values", torch.as_tensor(tokenizer.values), persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.dim() != 2 or ids.shape[1] > self.max_len:
            raise ValueError(f"ids must have shape (batch, length <= max_len = {self.max_len}), "
                             f"got {tuple(ids.shape)}")
        pad = ids == PAD_ID
        pos = torch.arange(ids.shape[1], device=ids.device)
        h = self.token(ids) + self.value(self.values[ids]) + self.position(pos)
        h = self.encoder(h, src_key_padding_mask=pad)
        q = self.queries.expand(ids.shape[0], -1, -1)
        out, _ = self.cross(q, h, h, key_padding_mask=pad, need_weights=False)
        return self.norm(out + q)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Unit-norm projection ``(B, width)`` of the prefix embeddings (the contrastive space)."""
        z = self.head(self(ids).flatten(1))
        return nn.functional.normalize(z, dim=-1)


def contrastive_loss(z1, z2, temperature: float = 0.1):
    """Symmetric InfoNCE (NT-Xent) of paired unit embeddings ``(B, w)``: pair ``i`` of ``z1`` with ``i`` of ``z2``."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    logits = z1 @ z2.T / temperature
    target = torch.arange(len(z1), device=z1.device)
    return 0.5 * (nn.functional.cross_entropy(logits, target) + nn.functional.cross_entropy(logits.T, target))


def pretrain_program_encoder(encoder, tokenizer: ProgramTokenizer, prior, *, steps: int, batch: int,
                             rng: np.random.Generator, lr: float = 3e-3, temperature: float = 0.1,
                             perturb_scale: float = 0.05, device="cpu", progress: bool = False) -> list[float]:
    """Contrastive pretraining: two perturbed programs of each of ``batch`` fresh generators per step.

    Returns the loss per step; the encoder is left in eval mode with its parameters frozen
    (``requires_grad = False``), as PIQL freezes it before training the foundation model.
    """
    from tqdm import tqdm  # the console bar: tqdm.auto warns in a notebook without ipywidgets

    from .teacher_forcing import _single_thread

    for name, v in (("steps", steps), ("batch", batch)):
        if not isinstance(v, (int, np.integer)) or v < (2 if name == "batch" else 1):
            raise ValueError(f"{name} must be an integer >= {2 if name == 'batch' else 1}, got {v!r}")
    losses = []
    with _single_thread(device):
        encoder.train()
        opt = torch.optim.Adam([p for p in encoder.parameters() if p.requires_grad], lr=lr)
        for _ in tqdm(range(steps), disable=not progress, desc="program encoder"):
            gens = [prior.sample_generator(rng) for _ in range(batch)]
            views = [[perturb_generator(g, rng, perturb_scale) for g in gens] for _ in range(2)]
            ids = [torch.as_tensor(tokenizer.encode_batch(v, encoder.max_len), device=device) for v in views]
            loss = contrastive_loss(encoder.embed(ids[0]), encoder.embed(ids[1]), temperature)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    freeze(encoder)
    return losses


def freeze(module):
    """Eval mode and ``requires_grad = False`` on every parameter; returns the module."""
    module.eval()
    for p in module.parameters():
        p.requires_grad_(False)
    return module
