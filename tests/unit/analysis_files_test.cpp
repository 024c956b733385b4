// The run-directory readers: valid files parse to the right rows, and every
// malformed or missing file fails with "file:line: what".
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "analysis/model_params.hpp"
#include "analysis/run_dir.hpp"
#include "common/error_of.hpp"
#include "core/error.hpp"
#include "formats/counters.hpp"
#include "formats/csv_file.hpp"
#include "formats/flow_records.hpp"
#include "formats/iterations.hpp"
#include "formats/trace_bins.hpp"

namespace xtk::analysis {
namespace {

using xtk::testing::error_of;

constexpr const char* kIterHead =
    "# xtk-iterations\n# format_version=1\nrank,iter,start_ns,end_ns,iter_us,comm_us,bytes\n";

std::string iterations_error(const std::string& body, std::uint64_t ranks = 0) {
  return error_of([&] { read_iterations(kIterHead + body, "it.csv", ranks, [](const IterationRecord&) {}); });
}

}  // namespace

TEST(AnalysisFiles, IterationsParse) {
  std::vector<IterationRecord> rows;
  read_iterations(
      std::string(kIterHead) + "0,0,100,8100,8000.5,3000,4000000\r\n# comment\n\n1,0,100,8090,7990,2990,0\n", "it.csv",
      2, [&](const IterationRecord& r) { rows.push_back(r); });
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].rank, 0u);
  EXPECT_EQ(rows[0].end_ns, 8100);
  EXPECT_DOUBLE_EQ(rows[0].iter_us, 8000.5);
  EXPECT_EQ(rows[0].bytes, 4000000u);
  EXPECT_EQ(rows[1].rank, 1u);
  EXPECT_DOUBLE_EQ(rows[1].comm_us, 2990);
}

TEST(AnalysisFiles, IterationErrorsNameFileAndLine) {
  EXPECT_EQ(iterations_error("0,0,1,2,3\n"), "it.csv:4: 5 fields, expected 7 (columns: " +
                                                 std::string("rank,iter,start_ns,end_ns,iter_us,comm_us,bytes)"));
  EXPECT_EQ(iterations_error("0,0,1,2,3,1,0,9\n"),
            "it.csv:4: more than 7 fields (columns: rank,iter,start_ns,end_ns,iter_us,comm_us,bytes)");
  EXPECT_EQ(iterations_error("0,0,1,2,3,1,0\n-1,0,1,2,3,1,0\n"), "it.csv:5: rank '-1' is not a non-negative integer");
  EXPECT_EQ(iterations_error("0,0,x,2,3,1,0\n"), "it.csv:4: start_ns 'x' is not a non-negative integer of nanoseconds");
  EXPECT_EQ(iterations_error("0,0,5,2,3,1,0\n"), "it.csv:4: end_ns 2 is before start_ns 5");
  EXPECT_EQ(iterations_error("0,0,1,2,0,0,0\n"), "it.csv:4: iter_us 0 is not above 0");
  EXPECT_EQ(iterations_error("0,0,1,2,nan,0,0\n"), "it.csv:4: iter_us 'nan' is not a number");
  EXPECT_EQ(iterations_error("0,0,1,2,5,-1,0\n"), "it.csv:4: comm_us -1 is negative");
  EXPECT_EQ(iterations_error("0,3,1,2,5,1,0\n0,3,1,2,5,1,0\n"),
            "it.csv:5: iter 3 of rank 0 comes after iter 3: a rank's iterations must be in increasing order");
  EXPECT_EQ(iterations_error("2,0,1,2,5,1,0\n", 2),
            "it.csv:4: rank 2 is not below the job's 2 ranks (\"ranks\" in run.json)");
  EXPECT_EQ(error_of([] { read_iterations("", "it.csv", 0, [](const IterationRecord&) {}); }),
            "it.csv: empty file: not an xtk-iterations file (the first line must be '# xtk-iterations')");
  EXPECT_EQ(error_of([] { read_iterations("rank,iter\n", "it.csv", 0, [](const IterationRecord&) {}); }),
            "it.csv:1: not an xtk-iterations file: the first line must be '# xtk-iterations'");
  EXPECT_EQ(error_of([] {
              read_iterations("# xtk-iterations\nrank,iter,start_ns,end_ns,iter_us,comm_us,bytes\n", "it.csv", 0,
                              [](const IterationRecord&) {});
            }),
            "it.csv:2: no '# format_version=N' line before the column line");
  EXPECT_EQ(error_of([] {
              read_iterations("# xtk-iterations\n# format_version=2\n", "it.csv", 0, [](const IterationRecord&) {});
            }),
            "it.csv:2: format_version 2 is not supported (this xtk reads version 1)");
  EXPECT_EQ(error_of([] {
              read_iterations("# xtk-iterations\n# format_version=1\nrank,iter,start_ns\n", "it.csv", 0,
                              [](const IterationRecord&) {});
            }),
            "it.csv:3: expected the column line "
            "'rank,iter,start_ns,end_ns,iter_us,comm_us,bytes,tcp_retransmits,tcp_timeouts,tcp_rwnd_limited_us'");
  EXPECT_EQ(error_of([] {
              read_iterations("# xtk-iterations\n# format_version=1\n", "it.csv", 0, [](const IterationRecord&) {});
            }),
            "it.csv:2: no column line: the header must end with "
            "'rank,iter,start_ns,end_ns,iter_us,comm_us,bytes,tcp_retransmits,tcp_timeouts,tcp_rwnd_limited_us'");
}

TEST(AnalysisFiles, IterationsWithTheRanksTcpCounts) {
  const std::string head =
      "# xtk-iterations\n# format_version=1\n"
      "rank,iter,start_ns,end_ns,iter_us,comm_us,bytes,tcp_retransmits,tcp_timeouts,tcp_rwnd_limited_us\n";
  std::vector<IterationRecord> rows;
  read_iterations(
      head + "0,0,100,8100,8000,3000,0,12,1,900000\n1,0,100,8090,7990,2990,0,,,\n0,1,8100,9000,900,0,0,0,,0\n",
      "it.csv", 2, [&](const IterationRecord& r) { rows.push_back(r); });
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].tcp_retransmits, 12u);
  EXPECT_EQ(rows[0].tcp_timeouts, 1u);
  EXPECT_EQ(rows[0].tcp_rwnd_limited_us, 900000u);
  EXPECT_FALSE(rows[1].tcp_retransmits.has_value());
  EXPECT_FALSE(rows[1].tcp_timeouts.has_value());
  EXPECT_EQ(rows[2].tcp_retransmits, 0u);
  EXPECT_FALSE(rows[2].tcp_timeouts.has_value());
  const auto error = [&](const std::string& row) {
    return error_of([&] { read_iterations(head + row, "it.csv", 2, [](const IterationRecord&) {}); });
  };
  EXPECT_EQ(error("0,0,100,8100,8000,3000,0,-1,0,0\n"), "it.csv:4: tcp_retransmits '-1' is not a non-negative integer");
  EXPECT_EQ(error("0,0,100,8100,8000,3000,0,1,x,0\n"), "it.csv:4: tcp_timeouts 'x' is not a non-negative integer");
  EXPECT_EQ(error("0,0,100,8100,8000,3000,0,1,0,1.5\n"),
            "it.csv:4: tcp_rwnd_limited_us '1.5' is not a non-negative integer");
  EXPECT_EQ(error("0,0,100,8100,8000,3000,0,1,0\n"),
            "it.csv:4: 9 fields, expected 10 (columns: "
            "rank,iter,start_ns,end_ns,iter_us,comm_us,bytes,tcp_retransmits,tcp_timeouts,tcp_rwnd_limited_us)");
}

TEST(AnalysisFiles, FlowRecordsAsXtkClientWritesThem) {
  const std::string text =
      "# xtk-flow-records\n# format_version=1\n"
      "flow_id,dst,size_bytes,sched_start_ns,start_ns,end_ns,fct_us,lateness_us,status,error\n"
      "0,h1,1000,10,15,1015,1.000,0.005,ok,\n"
      "1,h1,2000,20,25,-1,0.000,0.005,failed,\"connect: refused, \"\"3\"\" tries\"\n"
      "2,h1,3000,30,-1,-1,0.000,0.000,cancelled,stopped\n";
  std::vector<FlowRecord> rows;
  std::vector<std::string> errors;
  read_flow_records(text, "f.csv", [&](const FlowRecord& r) {
    rows.push_back(r);
    errors.emplace_back(r.error);
  });
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].status, FlowStatus::ok);
  EXPECT_EQ(rows[0].end_ns, 1015);
  EXPECT_EQ(rows[1].status, FlowStatus::failed);
  EXPECT_EQ(rows[1].start_ns, 25);
  EXPECT_EQ(rows[1].end_ns, -1) << "never ended";
  EXPECT_EQ(errors[1], "connect: refused, \"3\" tries");
  EXPECT_EQ(rows[2].start_ns, -1) << "never started";
  EXPECT_EQ(rows[2].status, FlowStatus::cancelled);
}

TEST(AnalysisFiles, FlowRecordsJsonLines) {
  const std::string text =
      "{\"flow_id\":0,\"dst\":\"h1\",\"size_bytes\":1000,\"sched_start_ns\":10,\"start_ns\":15,\"end_ns\":1015,"
      "\"fct_us\":1.0,\"lateness_us\":0.005,\"status\":\"ok\",\"error\":\"\"}\n"
      "{\"flow_id\":1,\"dst\":\"h1\",\"size_bytes\":1000,\"sched_start_ns\":10,\"start_ns\":-1,\"end_ns\":-1,"
      "\"fct_us\":0,\"lateness_us\":0,\"status\":\"timeout\",\"error\":\"slow\"}\n";
  int n = 0;
  read_flow_records(text, "f.jsonl", [&](const FlowRecord& r) {
    EXPECT_EQ(r.flow_id, static_cast<std::uint64_t>(n));
    ++n;
  });
  EXPECT_EQ(n, 2);
  EXPECT_EQ(error_of([&] { read_flow_records(text + "{\"flow_id\":2}\n", "f.jsonl", [](const FlowRecord&) {}); }),
            "f.jsonl:3: no \"dst\"");
  EXPECT_EQ(error_of([&] { read_flow_records(text + "{oops\n", "f.jsonl", [](const FlowRecord&) {}); }),
            "f.jsonl:3: not a JSON object");
}

TEST(AnalysisFiles, FlowRecordErrorsNameFileAndLine) {
  const std::string head =
      "# xtk-flow-records\n# format_version=1\n"
      "flow_id,dst,size_bytes,sched_start_ns,start_ns,end_ns,fct_us,lateness_us,status,error\n";
  auto err = [&](const std::string& row) {
    return error_of([&] { read_flow_records(head + row, "f.csv", [](auto&) {}); });
  };
  EXPECT_EQ(err("0,h1,1000,10,15,1015,1,0,lost,\n"),
            "f.csv:4: status 'lost' is not one of ok, failed, timeout, cancelled");
  EXPECT_EQ(err("0,h1,1000,10,-1,-1,0,0,ok,\n"), "f.csv:4: status ok without a start_ns and end_ns");
  EXPECT_EQ(err("0,h1,1000,10,15,1015,1,0,ok,boom\n"), "f.csv:4: status ok with error 'boom': ok flows have no error");
  EXPECT_EQ(err("0,h1,0,10,15,1015,1,0,ok,\n"), "f.csv:4: size_bytes '0' is not a positive integer");
  EXPECT_EQ(err("0,h1,1,10,-2,1015,1,0,ok,\n"),
            "f.csv:4: start_ns '-2' is not an integer of nanoseconds (or -1 when it never happened)");
  EXPECT_EQ(err("0,h 1,1,10,15,1015,1,0,ok,\n"), "f.csv:4: dst 'h 1' is empty or has spaces or '#'");
  EXPECT_EQ(err("0,h1,1,10,15,1015,1,0,failed,\"open\n"), "f.csv:4: field 10 has no closing quote");
  EXPECT_EQ(err("0,\"h1\"x,1,10,15,1015,1,0,ok,\n"), "f.csv:4: field 2 has text after its closing quote");
  EXPECT_EQ(error_of([] { read_flow_records("# xtk-flows\n", "f.csv", [](auto&) {}); }),
            "f.csv:1: not an xtk-flow-records file: the first line must be '# xtk-flow-records'");
}

TEST(AnalysisFiles, CountersParseAndCheckMonotonicity) {
  const std::string head = "# xtk-counters\n# format_version=1\nt_ns,realtime_ns,source,name,value,slow\n";
  int n = 0;
  read_counters(head + "10,1010,net:eth0,tx_bytes,5,0\n11,1011,net:eth0,rx_bytes,1,1\n20,1020,net:eth0,tx_bytes,5,0\n",
                "c.csv", [&](const CounterSample& s) {
                  if (n == 1) {
                    EXPECT_TRUE(s.slow);
                    EXPECT_EQ(s.name, "rx_bytes");
                  }
                  ++n;
                });
  EXPECT_EQ(n, 3);
  auto err = [&](const std::string& rows) {
    return error_of([&] { read_counters(head + rows, "c.csv", [](auto&) {}); });
  };
  // A value may drop (wrap or reset): counter_load_bps decides what it means.
  EXPECT_EQ(err("10,1,net:eth0,tx_bytes,9,0\n20,2,net:eth0,tx_bytes,8,0\n"), "(no error)");
  EXPECT_EQ(err("10,1,net:eth0,tx_bytes,9,0\n10,2,net:eth0,tx_bytes,9,0\n"),
            "c.csv:5: t_ns 10 of net:eth0/tx_bytes is not after the previous sample's 10");
  EXPECT_EQ(err("10,1,net:eth0,tx_bytes,9,2\n"), "c.csv:4: slow '2' is not 0 or 1");
  EXPECT_EQ(err("10,1,,tx_bytes,9,0\n"), "c.csv:4: source '' is empty or has spaces or '#'");
  EXPECT_EQ(err("10,1,net:eth0,tx_bytes,1.5,0\n"), "c.csv:4: value '1.5' is not a non-negative integer");
}

TEST(AnalysisFiles, TraceBinsParseAndCheckTheGrid) {
  const std::string head =
      "# xtk-trace-bins\n# format_version=1\n# bin_ns=1000\nbin_start_ns,flow,src,dst,bytes,packets\n";
  int n = 0;
  // Flow labels as the capture tool writes them, spaces included.
  read_trace_bins(head +
                      "500,tcp 10.0.0.1:40000>10.0.0.2:7000,10.0.0.1,10.0.0.2,1500,1\n"
                      "1500,ip fd00::1>fd00::2,fd00::1,fd00::2,0,0\n",
                  "t.csv", [&](const TraceHeader& h, const TraceBin& b) {
                    EXPECT_EQ(h.bin_ns, 1000);
                    EXPECT_EQ(b.flow, n == 0 ? "tcp 10.0.0.1:40000>10.0.0.2:7000" : "ip fd00::1>fd00::2");
                    ++n;
                  });
  EXPECT_EQ(n, 2);
  auto err = [&](const std::string& text) {
    return error_of([&] { read_trace_bins(text, "t.csv", [](auto&, auto&) {}); });
  };
  EXPECT_EQ(err(head + "500,cross,a,b,1,1\n1000,cross,a,b,1,1\n"),
            "t.csv:6: bin_start_ns 1000 is not on the bin grid: the first bin starts at 500, bins are 1000 ns");
  EXPECT_EQ(err(head + "1500,cross,a,b,1,1\n500,cross,a,b,1,1\n"),
            "t.csv:6: bin_start_ns 500 is before the previous row's 1500: bins are sorted by time");
  EXPECT_EQ(err(head + "500,cross,a,b,10,0\n"), "t.csv:5: bytes 10 in 0 packets");
  EXPECT_EQ(err(head + "500,,a,b,10,1\n"), "t.csv:5: flow is empty");
  EXPECT_EQ(err(head + "500,f,a b,b,10,1\n"), "t.csv:5: src 'a b' is empty or has spaces or '#'");
  EXPECT_EQ(err("# xtk-trace-bins\n# format_version=1\nbin_start_ns,flow,src,dst,bytes,packets\n"),
            "t.csv:3: no '# bin_ns=N' line before the column line: the bin width is required");
  EXPECT_EQ(err("# xtk-trace-bins\n# format_version=1\n# bin_ns=0\nbin_start_ns,flow,src,dst,bytes,packets\n"),
            "t.csv:3: bin_ns '0' is not a positive integer");
  EXPECT_EQ(err("# xtk-trace-bins\n# format_version=1\n# bin_ns=5\n# bin_ns=6\n"),
            "t.csv:4: header key 'bin_ns' is given twice (first on line 3)");
  EXPECT_EQ(err("# xtk-trace-bins\n# format_version=1\n# format_version=1\n"),
            "t.csv:3: header key 'format_version' is given twice (first on line 2)");
}

TEST(AnalysisFiles, ModelTable) {
  const auto table = ModelTable::load(XTK_MODELS_FILE);
  ASSERT_NE(table.find("resnet50"), nullptr);
  EXPECT_EQ(table.find("resnet50")->params, 25'557'032u);
  EXPECT_EQ(table.find("vgg16")->params, 138'357'544u);
  EXPECT_EQ(table.find("densenet161")->params, 28'681'000u);
  EXPECT_EQ(table.find("bert-large")->params, 336'226'108u);
  EXPECT_DOUBLE_EQ(table.find("bert-large")->bytes_per_param, 4);
  EXPECT_EQ(table.find("gpt5"), nullptr);
  const std::string head = "# xtk-model-params\n# format_version=1\nmodel,params,bytes_per_param,source\n";
  EXPECT_EQ(error_of([&] { ModelTable::parse(head + "a,1,4,x\na,2,4,y\n", "p.csv"); }),
            "p.csv:5: model 'a' is listed twice");
  EXPECT_EQ(error_of([&] { ModelTable::parse(head + "a,1,0,x\n", "p.csv"); }),
            "p.csv:4: bytes_per_param 0 is not above 0");
}

namespace {

constexpr const char* kRunJson = R"({
  "format_version": 1,
  "step": 3,
  "model": "resnet50",
  "ranks": 4,
  "cross_traffic": {"profile": "burst", "load_bps": 1e10, "start_realtime_ns": 1700000000000000000},
  "link_bps": 25e9,
  "bottleneck": {"host": "node1", "source": "net:eth0", "counter": "tx_bytes", "link_bps": 2e10},
  "files": {"iterations": ["r0.csv", "r1.csv"], "flows": "flows.csv", "counters": "c.csv",
            "trace_bins": {"cross": "x.csv", "training": ["t0.csv", "t1.csv"]}},
  "git_revision": "abc"
}
)";

std::string run_json_error(std::string text) {
  return error_of([&] { parse_run_json(text, "s/run.json", "s", false); });
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

}  // namespace

TEST(AnalysisFiles, RunJson) {
  const auto info = parse_run_json(kRunJson, "s/run.json", "s", false);
  EXPECT_EQ(info.step, 3u);
  EXPECT_EQ(info.model, "resnet50");
  EXPECT_EQ(info.ranks, 4u);
  EXPECT_EQ(info.profile, "burst");
  EXPECT_DOUBLE_EQ(info.load_bps, 1e10);
  EXPECT_EQ(*info.start_realtime_ns, 1'700'000'000'000'000'000);
  EXPECT_DOUBLE_EQ(info.link_bps, 25e9);
  EXPECT_DOUBLE_EQ(info.bottleneck.link_bps, 2e10);
  EXPECT_EQ(info.bottleneck.host, "node1");
  EXPECT_EQ(info.bottleneck.counter, "tx_bytes");
  EXPECT_DOUBLE_EQ(info.bottleneck.payload_share, 1.0);  // not given: bytes compared as counted
  ASSERT_EQ(info.iterations.size(), 2u);
  EXPECT_EQ(info.iterations[1], "s/r1.csv");
  EXPECT_EQ(info.flows, std::vector<std::string>{"s/flows.csv"});
  EXPECT_EQ(info.cross_bins, std::vector<std::string>{"s/x.csv"});
  EXPECT_EQ(info.training_bins, (std::vector<std::string>{"s/t0.csv", "s/t1.csv"}));
  EXPECT_FALSE(info.params.has_value());
}

// xtk-run writes run.json through run_json_object: every key analysis reads comes back.
TEST(AnalysisFiles, RunJsonRoundTrip) {
  StepInfo w;
  w.dir = "exp/resnet50/burst/step03";
  w.step = 3;
  w.model = "resnet50";
  w.params = 25557032;
  w.bytes_per_param = 4;
  w.ranks = 3;
  w.profile = "burst";
  w.load_bps = 6e8;
  w.start_realtime_ns = 1'764'000'000'123'456'789;
  w.link_bps = 1e9;
  w.bottleneck = {1e9, "10.77.0.1", "net:eth0", "tx_bytes", 0.956};
  w.emulation = {25e9, "both", 0.2, 5};
  w.training_nic = {"h2", "net:eth0", "tx_bytes"};
  w.iterations = {w.dir + "/iterations-0.csv", w.dir + "/iterations-1.csv", w.dir + "/iterations-2.csv"};
  w.flows = {w.dir + "/flows.csv"};
  w.counters = w.dir + "/counters.csv";
  w.training_counters = w.dir + "/counters_training.csv";
  w.cross_bins = {w.dir + "/trace_bins_cross.csv"};
  w.training_bins = {w.dir + "/trace_bins_training.csv"};
  const auto object = run_json_object(w);
  EXPECT_EQ(object["files"]["counters"], "counters.csv") << "relative to the step directory";
  const auto r = parse_run_json(object.dump(2), "run.json", w.dir, false);
  EXPECT_EQ(r.step, w.step);
  EXPECT_EQ(r.model, w.model);
  EXPECT_EQ(r.params, w.params);
  EXPECT_EQ(r.bytes_per_param, w.bytes_per_param);
  EXPECT_EQ(r.ranks, w.ranks);
  EXPECT_EQ(r.profile, w.profile);
  EXPECT_EQ(r.load_bps, w.load_bps);
  EXPECT_EQ(r.start_realtime_ns, w.start_realtime_ns);
  EXPECT_EQ(r.link_bps, w.link_bps);
  EXPECT_EQ(r.bottleneck.link_bps, w.bottleneck.link_bps);
  EXPECT_EQ(r.bottleneck.host, w.bottleneck.host);
  EXPECT_EQ(r.bottleneck.source, w.bottleneck.source);
  EXPECT_EQ(r.bottleneck.counter, w.bottleneck.counter);
  EXPECT_EQ(r.bottleneck.payload_share, w.bottleneck.payload_share);
  EXPECT_EQ(r.emulation, w.emulation);
  EXPECT_EQ(r.training_nic.host, w.training_nic.host);
  EXPECT_EQ(r.training_nic.source, w.training_nic.source);
  EXPECT_EQ(r.iterations, w.iterations);
  EXPECT_EQ(r.flows, w.flows);
  EXPECT_EQ(r.counters, w.counters);
  EXPECT_EQ(r.training_counters, w.training_counters);
  EXPECT_EQ(r.cross_bins, w.cross_bins);
  EXPECT_EQ(r.training_bins, w.training_bins);
  EXPECT_FALSE(r.failed);
  EXPECT_TRUE(r.plan.model_profile.empty()) << "not written when not set";
  EXPECT_FALSE(r.plan.load_share || r.plan.seed);
  EXPECT_TRUE(r.plan.executor.empty());

  // What xtk-run planned, read back by its resume through this same reader.
  w.plan = {"configs/models/resnet50.csv", 0.6, 42, "netns"};
  auto object_planned = run_json_object(w);
  EXPECT_EQ(object_planned["executor"], nlohmann::json({{"executor", "netns"}}));
  object_planned["executor"]["hosts"] = 5;  // xtk-run adds what only people read
  const auto p = parse_run_json(object_planned.dump(2), "run.json", w.dir, false).plan;
  EXPECT_EQ(p.model_profile, w.plan.model_profile);
  EXPECT_EQ(p.load_share, w.plan.load_share);
  EXPECT_EQ(p.seed, w.plan.seed);
  EXPECT_EQ(p.executor, w.plan.executor);

  w.failed = true;
  w.error = "rank 1 on h1 exited with status 1";
  const auto failed = parse_run_json(run_json_object(w).dump(), "run.json", w.dir, false);
  EXPECT_TRUE(failed.failed);
  EXPECT_EQ(failed.error, w.error);
}

TEST(AnalysisFiles, RunJsonErrorsNameFileAndLine) {
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"ranks\": 4", "\"ranks\": 0")),
            "s/run.json:5: \"ranks\" is 0: it must be a whole number >= 1");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"ranks\": 4", "\"ranks\": 2.5")),
            "s/run.json:5: \"ranks\" is 2.5: it must be a whole number >= 1");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"format_version\": 1", "\"format_version\": 7")),
            "s/run.json:2: format_version 7 is not supported (this xtk reads version 1)");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"model\": \"resnet50\",\n", "")),
            "s/run.json: no \"model\": it is required");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"load_bps\": 1e10", "\"load_bps\": -1")),
            "s/run.json:6: \"cross_traffic.load_bps\" is -1: it must be a number >= 0");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"profile\": \"burst\"", "\"profile\": \"none\"")),
            "s/run.json:6: profile \"none\" (no cross traffic) needs load_bps 0");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"counter\": \"tx_bytes\", ", "")),
            "s/run.json:8: \"bottleneck\" needs both \"source\" and \"counter\", or neither");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"link_bps\": 2e10", "\"link_bps\": 2e10, \"payload_share\": 1.2")),
            "s/run.json:8: \"bottleneck.payload_share\" is 1.2: it must be a share of the bytes counted, > 0 and <= 1");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"flows.csv\"", "7")),
            "s/run.json:9: \"files.flows\" is 7: it must be a file name");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"r0.csv\", \"r1.csv\"", "")),
            "s/run.json:9: \"files.iterations\" lists no file");
  EXPECT_EQ(
      run_json_error(replace(kRunJson, "\"link_bps\": 25e9,", "\"link_bps\": 25e9")),
      "s/run.json:8: not valid JSON: syntax error while parsing object - unexpected string literal; expected '}'");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"cross\": \"x.csv\"", "\"other\": \"x.csv\"")),
            "s/run.json:10: \"files.trace_bins.other\" is not a traffic class: use \"cross\" or \"training\"");
  EXPECT_EQ(run_json_error("[1]"), "s/run.json:1: run.json must hold a JSON object");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"ranks\": 4", "\"ranks\": 1e999")),
            "s/run.json:5: not valid JSON: 1e999 is beyond a number's range");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"load_bps\": 1e10", "\"load_bps\": 1e10, \"seed\": -3")),
            "s/run.json:6: \"cross_traffic.seed\" is -3: it must be a whole number >= 0");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"load_bps\": 1e10", "\"load_bps\": 1e10, \"load_share\": \"x\"")),
            "s/run.json:6: \"cross_traffic.load_share\" is \"x\": it must be a number >= 0");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"git_revision\"", "\"model_profile\": \"\",\n  \"g\"")),
            "s/run.json:11: \"model_profile\" is \"\": it must be a non-empty string");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"git_revision\"", "\"executor\": \"netns\",\n  \"g\"")),
            "s/run.json:11: \"executor\" must be an object");
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"git_revision\"", "\"executor\": {\"hosts\": 5},\n  \"g\"")),
            "s/run.json: no \"executor.executor\": it is required");
}

// nlohmann keeps a repeated key's last value: run.json refuses the repeat,
// naming the line where it is given again. link_bps in two objects is no repeat.
TEST(AnalysisFiles, RunJsonKeyGivenTwiceInOneObjectIsRefused) {
  EXPECT_EQ(
      run_json_error(replace(kRunJson, "\"git_revision\": \"abc\"", "\"git_revision\": \"abc\",\n  \"ranks\" : 2")),
      "s/run.json:12: \"ranks\" is given twice in one object: keep one");
  EXPECT_EQ(
      run_json_error(replace(kRunJson, "\"counter\": \"tx_bytes\",", "\"counter\": \"tx_bytes\", \"host\": \"n\",")),
      "s/run.json:8: \"host\" is given twice in one object: keep one");
  // The key's name inside a string value is not a key.
  EXPECT_EQ(run_json_error(replace(kRunJson, "\"abc\"\n}", "\"\\\"step\\\": 1\",\n  \"step\": 4\n}")),
            "s/run.json:12: \"step\" is given twice in one object: keep one");
  EXPECT_EQ(parse_run_json(kRunJson, "s/run.json", "s", false).step, 3u);
}

TEST(AnalysisFiles, MissingFilesAreNamedWithTheRunJsonLine) {
  const auto dir = std::filesystem::temp_directory_path() / ("xtk_analysis_files_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "run.json") << kRunJson;
    std::ofstream(dir / "r0.csv") << kIterHead;
    std::ofstream(dir / "r1.csv") << kIterHead;
  }
  const std::string run = (dir / "run.json").string();
  EXPECT_EQ(error_of([&] { read_step_info(dir.string()); }),
            run + ":9: \"files.flows\": " + (dir / "flows.csv").string() + " does not exist");
  std::filesystem::remove(dir / "run.json");
  EXPECT_EQ(error_of([&] { read_step_info(dir.string()); }), run + ": cannot read run.json: No such file or directory");
  EXPECT_NE(error_of([&] { find_step_dirs(dir.string()); }).find("no step directories"), std::string::npos);
  EXPECT_EQ(error_of([&] { find_step_dirs((dir / "nope").string()); }), (dir / "nope").string() + ": not a directory");
  std::filesystem::remove_all(dir);
}

}  // namespace xtk::analysis

namespace xtk::analysis {

// xtk-run records a failed step with "status": "failed"; its files may be missing.
TEST(AnalysisFiles, FailedStepIsMarkedAndNotReadFurther) {
  const std::string text = R"({"format_version": 1, "status": "failed", "error": "rank 1 on h1 exited with status 1",
    "step": 2, "model": "toy", "ranks": 3, "cross_traffic": {"profile": "burst", "load_bps": 1e8},
    "link_bps": 1e9, "files": {"iterations": ["missing.csv"]}})";
  const auto info = parse_run_json(text, "s/run.json", "s", true);
  EXPECT_TRUE(info.failed);
  EXPECT_EQ(info.error, "rank 1 on h1 exited with status 1");
  const std::string bad = R"({"format_version": 1, "status": "maybe"})";
  EXPECT_THROW(parse_run_json(bad, "s/run.json", "s", false), InputError);
}

}  // namespace xtk::analysis
