//===- MegatronArgTables.h - What each Megatron argument means --*- C++ -*-===//
//
// The importer's mapping of Megatron-LM's arguments (docs/Importer.md), as
// tables: read into the model config, set a ddp-schedule option, left out
// with a note, refused, or irrelevant to the step. MegatronArgs.cpp reads the
// dump with them.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_IMPORT_MEGATRONARGTABLES_H
#define DDP_LIB_IMPORT_MEGATRONARGTABLES_H

#include "llvm/ADT/StringRef.h"

namespace ddp::importer {

/// Megatron arguments read straight into the model config field of the
/// same name. `None` leaves the field to its default.
inline constexpr llvm::StringLiteral integerConfigArgs[] = {
    "num_layers",
    "hidden_size",
    "ffn_hidden_size",
    "num_attention_heads",
    "kv_channels",
    "seq_length",
    "max_position_embeddings",
    "micro_batch_size",
    "make_vocab_size_divisible_by",
    "tensor_model_parallel_size",
    "data_parallel_size",
    "expert_model_parallel_size",
    "moe_router_topk",
    "pipeline_model_parallel_size",
    "virtual_pipeline_model_parallel_size",
    "num_layers_per_virtual_pipeline_stage",
    "microbatch_group_size_per_vp_stage",
    "decoder_first_pipeline_num_layers",
    "decoder_last_pipeline_num_layers",
};
inline constexpr llvm::StringLiteral boolConfigArgs[] = {
    "swiglu",          "untie_embeddings_and_output_weights",
    "add_bias_linear", "sequence_parallel",
    "squared_relu",     "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split",
};
inline constexpr llvm::StringLiteral numberConfigArgs[] = {
    "hidden_dropout", "lr", "adam_beta1", "adam_beta2", "adam_eps",
};

/// A Megatron argument and the ddp-schedule option it sets.
struct ScheduleArg {
  llvm::StringLiteral megatronName, optionName;
  bool isInteger;
};
inline constexpr ScheduleArg scheduleArgs[] = {
    {"overlap_grad_reduce", "overlap-grad-reduce", false},
    {"overlap_param_gather", "overlap-param-gather", false},
    {"use_distributed_optimizer", "use-distributed-optimizer", false},
    {"ddp_bucket_size", "bucket-size", true},
    {"ddp_num_buckets", "num-buckets", true},
    {"ddp_average_in_collective", "average-in-collective", false},
    {"accumulate_allreduce_grads_in_fp32", "grad-reduce-in-fp32", false},
    {"check_for_nan_in_loss_and_grad", "check-for-nan-in-grad", false},
    {"align_param_gather", "align-param-gather", false},
    // Megatron prints it after validate_args, which turns it off without
    // virtual stages (arguments.py L1010-1018).
    {"overlap_p2p_comm", "overlap-p2p-comm", false},
    {"num_distributed_optimizer_instances",
     "num-distributed-optimizer-instances", true},
    {"ddp_pad_buckets_for_high_nccl_busbw", "pad-buckets-for-high-nccl-busbw",
     false},
    // The tensor-parallel overlap (ddp-overlap-tp-comm).
    {"tp_comm_overlap", "tp-comm-overlap", false},
    {"tp_comm_overlap_ag", "tp-comm-overlap-ag", false},
    {"tp_comm_overlap_rs", "tp-comm-overlap-rs", false},
    {"tp_comm_overlap_rs_dgrad", "tp-comm-overlap-rs-dgrad", false},
    {"tp_comm_bulk_dgrad", "tp-comm-bulk-dgrad", false},
    {"tp_comm_bulk_wgrad", "tp-comm-bulk-wgrad", false},
    // Megatron-FSDP's prefetch budget and double buffers (ddp-shard-params).
    {"suggested_communication_unit_size", "suggested-communication-unit-size",
     true},
    {"fsdp_double_buffer", "fsdp-double-buffer", false},
};

/// Arguments whose effect the step does not model; a value other than the
/// default gets a note saying what was left out.
struct LeftOutArg {
  llvm::StringLiteral name, defaultValue, consequence;
  /// Whether the argument matters only with experts.
  bool onlyWithExperts = false;
};
inline constexpr LeftOutArg leftOutArgs[] = {
    {"fp8", "None", "the step computes in the parameters' dtype"},
    {"distribute_saved_activations", "False",
     "a checkpointed layer's input is counted whole on every "
     "tensor-parallel rank"},
    {"rampup_batch_size", "None", "the step has the final global batch size"},
    {"add_qkv_bias", "False", "the step has biases only with add_bias_linear"},
    // TEGroupedMLP runs the local experts' GEMMs as one grouped GEMM; the
    // step has SequentialMLP's, one per expert, priced apart.
    {"moe_grouped_gemm", "False",
     "each local expert's GEMMs are separate ops, priced apart "
     "(SequentialMLP), not one grouped GEMM",
     /*onlyWithExperts=*/true},
};

/// Arguments that decide the step's layout when they differ from the
/// default; the step cannot express them, so they are errors.
struct UnsupportedArg {
  llvm::StringLiteral name, defaultValue, reason;
};
inline constexpr UnsupportedArg unsupportedArgs[] = {
    {"context_parallel_size", "1",
     "context parallelism splits the sequence and widens the gradient "
     "reduction group, which the dialect cannot express yet"},
    {"use_torch_fsdp2", "False",
     "PyTorch FSDP2's wrapping is not read; Megatron-FSDP's is "
     "(use_megatron_fsdp with data_parallel_sharding_strategy, which "
     "ddp-schedule's data-parallel-sharding-strategy builds)"},
};

/// Megatron arguments that do not change the step: data, logging,
/// checkpointing, initialization, kernels, the learning-rate schedule and
/// the precision settings already covered by bf16/fp16. They are read
/// silently; any other argument is listed in one note.
inline constexpr llvm::StringLiteral irrelevantArgs[] = {
    "add_position_embedding",
    "adlr_autoresume",
    "adlr_autoresume_interval",
    "align_grad_reduce",
    "apply_layernorm_1p",
    "apply_query_key_layer_scaling",
    "apply_residual_connection_post_layernorm",
    "apply_rope_fusion",
    "async_save",
    "async_tensor_model_parallel_allreduce",
    "attention_dropout",
    "attention_softmax_in_fp32",
    "barrier_with_L1_time",
    "bias_dropout_fusion",
    "bias_gelu_fusion",
    "bias_swiglu_fusion",
    "calculate_per_token_loss",
    "check_weight_hash_across_dp_replicas_interval",
    "ckpt_format",
    "clip_grad",
    "consumed_train_samples",
    "consumed_valid_samples",
    "cross_entropy_loss_fusion",
    "data_cache_path",
    "data_parallel_random_init",
    "data_path",
    "dataloader_type",
    "decoder_num_layers",
    "decoder_seq_length",
    "decoupled_lr",
    "decoupled_min_lr",
    "defer_embedding_wgrad_compute",
    "deterministic_mode",
    "distributed_backend",
    "distributed_timeout_minutes",
    "empty_unused_memory_level",
    "encoder_num_layers",
    "encoder_seq_length",
    "end_weight_decay",
    "eval_interval",
    "eval_iters",
    "exit_duration_in_mins",
    "exit_interval",
    "exit_on_missing_checkpoint",
    "exit_signal_handler",
    "fp16_lm_cross_entropy",
    "fp32_residual_connection",
    "gradient_accumulation_fusion",
    "head_lr_mult",
    "hysteresis",
    "init_method_std",
    "init_method_xavier_uniform",
    "initial_loss_scale",
    "iteration",
    "lazy_mpu_init",
    "load",
    "local_rank",
    "log_interval",
    "log_memory_to_tensorboard",
    "log_num_zeros_in_grad",
    "log_params_norm",
    "log_throughput",
    "log_timers_to_tensorboard",
    "log_validation_ppl_to_tensorboard",
    "loss_scale",
    "loss_scale_window",
    "lr_decay_iters",
    "lr_decay_samples",
    "lr_decay_style",
    "lr_warmup_fraction",
    "lr_warmup_init",
    "lr_warmup_iters",
    "lr_warmup_samples",
    "manual_gc",
    "masked_softmax_fusion",
    "merge_file",
    "min_loss_scale",
    "min_lr",
    "mmap_bin_files",
    "moe_aux_loss_coeff",
    "moe_router_load_balancing_type",
    "no_load_optim",
    "no_load_rng",
    "no_save_optim",
    "no_save_rng",
    "norm_epsilon",
    "num_dataset_builder_threads",
    "num_workers",
    "overlap_param_gather_with_optimizer_step",
    "override_opt_param_scheduler",
    "perform_initialization",
    "pipeline_model_parallel_split_rank",
    "profile",
    "profile_ranks",
    "profile_step_end",
    "profile_step_start",
    "rank",
    "reset_attention_mask",
    "reset_position_ids",
    "rotary_base",
    "rotary_interleaved",
    "rotary_percent",
    "save",
    "save_interval",
    "seed",
    "split",
    "standalone_embedding_stage",
    "start_weight_decay",
    "tensorboard_dir",
    "tensorboard_log_interval",
    "tensorboard_queue_size",
    "timing_log_level",
    "timing_log_option",
    "tokenizer_model",
    "tokenizer_type",
    "tp_comm_overlap_cfg",
    "tp_comm_split_ag",
    "tp_comm_split_rs",
    "train_data_path",
    "train_iters",
    "train_samples",
    "transformer_impl",
    "use_checkpoint_args",
    "use_cpu_initialization",
    "use_dist_ckpt",
    "use_flash_attn",
    "use_mcore_models",
    "use_rotary_position_embeddings",
    "valid_data_path",
    "vocab_file",
    "wandb_exp_name",
    "wandb_project",
    "wandb_save_dir",
    "weight_decay",
    "weight_decay_incr_style",
    "world_size",
    "yaml_cfg",
};

} // namespace ddp::importer

#endif // DDP_LIB_IMPORT_MEGATRONARGTABLES_H
