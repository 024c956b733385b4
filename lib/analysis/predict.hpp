// `xtk-analyze predict`: the traffic and iteration time of a training job from
// its configuration, before running it.
//
// GPT with hybrid parallelism follows Li et al., APNet 2024, section 5, on top
// of Megatron-LM's counts (Narayanan et al., SC 2021): per iteration and GPU,
//   TP  m * (l/p) * 6 all-reduces of 2bsh bytes in groups of t (ring factor 2(t-1)/t)
//   PP  a send of 2bsh bytes per micro-batch and direction between stages
//   DP  one all-reduce of the 2N/(p t) gradient bytes in groups of d (ring factor 2(d-1)/d)
//   embedding sync: one all-reduce of the 2Vh/t word-embedding gradient bytes
//       between the first and last stage
// with compute time FLOPs / (GPUs * mu * F), bubble (p-1)/(p-1+m), and
//   iteration = (compute + TP + PP) / (1 - bubble) + DP + embedding.
// Pure data-parallel jobs (a model of configs/models/params.csv on N ranks)
// have only the DP term, D = 2(N-1)/N * P * bytes/param.
// docs/analysis.md derives every term.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/output.hpp"

namespace xtk::analysis {

struct GptConfig {
  std::uint64_t layers = 0, hidden = 0, seq = 0, vocab = 0;  // l, h, s, V
  std::uint64_t global_batch = 0, micro_batch = 1;           // B, b (sequences)
  std::uint64_t micro_batches = 0;                           // m per iteration; 0 = B / (b d)
  std::uint64_t tp = 1, pp = 1, dp = 1;                      // t, p, d
  double utilisation = 0.5;                                  // mu: achieved share of the peak
  double peak_flops = 0;                                     // F per GPU, FLOP/s
  double bw_tp_bps = 0, bw_pp_bps = 0, bw_dp_bps = 0;        // effective bandwidths C_TP, C_PP, C_DP
  bool recompute = true;         // activation recomputation: 6 TP all-reduces per layer, 4 passes of FLOPs
  double bytes_per_element = 2;  // fp16/bf16 activations and gradients
};

struct DpConfig {
  std::string model;
  double params = 0, bytes_per_param = 0;
  std::uint64_t ranks = 0;
  double compute_us = 0;    // forward and backward, measured or estimated
  double bw_bps = 0;        // effective all-reduce bandwidth per rank
  double bucket_bytes = 0;  // gradient bucket (PyTorch DDP: 25 MiB); 0 = one all-reduce
};

struct TrafficType {
  std::string type;        // TP, PP, DP, embedding
  std::string collective;  // all-reduce, send/recv
  std::uint64_t group = 0;
  double messages = 0;       // per GPU per iteration
  double message_bytes = 0;  // payload of one message
  double volume_bytes = 0;   // messages x message_bytes
  double wire_bytes = 0;     // what the GPU sends: volume x the ring factor
  double bandwidth_bps = 0;
  double time_us = 0;  // wire bytes / bandwidth
};

struct Prediction {
  std::string model;
  std::uint64_t gpus = 0, tp = 1, pp = 1, dp = 1, micro_batches = 1;
  double params = 0;
  double flops_per_iter = 0;  // NaN for DP models (compute time given)
  double compute_us = 0, bubble_ratio = 0, comm_us = 0, iteration_us = 0, comm_ratio = 0;
  std::vector<TrafficType> traffic;
};

// Parameters of a GPT: 12 l h^2 + 13 l h + (V + s) h (Narayanan et al., SC 2021).
double gpt_params(const GptConfig& c);
// FLOPs of one iteration: 96 B s l h^2 (1 + s/6h + V/16lh) with recomputation,
// 72 B s l h^2 (1 + s/6h + V/12lh) without.
double gpt_flops_per_iter(const GptConfig& c);

// Throw UsageError naming the flag (--pp, --bw-tp, ...) of an inconsistent setting.
Prediction predict_gpt(const GptConfig& c);
Prediction predict_dp(const DpConfig& c);

// "prediction" (one row) and "traffic" (one row per type).
std::vector<NamedTable> prediction_tables(const Prediction& p);

}  // namespace xtk::analysis
