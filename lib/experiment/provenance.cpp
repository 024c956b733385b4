#include "experiment/provenance.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace xtk {

nlohmann::json parse_host_answer(std::string_view text) {
  nlohmann::json nic = {{"driver", "unknown"}, {"version", "unknown"}, {"firmware", "unknown"}};
  std::string kernel = "unknown", congestion_control = "unknown";
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    const auto colon = line.find(": ");
    const std::string key = line.substr(0, colon), value = colon == std::string::npos ? "" : line.substr(colon + 2);
    if (key == "kernel") kernel = value.empty() ? "unknown" : value;
    if (key == "tcp_congestion_control" && !value.empty()) congestion_control = value;
    if (key == "driver") nic["driver"] = value;
    if (key == "version") nic["version"] = value;
    if (key == "firmware-version") nic["firmware"] = value;
  }
  return {{"kernel", kernel}, {"tcp_congestion_control", congestion_control}, {"nic", nic}};
}

nlohmann::json describe_hosts(Executor& executor, const std::string& scratch_dir) {
  namespace fs = std::filesystem;
  fs::create_directories(scratch_dir);
  auto hosts = nlohmann::json::array();
  for (std::size_t h = 0; h < executor.host_count(); ++h) {
    const std::string log = (fs::path(scratch_dir) / fmt::format("host-{}.txt", h)).string();
    const std::string iface = executor.interface(h);
    const std::string command = fmt::format(
        "echo \"kernel: $(uname -r)\"; echo \"tcp_congestion_control: $(cat "
        "/proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null)\"; command -v ethtool >/dev/null && ethtool -i {} "
        "2>/dev/null || true",
        iface);
    auto process = executor.start(h, {"sh", "-c", command}, log);
    process->wait(std::chrono::seconds(20));
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    auto host = parse_host_answer(text.str());
    host["host"] = executor.host_label(h);
    host["address"] = executor.address(h);
    host["nic"]["interface"] = iface;
    hosts.push_back(host);
    fs::remove(log);
  }
  std::error_code ignored;
  fs::remove(scratch_dir, ignored);
  return hosts;
}

std::optional<nlohmann::json> nccl_versions(std::string_view log) {
  static const std::regex version(R"(NCCL INFO NCCL version ([0-9][0-9.]*)(?:\+cuda([0-9.]+))?)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(log.begin(), log.end(), m, version)) return std::nullopt;
  nlohmann::json j = {{"nccl", m[1].str()}};
  if (m[2].matched) j["cuda"] = m[2].str();
  return j;
}

}  // namespace xtk
