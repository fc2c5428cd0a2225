"""The PFN-style detector: attention mask, prefixes, the teacher-forcing schedule, and no program at evaluation."""

import inspect

import numpy as np
import pytest
import torch

from blindspots.privileged import pfn as F
from blindspots.privileged import priors as P
from blindspots.privileged import program as G
from blindspots.privileged.metafeatures import meta_features

torch.set_num_threads(1)
PRIOR = P.MixturePrior(d_max=3, n_context=20, n_query=6)
TOK = G.ProgramTokenizer()
MAX_LEN = 128


@pytest.fixture(scope="module")
def encoder():
    return G.freeze(G.ProgramEncoder(TOK, width=16, layers=1, heads=2, prefix=2, max_len=MAX_LEN, seed=0))


def _model(encoder=None, meta=False, seed=0):
    return F.PFN(3, width=16, layers=2, heads=2, meta=meta, program_encoder=encoder, seed=seed)


def _tensors(seed=0, tasks=4, prior=PRIOR):
    return F.batch_tensors(prior.sample_batch(tasks, np.random.default_rng(seed)), meta=True, tokenizer=TOK,
                           max_len=MAX_LEN)


def _args(t):
    return t["context_x"], t["context_y"], t["query_x"], t["feature_mask"]


def test_attention_mask_lets_every_row_see_prefix_and_context_only():
    m = F.attention_mask(2, 3, 4)
    assert m.shape == (9, 9) and m.dtype == torch.bool
    assert not m[:, :5].any() and m[:, 5:].all()
    with pytest.raises(ValueError, match="n_context must be an integer >= 1"):
        F.attention_mask(1, 0, 2)


def test_a_query_output_depends_on_the_context_and_itself_not_on_other_queries(encoder):
    model = _model(encoder, meta=True).eval()
    t = _tensors()
    base = model.predict_proba(*_args(t), meta=t["meta"])
    assert base.shape == (4, 6) and torch.all((base > 0) & (base < 1))
    moved = dict(t, query_x=t["query_x"].clone())
    moved["query_x"][:, 0] += 3.0
    out = model.predict_proba(*_args(moved), meta=t["meta"])
    torch.testing.assert_close(out[:, 1:], base[:, 1:], atol=1e-6, rtol=1e-6)
    assert not torch.allclose(out[:, 0], base[:, 0])
    ctx = dict(t, context_x=t["context_x"].clone())
    ctx["context_x"][:, 0] += 3.0
    assert not torch.allclose(model.predict_proba(*_args(ctx), meta=t["meta"]), base)


@pytest.mark.parametrize("progress, alpha", [(0.0, 1.0), (0.10, 1.0), (0.25, 0.5), (0.40, 0.0), (1.0, 0.0)])
def test_training_uses_the_annealed_schedule(encoder, progress, alpha):
    """alpha = 1 for the first 10 %, cosine to 0 at 40 %, 0 after; the training loss mixes with it."""
    _, parts = F.training_loss(_model(encoder), _tensors(), progress)
    assert parts["alpha"] == pytest.approx(alpha, abs=1e-12)
    _, parts = F.training_loss(_model(), _tensors(), progress)  # no program: no teacher forcing
    assert parts["alpha"] == 0.0 and parts["embed"] == 0.0


def test_the_program_prefix_is_the_schedules_mixture_of_student_and_teacher(encoder):
    model = _model(encoder).train()
    t = _tensors()
    outs = {a: model(*_args(t), program_ids=t["program_ids"], alpha=a) for a in (0.0, 0.5, 1.0)}
    student, teacher = outs[0.0].student, outs[0.0].teacher
    assert student.shape == teacher.shape == (4, 2, 16)
    # alpha = 1 is the model fed the teacher embedding; alpha = 0.5 lies between (a different prefix)
    assert not torch.allclose(outs[1.0].logits, outs[0.0].logits)
    assert not torch.allclose(outs[0.5].logits, outs[0.0].logits)
    torch.testing.assert_close(outs[1.0].student, student)


def test_no_program_tokens_reach_the_model_at_evaluation(encoder, monkeypatch):
    model = _model(encoder, meta=True)
    t = _tensors()
    # the deployable path has no program argument at all
    assert "program_ids" not in inspect.signature(model.predict_proba).parameters
    # eval mode refuses a program
    model.eval()
    with pytest.raises(ValueError, match="program_ids must be None at evaluation"):
        model(*_args(t), meta=t["meta"], program_ids=t["program_ids"])
    # predict_proba never calls the program encoder
    base = model.predict_proba(*_args(t), meta=t["meta"])

    def refuse(*a, **k):
        raise AssertionError("the program encoder was called at evaluation")

    monkeypatch.setattr(model.program_encoder, "forward", refuse)
    torch.testing.assert_close(model.predict_proba(*_args(t), meta=t["meta"]), base, atol=0, rtol=0)
    monkeypatch.undo()
    # with alpha = 0 (the end of training), a perturbed or different program leaves the output unchanged
    model.train()
    other = F.batch_tensors(PRIOR.sample_batch(4, np.random.default_rng(99)), tokenizer=TOK, max_len=MAX_LEN)
    gens = PRIOR.sample_batch(4, np.random.default_rng(0)).generators
    perturbed = torch.as_tensor(TOK.encode_batch([G.perturb_generator(g, np.random.default_rng(1), 0.3)
                                                  for g in gens], MAX_LEN))
    z = model(*_args(t), meta=t["meta"], program_ids=t["program_ids"], alpha=0.0).logits
    for ids in (other["program_ids"], perturbed):
        torch.testing.assert_close(model(*_args(t), meta=t["meta"], program_ids=ids, alpha=0.0).logits, z,
                                   atol=0, rtol=0)
    torch.testing.assert_close(torch.sigmoid(z).detach(), base, atol=1e-6, rtol=1e-6)


def test_program_input_is_refused_where_it_has_no_place(encoder):
    t = _tensors()
    with pytest.raises(ValueError, match="without a program encoder"):
        _model().train()(*_args(t), program_ids=t["program_ids"])
    with pytest.raises(ValueError, match="alpha must be 0 without program_ids"):
        _model(encoder).train()(*_args(t), alpha=0.5)
    live = G.ProgramEncoder(TOK, width=16, layers=1, heads=2, prefix=2, max_len=MAX_LEN)
    with pytest.raises(ValueError, match="program_encoder must be frozen"):
        _model(live)


def test_meta_pi_is_the_theory_chapters_meta_features_of_the_raw_context():
    b = PRIOR.sample_batch(3, np.random.default_rng(2))
    m = F.meta_pi(b.context_x, b.feature_mask)
    assert m.shape == (3, 3, 9)
    for k in range(3):
        d = b.feature_mask[k].sum()
        raw = meta_features(b.context_x[k][:, :d])
        np.testing.assert_allclose(m[k, :d], np.sign(raw) * np.log1p(np.abs(raw)))
        assert np.all(m[k, d:] == 0)


def test_the_model_standardises_its_rows_but_meta_pi_sees_the_raw_scale():
    t = _tensors(seed=3)
    scaled = dict(t, context_x=10 * t["context_x"] + 2, query_x=10 * t["query_x"] + 2)
    base = _model().eval()
    torch.testing.assert_close(base.predict_proba(*_args(scaled)), base.predict_proba(*_args(t)),
                               atol=1e-5, rtol=1e-4)
    meta = _model(meta=True).eval()
    raw_meta = torch.as_tensor(F.meta_pi(scaled["context_x"].numpy(), scaled["feature_mask"].numpy()),
                               dtype=torch.float32)
    assert not torch.allclose(meta.predict_proba(*_args(scaled), meta=raw_meta),
                              meta.predict_proba(*_args(t), meta=t["meta"]), atol=1e-4)


def test_hidden_states_per_layer_for_probes():
    out = _model().train()(*_args(_tensors()), return_hidden=True)
    assert len(out.hidden) == 3 and all(h.shape == (4, 16) for h in out.hidden)


def test_training_is_reproducible_and_checkpoints_load_with_weights_only(encoder, tmp_path):
    runs = [F.train_pfn("both", PRIOR, steps=4, batch=4, rng=np.random.default_rng(5), width=16, layers=1,
                        heads=2, program_encoder=encoder, tokenizer=TOK, max_len=MAX_LEN, seed=1)
            for _ in range(2)]
    assert runs[0][1] == runs[1][1] and [p["alpha"] for p in runs[0][1]] == pytest.approx([1.0, 0.5, 0.0, 0.0])
    model, _ = runs[0]
    path = tmp_path / "pfn.pt"
    torch.save(model.state_dict(), path)
    fresh = F.PFN(3, width=16, layers=1, heads=2, meta=True, program_encoder=encoder, seed=7)
    fresh.load_state_dict(torch.load(path, weights_only=True))
    t = _tensors()
    torch.testing.assert_close(fresh.predict_proba(*_args(t), meta=t["meta"]),
                               model.predict_proba(*_args(t), meta=t["meta"]), atol=0, rtol=0)


def test_the_encoder_stays_frozen_during_training(encoder):
    before = [p.clone() for p in encoder.parameters()]
    F.train_pfn("program", PRIOR, steps=3, batch=4, rng=np.random.default_rng(6), width=16, layers=1, heads=2,
                program_encoder=encoder, tokenizer=TOK, max_len=MAX_LEN)
    assert all(torch.equal(a, b) for a, b in zip(before, encoder.parameters()))


@pytest.mark.parametrize("kwargs, match", [
    (dict(variant="oracle"), "variant must be one of"),
    (dict(variant="program"), "needs program_encoder and tokenizer"),
    (dict(variant="baseline", steps=0), "steps must be an integer >= 1"),
])
def test_train_pfn_rejects_bad_settings(kwargs, match):
    kw = dict(steps=2, batch=2, rng=np.random.default_rng(0)) | kwargs
    with pytest.raises(ValueError, match=match):
        F.train_pfn(kw.pop("variant"), PRIOR, **kw)


def test_pfn_rejects_bad_sizes():
    with pytest.raises(ValueError, match="width must be a multiple of heads"):
        F.PFN(3, width=10, heads=4)
    with pytest.raises(ValueError, match="d_max must be an integer >= 1"):
        F.PFN(0)


def test_steps_to_reach():
    assert F.steps_to_reach([0.9, 0.5, 0.3, 0.2], 0.3) == 3.0
    assert F.steps_to_reach([0.9, 0.5], 0.1) == float("inf")
    assert F.steps_to_reach([0.9, 0.5, 0.2], 0.5, steps=[10, 20, 30]) == 20.0


def test_evaluate_pfn_scores_the_deployable_model(monkeypatch):
    prior = P.MixturePrior(d_max=3, n_context=20, n_query=30, anomaly_rate=0.3)
    batch = prior.sample_batch(6, np.random.default_rng(8))
    model = _model(meta=True)
    res = F.evaluate_pfn(model, batch)
    t = F.batch_tensors(batch, meta=True)
    p = model.predict_proba(*_args(t), meta=t["meta"]).double().numpy()
    y = batch.query_y
    # float32 forward passes: with another thread count the two calls may round differently (~1e-7)
    assert res["bce"] == pytest.approx(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean(), rel=1e-6)
    assert res["auroc_tasks"] == np.sum([0 < yi.sum() < len(yi) for yi in y]) and 0 <= res["auroc"] <= 1
    assert set(res["per_family"]) <= set(P.FAMILIES)
    # a scorer that knows the labels has AUROC 1
    monkeypatch.setattr(model, "predict_proba", lambda cx, cy, qx, fm, meta=None: 0.25 + 0.5 * t["query_y"])
    perfect = F.evaluate_pfn(model, batch)
    assert perfect["auroc"] == 1.0 and perfect["pooled_auroc"] == 1.0
