from .._exports import lazy_exports

_GROUPS = (
    ("model", "selfpretraining/01-04", "the small transformer encoder (and its no-attention baseline)",
     ("ModelConfig", "Encoder", "NoAttentionEncoder", "SelfAttention", "Block", "scale_qk", "alibi_slopes",
      "positional_product")),
    ("tasks", "selfpretraining/01-04", "the random-walk classification task and its data",
     ("WalkTask", "sample_walks", "sample_sticky_chain", "reverse", "token_counts", "labels_from_clean_tokens")),
    ("masking", "selfpretraining/01", "masked-token corruption and the reconstruction loss",
     ("check_mlm_prob", "mask_tokens", "reconstruction_loss", "masked_reconstruction_loss")),
    ("gradients", "selfpretraining/01", "attention-score gradients at uniform attention, closed forms and directions",
     ("label_score_gradients", "reconstruction_score_gradients", "label_gradient_closed_form",
      "reconstruction_gradient_closed_form", "band_direction", "centre_rows_and_columns", "row_shared_fraction",
      "relational_norm_ratio", "direction_cosine")),
    ("proximity", "selfpretraining/02-03", "how much attention looks at neighbours",
     ("local_mass", "uniform_local_mass", "toeplitz_score", "mean_attention_by_offset", "attention_snapshot",
      "proximity_summary")),
    ("train", "selfpretraining/01-04", "training loops: self-pretraining, classification, accuracy",
     ("History", "build_model", "pretrain", "train_classifier", "accuracy", "bag_of_tokens_accuracy")),
    ("transfer", "selfpretraining/03", "which pretrained weights a fine-tuned model starts from",
     ("finetune_init", "hybrid_init", "freeze_attention")),
    ("listops", "selfpretraining/05", "ListOps by LRA's rules: generator, tokens, two evaluators",
     ("ListOpsTask", "sample_listops", "sample_tree", "evaluate", "evaluate_tokens", "evaluate_recursive",
      "tree_tokens", "feasible_lengths")),
    ("digits_seq", "selfpretraining/05", "the bundled handwritten digits as pixel sequences",
     ("digit_images", "to_sequences", "digit_split")),
    ("pathfinder", "selfpretraining/06", "PathFinder-lite images and the connectivity check",
     ("PathFinderTask", "sample_image", "sample_pathfinder", "endpoints_connected")),
    ("positional", "selfpretraining/05-06, 08", "how Toeplitz a positional score matrix is",
     ("diagonal_energy_fraction", "toeplitz_projection", "offset_profile", "random_diagonal_fraction")),
    ("mini_lra", "selfpretraining/05-08", "the mini LRA's shared vocabulary, data and per-seed protocol",
     ("task_data", "lra_seed", "lra_job_ids", "merge_lra_jobs", "spt_run", "checkpoint_gap", "majority_accuracy", "verdict")),
    ("protocols", "selfpretraining/02-04", "per-seed protocols for runtime.map_seeds, and the claims' criteria",
     ("scratch_vs_spt", "no_attention_baseline", "ablation_seed", "depth_seed", "recovered_fractions",
      "chance_tolerance", "binomial_se")),
)

__doc__, __all__, __getattr__, __dir__ = lazy_exports(
    __name__, "Part II, self-pretraining (Coser et al.): gradient blindness of mean pooling.", _GROUPS)
