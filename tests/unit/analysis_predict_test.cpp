// Theory and prediction numbers checked by hand: ring all-reduce data per
// iteration of real models, and the GPT traffic model of a small configuration.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/model_params.hpp"
#include "analysis/predict.hpp"
#include "analysis/tables.hpp"
#include "core/error.hpp"

namespace xtk::analysis {

TEST(AnalysisTheory, RingAllReduceDataPerIteration) {
  const auto table = ModelTable::load(XTK_MODELS_FILE);
  auto d = [&](const char* model, std::uint64_t ranks) {
    ModelInfo m;
    m.params = static_cast<double>(table.find(model)->params);
    m.bytes_per_param = table.find(model)->bytes_per_param;
    m.ranks = ranks;
    return m.data_per_iter_bytes();
  };
  // 2 (N-1)/N * P * 4 bytes: ResNet-50 on 4 ranks = 1.5 * 25,557,032 * 4.
  EXPECT_DOUBLE_EQ(d("resnet50", 4), 153'342'192.0);
  // VGG-16 on 4 ranks = 1.5 * 138,357,544 * 4.
  EXPECT_DOUBLE_EQ(d("vgg16", 4), 830'145'264.0);
  // Two ranks exchange exactly P * bytes: DenseNet-161.
  EXPECT_DOUBLE_EQ(d("densenet161", 2), 114'724'000.0);
  // One rank sends nothing.
  EXPECT_DOUBLE_EQ(d("bert-large", 1), 0.0);
}

namespace {

// l=4, h=64, s=32, V=1000, B=8, b=1, t=2, p=2, d=2, so m = 8 / (1 * 2) = 4.
GptConfig small() {
  GptConfig c;
  c.layers = 4;
  c.hidden = 64;
  c.seq = 32;
  c.vocab = 1000;
  c.global_batch = 8;
  c.micro_batch = 1;
  c.tp = 2;
  c.pp = 2;
  c.dp = 2;
  c.utilisation = 0.5;
  c.peak_flops = 100e12;
  c.bw_tp_bps = c.bw_pp_bps = c.bw_dp_bps = 100e9;
  return c;
}

}  // namespace

TEST(AnalysisPredict, GptMessageSizesAndCountsByHand) {
  const auto p = predict_gpt(small());
  // N = 12 l h^2 + 13 l h + (V + s) h = 196,608 + 3,328 + 66,048.
  EXPECT_DOUBLE_EQ(p.params, 265'984);
  EXPECT_EQ(p.gpus, 8u);
  EXPECT_EQ(p.micro_batches, 4u);
  ASSERT_EQ(p.traffic.size(), 4u);
  const auto& tp = p.traffic[0];
  EXPECT_EQ(tp.type, "TP");
  EXPECT_EQ(tp.group, 2u);
  EXPECT_DOUBLE_EQ(tp.messages, 48);         // m (l/p) 6 = 4 * 2 * 6
  EXPECT_DOUBLE_EQ(tp.message_bytes, 4096);  // 2 b s h = 2 * 1 * 32 * 64
  EXPECT_DOUBLE_EQ(tp.volume_bytes, 196'608);
  EXPECT_DOUBLE_EQ(tp.wire_bytes, 196'608);  // ring factor 2 (2-1) / 2 = 1
  EXPECT_NEAR(tp.time_us, 196'608 * 8 / 100e9 * 1e6, 1e-9);
  const auto& pp = p.traffic[1];
  EXPECT_EQ(pp.type, "PP");
  EXPECT_DOUBLE_EQ(pp.messages, 4);  // two stages: one direction per micro-batch
  EXPECT_DOUBLE_EQ(pp.message_bytes, 4096);
  const auto& dp = p.traffic[2];
  EXPECT_EQ(dp.type, "DP");
  EXPECT_DOUBLE_EQ(dp.messages, 1);
  EXPECT_DOUBLE_EQ(dp.message_bytes, 132'992);  // 2 N / (p t) = 2 * 265,984 / 4
  EXPECT_DOUBLE_EQ(dp.wire_bytes, 132'992);
  const auto& emb = p.traffic[3];
  EXPECT_EQ(emb.type, "embedding");
  EXPECT_DOUBLE_EQ(emb.message_bytes, 64'000);  // 2 V h / t = 2 * 1000 * 64 / 2
  // FLOPs 96 B s l h^2 (1 + s/6h + V/16lh) = 402,653,184 * (1 + 1/12 + 1000/4096).
  EXPECT_DOUBLE_EQ(p.flops_per_iter, 534'511'616);
  EXPECT_NEAR(p.compute_us, 534'511'616 / (8 * 0.5 * 100e12) * 1e6, 1e-12);
  EXPECT_DOUBLE_EQ(p.bubble_ratio, 0.2);  // (p-1) / (p-1+m) = 1 / 5
  const double expected = (p.compute_us + tp.time_us + pp.time_us) / 0.8 + dp.time_us + emb.time_us;
  EXPECT_NEAR(p.iteration_us, expected, 1e-9);
  EXPECT_NEAR(p.comm_ratio, (tp.time_us + pp.time_us + dp.time_us + emb.time_us) / expected, 1e-12);
}

TEST(AnalysisPredict, DeepPipelineWithoutRecomputation) {
  auto c = small();
  c.tp = 1;
  c.dp = 1;
  c.pp = 4;
  c.micro_batches = 8;
  c.recompute = false;
  const auto p = predict_gpt(c);
  EXPECT_DOUBLE_EQ(p.traffic[0].messages, 0);   // no tensor parallelism
  EXPECT_DOUBLE_EQ(p.traffic[1].messages, 16);  // a middle stage: 2 per micro-batch
  EXPECT_DOUBLE_EQ(p.traffic[2].messages, 0);   // no data parallelism
  EXPECT_DOUBLE_EQ(p.traffic[3].message_bytes, 128'000);
  EXPECT_DOUBLE_EQ(p.bubble_ratio, 3.0 / 11);
  // 72 B s l h^2 (1 + s/6h + V/12lh).
  EXPECT_DOUBLE_EQ(p.flops_per_iter, 72.0 * 8 * 32 * 4 * 64 * 64 * (1 + 32.0 / 384 + 1000.0 / (12 * 4 * 64)));
}

TEST(AnalysisPredict, InconsistentSettingsNameTheFlag) {
  auto err = [](GptConfig c) {
    try {
      predict_gpt(c);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  auto c = small();
  c.layers = 6;
  c.pp = 4;
  EXPECT_EQ(err(c), "--layers 6 is not a multiple of --pp 4: stages hold whole layers");
  c = small();
  c.global_batch = 9;
  EXPECT_EQ(err(c), "--global-batch 9 is not a multiple of --micro-batch 1 x --dp 2");
  c = small();
  c.micro_batches = 3;
  EXPECT_EQ(err(c), "--micro-batches 3 x --micro-batch 1 x --dp 2 is not --global-batch 8");
  c = small();
  c.bw_tp_bps = 0;
  EXPECT_EQ(err(c), "--bw-tp is needed with --tp 2 (the effective bandwidth of that traffic)");
  c = small();
  c.peak_flops = 0;
  EXPECT_EQ(err(c), "--peak (FLOP/s per GPU) is needed, e.g. --peak 989T");
}

TEST(AnalysisPredict, DataParallelFromTheModelTable) {
  DpConfig c;
  c.model = "resnet50";
  c.params = 25'557'032;
  c.bytes_per_param = 4;
  c.ranks = 4;
  c.compute_us = 180'000;
  c.bw_bps = 25e9;
  c.bucket_bytes = 25 * 1048576.0;
  const auto p = predict_dp(c);
  ASSERT_EQ(p.traffic.size(), 1u);
  const auto& t = p.traffic[0];
  EXPECT_DOUBLE_EQ(t.messages, 4);  // 102,228,128 B in 25 MiB buckets
  EXPECT_DOUBLE_EQ(t.message_bytes, 26'214'400);
  EXPECT_DOUBLE_EQ(t.volume_bytes, 102'228'128);
  EXPECT_DOUBLE_EQ(t.wire_bytes, 153'342'192);  // D
  EXPECT_NEAR(t.time_us, 153'342'192 * 8 / 25e9 * 1e6, 1e-6);
  EXPECT_NEAR(p.iteration_us, 180'000 + t.time_us, 1e-6);
  const auto tables = prediction_tables(p);
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[0].name, "prediction");
  EXPECT_EQ(tables[1].table.rows(), 1u);
}

}  // namespace xtk::analysis
