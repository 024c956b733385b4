// Model profiles (read, errors with file:line, lookup) and DDP's bucket
// assignment over them, checked by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "collective/buckets.hpp"
#include "collective/profile.hpp"
#include "collective/train.hpp"
#include "core/error.hpp"

namespace xtk::collective {
namespace {

const std::string kTiny = std::string(XTK_COLLECTIVE_DATA) + "/tiny-mlp.csv";

class CollectiveProfileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("xtk_profile_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& text) {
    const auto path = (dir_ / ("p" + std::to_string(++n_) + ".csv")).string();
    std::ofstream(path) << text;
    return path;
  }
  // The error message of reading `text`, "" when it reads.
  std::string error_of(const std::string& text) {
    const auto path = write(text);
    try {
      read_profile(path);
    } catch (const Error& e) {
      std::string m = e.what();
      return m.substr(path.size());  // ":LINE: what"
    }
    return "";
  }
  std::filesystem::path dir_;
  int n_ = 0;
};

TEST(CollectiveProfile, ReadsTheTestProfile) {
  const auto p = read_profile(kTiny);
  EXPECT_EQ(p.model, "tiny-mlp");
  ASSERT_EQ(p.tensors.size(), 6u);
  EXPECT_EQ(p.tensors.front().name, "fc3.bias");
  EXPECT_EQ(p.tensors.back().name, "fc1.weight");
  EXPECT_EQ(p.parameters(), 1579530u);
  EXPECT_EQ(p.bytes(), 6318120u);
  ASSERT_TRUE(p.compute_ms);
  EXPECT_DOUBLE_EQ(*p.compute_ms, 60.0);
  EXPECT_DOUBLE_EQ(p.forward_fraction, 0.25);
  EXPECT_FALSE(p.has_compute_weights);
  EXPECT_DOUBLE_EQ(p.tensors[3].compute_weight, 524288.0);  // numel when no weights are given
}

TEST_F(CollectiveProfileFiles, ErrorsNameTheLine) {
  const std::string head = "# xtk-model-profile\n# format_version=1\n";
  EXPECT_EQ(error_of("name,numel,dtype\n"),
            ":1: not an xtk model profile: the first line must be '# xtk-model-profile'");
  EXPECT_EQ(error_of("# xtk-model-profile\nname,numel,dtype\n"),
            ":2: no '# format_version=N' line before the column line");
  EXPECT_EQ(error_of("# xtk-model-profile\n# format_version=2\n"),
            ":2: format_version 2 is not supported (this xtk reads version 1)");
  EXPECT_EQ(error_of(head + "tensor,size\n"), ":3: expected the column line 'name,numel,dtype[,compute_weight]'");
  EXPECT_EQ(error_of(head + "name,numel,dtype\na,0,float\n"), ":4: numel '0' is not a positive integer up to 2^48");
  EXPECT_EQ(error_of(head + "name,numel,dtype\na,281474976710657,float\n"),
            ":4: numel '281474976710657' is not a positive integer up to 2^48");
  EXPECT_EQ(error_of(head + "name,numel,dtype\na,1,float\n# comment\na,2,float\n"), ":6: tensor 'a' is listed twice");
  EXPECT_EQ(error_of(head + "name,numel,dtype\na,1\n"), ":4: 2 fields, expected 3");
  EXPECT_EQ(error_of(head + "name,numel,dtype\na b,1,float\n"), ":4: tensor name 'a b' is empty or has spaces or '#'");
  EXPECT_NE(error_of(head + "name,numel,dtype\na,1,complex64\n").find(":4: dtype: 'complex64' is not a data type"),
            std::string::npos);
  EXPECT_EQ(error_of(head + "name,numel,dtype,compute_weight\na,1,float,-1\n"), ":4: compute_weight -1 must be >= 0");
  EXPECT_EQ(error_of(head + "# compute_ms=0\nname,numel,dtype\n"), ":3: compute_ms 0 must be above 0");
  EXPECT_EQ(error_of(head + "# forward_fraction=1\nname,numel,dtype\n"), ":3: forward_fraction must be below 1");
  EXPECT_EQ(error_of(head + "# model=a\n# model=b\n"), ":4: header key 'model' is given twice");
  EXPECT_EQ(error_of(head + "name,numel,dtype\n"), ":3: no tensors: a profile lists at least one");
  EXPECT_EQ(error_of(head), ":2: no column line: the header must end with 'name,numel,dtype'");
  EXPECT_EQ(error_of(""), ": empty file: not an xtk model profile");
  EXPECT_EQ(error_of(head + "name,numel,dtype\r\na,1,bf16\r\n"), "");  // CRLF and PyTorch's type names read
}

// `train --size-scale` and the emulation: every tensor scaled and rounded, at
// least one element; a scale past 2^63 elements is a usage error, not an overflow.
TEST_F(CollectiveProfileFiles, ScaledTensorsStayWholeAndInRange) {
  const std::string head = "# xtk-model-profile\n# format_version=1\nname,numel,dtype\n";
  const auto p = read_profile(write(head + "a,10,float\nb,1000,float\n"));
  const auto scaled = scale_profile(p, 0.04);
  EXPECT_EQ(scaled.tensors[0].numel, 1u);  // 0.4 rounds to 0, kept at 1
  EXPECT_EQ(scaled.tensors[1].numel, 40u);
  const auto huge = read_profile(write(head + "a,281474976710656,float\n"));
  EXPECT_EQ(scale_profile(huge, 1.0).tensors[0].numel, 281474976710656u);
  EXPECT_THROW(scale_profile(huge, 1e5), UsageError);
  EXPECT_THROW(scale_profile(p, 0), UsageError);
}

TEST_F(CollectiveProfileFiles, FindsByNameOnTheModelPath) {
  const auto path = write("# xtk-model-profile\n# format_version=1\nname,numel,dtype\na,1,float\n");
  EXPECT_EQ(find_profile(path), path);
  setenv("XTK_MODEL_PATH", dir_.c_str(), 1);
  EXPECT_EQ(find_profile("p1"), path);
  try {
    find_profile("no-such-model");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no no-such-model.csv in"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir_.string()), std::string::npos) << e.what();
  }
  unsetenv("XTK_MODEL_PATH");
}

TEST(CollectiveBuckets, TinyMlpByHand) {
  const auto p = read_profile(kTiny);
  // Backward order: fc3.bias 40 B, fc3.weight 20480 B, fc2.bias 2048 B, fc2.weight 2097152 B: the first
  // bucket reaches 1 MiB with fc2.weight (2119720 B); fc1.bias 4096 B + fc1.weight 4194304 B stay below
  // 25 MiB and close at the end (4198400 B).
  const auto plan = assign_buckets(p, BucketCaps{});
  ASSERT_EQ(plan.plan.buckets.size(), 2u);
  EXPECT_EQ(plan.plan.buckets[0].bytes, 2119720u);
  EXPECT_EQ(plan.plan.buckets[0].first_tensor, 0u);
  EXPECT_EQ(plan.plan.buckets[0].last_tensor, 3u);
  EXPECT_EQ(plan.plan.buckets[0].offset_bytes, 0u);
  EXPECT_EQ(plan.plan.buckets[1].bytes, 4198400u);
  EXPECT_EQ(plan.plan.buckets[1].offset_bytes, 2119936u);  // 2119720 rounded up to 256
  EXPECT_EQ(plan.plan.buckets[1].count(), 1049600u);
  EXPECT_EQ(plan.plan.gradient_bytes, 2119936u + 4198400u);
  // Compute before each launch, by numel: (10+5120+512+524288)/1579530, then the rest.
  ASSERT_EQ(plan.compute_before.size(), 2u);
  EXPECT_NEAR(plan.compute_before[0], 529930.0 / 1579530.0, 1e-12);
  EXPECT_NEAR(plan.compute_before[1], 1049600.0 / 1579530.0, 1e-12);

  // Caps of 16 KiB: the first bucket closes with fc3.weight (20520 B), then each tensor that reaches the cap.
  const auto small = assign_buckets(p, BucketCaps{16384, 16384});
  std::vector<std::uint64_t> sizes;
  for (const auto& b : small.plan.buckets) sizes.push_back(b.bytes);
  EXPECT_EQ(sizes, (std::vector<std::uint64_t>{20520, 2048 + 2097152, 4096 + 4194304}));
}

TEST_F(CollectiveProfileFiles, BucketsPerTypeAndComputeWeights) {
  // Mixed types keep one open bucket each, as DDP does; the buckets keep the order they closed in.
  const auto path = write(
      "# xtk-model-profile\n# format_version=1\nname,numel,dtype,compute_weight\n"
      "a,300000,float32,1\n"  // 1.2 MB: closes float32's first bucket at once
      "b,100,float16,0\n"     // 200 B, stays open
      "c,600000,float16,2\n"  // 1.2 MB more: closes float16's first bucket (1200200 B)
      "d,10,float32,0\n"      // 40 B, open until the end
      "e,10,bfloat16,1\n");   // 20 B, open until the end
  const auto p = read_profile(path);
  const auto plan = assign_buckets(p, BucketCaps{1000000, 2000000});
  ASSERT_EQ(plan.plan.buckets.size(), 4u);
  EXPECT_EQ(plan.plan.buckets[0].type, DataType::float32);
  EXPECT_EQ(plan.plan.buckets[0].bytes, 1200000u);
  EXPECT_EQ(plan.plan.buckets[1].type, DataType::float16);
  EXPECT_EQ(plan.plan.buckets[1].bytes, 1200200u);
  EXPECT_EQ(plan.plan.buckets[1].first_tensor, 1u);
  // The leftovers, in type order: float16 < float32 < bfloat16 in DataType's order.
  EXPECT_EQ(plan.plan.buckets[2].type, DataType::float32);
  EXPECT_EQ(plan.plan.buckets[2].bytes, 40u);
  EXPECT_EQ(plan.plan.buckets[3].type, DataType::bfloat16);
  // Weights 1,0,2,0,1 (total 4): a is ready after 1/4, c after 2/4 more, d after nothing more, e after 1/4.
  EXPECT_EQ(plan.compute_before, (std::vector<double>{0.25, 0.5, 0.0, 0.25}));
}

TEST(CollectiveTrain, ComputeTimesFromProfileAndFlags) {
  const auto p = read_profile(kTiny);
  TrainOptions o;
  auto t = compute_times(o, p);
  EXPECT_EQ(t.forward_ns, 15'000'000);
  EXPECT_EQ(t.backward_ns, 45'000'000);
  o.compute_ns = 100'000'000;
  o.forward_fraction = 0.5;
  o.compute_scale = 2;
  t = compute_times(o, p);
  EXPECT_EQ(t.forward_ns, 100'000'000);
  EXPECT_EQ(t.backward_ns, 100'000'000);
  ModelProfile no_compute = p;
  no_compute.compute_ms.reset();
  EXPECT_THROW(compute_times(TrainOptions{}, no_compute), UsageError);
}

}  // namespace
}  // namespace xtk::collective

namespace xtk::collective {
namespace {

// Every shipped profile reads, has a compute time, and - for the models of
// configs/models/params.csv - the same parameter count as that table.
TEST(CollectiveShippedProfiles, ReadAndMatchTheModelTable) {
  std::map<std::string, std::uint64_t> table;
  std::ifstream params(std::string(XTK_MODELS_DIR) + "/params.csv");
  for (std::string line; std::getline(params, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("model,", 0) == 0) continue;
    const auto comma = line.find(',');
    table[line.substr(0, comma)] = std::stoull(line.substr(comma + 1, line.find(',', comma + 1) - comma - 1));
  }
  int profiles = 0;
  for (const auto& entry : std::filesystem::directory_iterator(XTK_MODELS_DIR)) {
    if (entry.path().extension() != ".csv" || entry.path().filename() == "params.csv") continue;
    const auto p = read_profile(entry.path().string());
    ++profiles;
    EXPECT_TRUE(p.compute_ms.has_value()) << p.source;
    EXPECT_TRUE(p.has_compute_weights) << p.source;
    if (table.contains(p.model)) {
      EXPECT_EQ(p.parameters(), table[p.model]) << p.source;
    }
    EXPECT_FALSE(assign_buckets(p, BucketCaps{}).plan.buckets.empty()) << p.source;
  }
  if (profiles == 0) GTEST_SKIP() << "no profiles in configs/models yet (bench/collective/gen_profiles.py)";
}

}  // namespace
}  // namespace xtk::collective
