#include "analysis/predict.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace xtk::analysis {
namespace {

double ring_factor(std::uint64_t group) {
  const auto n = static_cast<double>(group);
  return 2 * (n - 1) / n;
}

double time_us(double wire_bytes, double bps) { return wire_bytes > 0 ? wire_bytes * 8 / bps * 1e6 : 0.0; }

void require_bandwidth(double bps, std::uint64_t group, std::string_view flag, std::string_view parallel) {
  if (group > 1 && !(bps > 0)) {
    throw UsageError(
        fmt::format("{} is needed with {} {} (the effective bandwidth of that traffic)", flag, parallel, group));
  }
}

}  // namespace

double gpt_params(const GptConfig& c) {
  const auto l = static_cast<double>(c.layers), h = static_cast<double>(c.hidden);
  return 12 * l * h * h + 13 * l * h + static_cast<double>(c.vocab + c.seq) * h;
}

double gpt_flops_per_iter(const GptConfig& c) {
  const auto l = static_cast<double>(c.layers), h = static_cast<double>(c.hidden);
  const auto s = static_cast<double>(c.seq), v = static_cast<double>(c.vocab);
  const double base = static_cast<double>(c.global_batch) * s * l * h * h;
  return c.recompute ? 96 * base * (1 + s / (6 * h) + v / (16 * l * h))
                     : 72 * base * (1 + s / (6 * h) + v / (12 * l * h));
}

Prediction predict_gpt(const GptConfig& c) {
  if (c.layers == 0 || c.hidden == 0 || c.seq == 0 || c.vocab == 0 || c.global_batch == 0 || c.micro_batch == 0) {
    throw UsageError("--layers, --hidden, --seq, --vocab, --global-batch and --micro-batch must be above 0");
  }
  if (c.tp == 0 || c.pp == 0 || c.dp == 0) throw UsageError("--tp, --pp and --dp must be above 0");
  if (c.layers % c.pp != 0) {
    throw UsageError(fmt::format("--layers {} is not a multiple of --pp {}: stages hold whole layers", c.layers, c.pp));
  }
  if (c.hidden % c.tp != 0) {
    throw UsageError(
        fmt::format("--hidden {} is not a multiple of --tp {}: tensor parallelism splits it", c.hidden, c.tp));
  }
  std::uint64_t m = c.micro_batches;
  if (m == 0) {
    if (c.global_batch % (c.micro_batch * c.dp) != 0) {
      throw UsageError(fmt::format("--global-batch {} is not a multiple of --micro-batch {} x --dp {}", c.global_batch,
                                   c.micro_batch, c.dp));
    }
    m = c.global_batch / (c.micro_batch * c.dp);
  } else if (m * c.micro_batch * c.dp != c.global_batch) {
    throw UsageError(fmt::format("--micro-batches {} x --micro-batch {} x --dp {} is not --global-batch {}", m,
                                 c.micro_batch, c.dp, c.global_batch));
  }
  if (!(c.utilisation > 0 && c.utilisation <= 1)) throw UsageError("--mfu must be in (0, 1]");
  if (!(c.peak_flops > 0)) throw UsageError("--peak (FLOP/s per GPU) is needed, e.g. --peak 989T");
  require_bandwidth(c.bw_tp_bps, c.tp, "--bw-tp", "--tp");
  require_bandwidth(c.bw_pp_bps, c.pp, "--bw-pp", "--pp");
  require_bandwidth(c.bw_dp_bps, c.dp, "--bw-dp", "--dp");

  Prediction p;
  p.model = fmt::format("gpt-l{}-h{}-s{}", c.layers, c.hidden, c.seq);
  p.tp = c.tp;
  p.pp = c.pp;
  p.dp = c.dp;
  p.gpus = c.tp * c.pp * c.dp;
  p.micro_batches = m;
  p.params = gpt_params(c);
  p.flops_per_iter = gpt_flops_per_iter(c);
  p.compute_us = p.flops_per_iter / (static_cast<double>(p.gpus) * c.utilisation * c.peak_flops) * 1e6;

  const double activation = c.bytes_per_element * static_cast<double>(c.micro_batch * c.seq * c.hidden);  // 2bsh
  const auto md = static_cast<double>(m);
  auto add = [&](std::string type, std::string collective, std::uint64_t group, double messages, double bytes,
                 double factor, double bps) {
    TrafficType t{std::move(type), std::move(collective), group, 0, 0, 0, 0, bps, 0};
    if (group > 1) {
      t.messages = messages;
      t.message_bytes = bytes;
      t.volume_bytes = messages * bytes;
      t.wire_bytes = t.volume_bytes * factor;
      t.time_us = time_us(t.wire_bytes, bps);
    }
    p.traffic.push_back(std::move(t));
    return p.traffic.back().time_us;
  };
  const double per_layer = c.recompute ? 6 : 4;            // forward 2, backward 2, recomputed forward 2
  const std::uint64_t layers_per_stage = c.layers / c.pp;  // exact: checked above
  const double tp = add("TP", "all-reduce", c.tp, md * static_cast<double>(layers_per_stage) * per_layer, activation,
                        ring_factor(c.tp), c.bw_tp_bps);
  // A middle stage sends activations forward and gradients backward; with
  // two stages each sends one direction only.
  const double pp = add("PP", "send/recv", c.pp, md * static_cast<double>(std::min<std::uint64_t>(2, c.pp - 1)),
                        activation, 1.0, c.bw_pp_bps);
  const double dp = add("DP", "all-reduce", c.dp, 1, c.bytes_per_element * p.params / static_cast<double>(c.pp * c.tp),
                        ring_factor(c.dp), c.bw_dp_bps);
  const double embedding =
      add("embedding", "all-reduce", c.pp > 1 ? 2 : 1, 1,
          c.bytes_per_element * static_cast<double>(c.vocab * c.hidden) / static_cast<double>(c.tp), ring_factor(2),
          c.bw_pp_bps);
  p.bubble_ratio = static_cast<double>(c.pp - 1) / static_cast<double>(c.pp - 1 + m);
  p.iteration_us = (p.compute_us + tp + pp) / (1 - p.bubble_ratio) + dp + embedding;
  p.comm_us = tp + pp + dp + embedding;
  p.comm_ratio = p.comm_us / p.iteration_us;
  return p;
}

Prediction predict_dp(const DpConfig& c) {
  if (c.ranks == 0) throw UsageError("--ranks must be above 0");
  if (!(c.compute_us > 0)) throw UsageError("--compute-time is needed (forward and backward time per iteration)");
  if (c.ranks > 1 && !(c.bw_bps > 0)) throw UsageError("--bw is needed with more than one rank");
  Prediction p;
  p.model = c.model;
  p.gpus = c.ranks;
  p.dp = c.ranks;
  p.params = c.params;
  p.flops_per_iter = std::numeric_limits<double>::quiet_NaN();
  p.compute_us = c.compute_us;
  TrafficType t{"DP", "all-reduce", c.ranks, 0, 0, 0, 0, c.bw_bps, 0};
  if (c.ranks > 1) {
    const double total = c.params * c.bytes_per_param;
    t.messages = c.bucket_bytes > 0 ? std::ceil(total / c.bucket_bytes) : 1;
    t.message_bytes = c.bucket_bytes > 0 ? std::min(c.bucket_bytes, total) : total;
    t.volume_bytes = total;
    t.wire_bytes = ring_factor(c.ranks) * total;
    t.time_us = time_us(t.wire_bytes, c.bw_bps);
  }
  p.traffic.push_back(t);
  p.comm_us = t.time_us;
  p.iteration_us = p.compute_us + p.comm_us;
  p.comm_ratio = p.comm_us / p.iteration_us;
  return p;
}

std::vector<NamedTable> prediction_tables(const Prediction& p) {
  Table summary({{"model"},
                 {"gpus"},
                 {"tp"},
                 {"pp"},
                 {"dp"},
                 {"micro_batches"},
                 {"params", 0},
                 {"flops_per_iter", 0},
                 {"compute_us", 1},
                 {"bubble_ratio", 4},
                 {"comm_us", 1},
                 {"iteration_us", 1},
                 {"comm_ratio", 4}});
  summary.add_row({p.model, p.gpus, p.tp, p.pp, p.dp, p.micro_batches, p.params, p.flops_per_iter, p.compute_us,
                   p.bubble_ratio, p.comm_us, p.iteration_us, p.comm_ratio});
  Table traffic({{"type"},
                 {"collective"},
                 {"group_size"},
                 {"messages", 0},
                 {"message_bytes", 0},
                 {"volume_bytes", 0},
                 {"wire_bytes", 0},
                 {"bandwidth_gbps", 3},
                 {"time_us", 1}});
  for (const auto& t : p.traffic) {
    traffic.add_row({t.type, t.collective, t.group, t.messages, t.message_bytes, t.volume_bytes, t.wire_bytes,
                     t.bandwidth_bps / 1e9, t.time_us});
  }
  std::vector<NamedTable> tables;
  tables.push_back({"prediction", "Predicted iteration", std::move(summary)});
  tables.push_back({"traffic", "Traffic per GPU and iteration, by type", std::move(traffic)});
  return tables;
}

}  // namespace xtk::analysis
