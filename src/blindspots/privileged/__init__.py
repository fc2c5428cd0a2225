from .._exports import lazy_exports

_GROUPS = (
    ("theory", "privileged/01-02", "the normal-inverse-gamma anomaly model, exact posteriors and the information gap",
     ("GaussianAnomalyPrior", "NIGPosterior", "posterior", "sample_generators", "sample_points", "log_predictive",
      "label_logprobs_given_context", "label_logprobs_given_generator", "information_gap_curve",
      "asymptotic_gap_constant", "asymptotic_gap_bound", "entropy", "bernoulli_kl")),
    ("metafeatures", "privileged/01", "meta-features of a dataset", ("meta_features",)),
    ("representation", "privileged/01", "the two-shape task and the representation gap of bilinear read-outs",
     ("TwoShapeTask", "representation_gaps", "shape_blind_excess", "per_shape_excess", "fit_read_out",
      "bayes_risk_given_shape")),
    ("teacher_forcing", "privileged/02", "the privileged detector, annealed teacher forcing, training arms",
     ("PrivilegedDetector", "teacher_forcing_weight", "mix_embeddings", "generator_embedding", "train_arms",
      "effect_samples")),
    ("priors", "privileged/03-04", "PIQL's task priors: GMM, random-MLP SCM, copula, mixture; tasks and padding",
     ("GMMPrior", "SCMPrior", "CopulaPrior", "MixturePrior", "GMMGenerator", "SCMGenerator", "CopulaGenerator",
      "Task", "TaskBatch", "make_task", "stack_tasks", "pad_features", "check_features")),
    ("program", "privileged/03-04", "program PI: the generator DSL, its tokenizer, the contrastive program encoder",
     ("serialise", "parse", "ProgramTokenizer", "perturb_generator", "ProgramEncoder", "contrastive_loss",
      "pretrain_program_encoder", "freeze")),
    ("pfn", "privileged/03-04", "the PFN-style detector with meta-PI and program-PI prefixes, and its training",
     ("PFN", "PFNOutput", "SetStudent", "attention_mask", "meta_pi", "batch_tensors", "training_loss", "fit_pfn",
      "train_pfn", "bce", "task_aurocs", "evaluate_pfn", "steps_to_reach")),
    ("piql", "privileged/03-04", "PIQL's experiments: variants, meta-PI++, hashed program embedding, speedups, probes",
     ("meta_pi_plus", "HashedProgramEncoder", "speedup", "speedups", "speedup_interval", "km_median",
      "run_seed", "pretrain_encoder", "train_variant", "probe_accuracy", "claim_samples")),
    ("realdata", "privileged/03", "ODDS-style outlier benchmarks from scikit-learn data; IsolationForest, LOF, OCSVM",
     ("odds_dataset", "novelty_splits", "split_batch", "baseline_scores", "detection_scores", "OutlierDataset",
      "outlier_draws", "paired_over_draws")),
)

__doc__, __all__, __getattr__, __dir__ = lazy_exports(
    __name__, "Part III, privileged information (Ding & Akoglu, PIQL): learning using privileged information.",
    _GROUPS)
