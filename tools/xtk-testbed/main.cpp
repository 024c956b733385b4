// xtk-testbed: builds and removes single-host testbeds of network namespaces
// (hosts on a bridge, shaped ports), and runs commands inside their hosts.
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "core/cli.hpp"
#include "core/report.hpp"
#include "core/units.hpp"
#include "testbed/testbed.hpp"

namespace {

std::size_t host_index(const std::string& host) {
  if (host.size() < 2 || host[0] != 'h' || host.find_first_not_of("0123456789", 1) != std::string::npos) {
    throw xtk::UsageError(fmt::format("host '{}' must be hK (h0, h1, ...)", host));
  }
  return std::stoul(host.substr(1));
}

}  // namespace

// run_tool turns every exception into an exit status; CLI11's set-up throws only on programming errors.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "Single-host testbeds of network namespaces: hosts hK (10.77.0.K+1, fd77::K+1) on a bridge in its own\n"
      "namespace; tc shaping on a switch port (config B, ingress bottleneck) or a host NIC (config A).\n\n"
      "  xtk-testbed up demo --hosts 4 --shape port:h3=1G\n"
      "  xtk-testbed exec demo h0 -- ping -c1 10.77.0.4\n"
      "  xtk-testbed down demo",
      "xtk-testbed"};
  app.set_version_flag("--version", std::string("xtk-testbed ") + XTK_VERSION);
  app.require_subcommand(1);
  xtk::TestbedSpec spec;
  std::vector<std::string> shapes;
  std::string net_cpus, rto_min;
  bool no_offloads = false, json = false;
  auto* up = app.add_subcommand("up", "build testbed NAME (an existing one of that name is rebuilt)");
  up->add_option("name", spec.name, "testbed name, [a-z0-9-], at most 20 characters")->required();
  up->add_option("--hosts", spec.hosts, "number of hosts, 1 to 250")->capture_default_str();
  up->add_option("--shape", shapes,
                 "port:hK=RATE or nic:hK=RATE, optional /htb (default) or /tbf and /queue=BYTES (the shaper's "
                 "queue; default the qdisc's own); repeatable");
  up->add_option("--mtu", spec.mtu, "MTU of every link")->capture_default_str();
  up->add_option("--net-cpus", net_cpus,
                 "run the testbed's packet processing on these CPUs (RPS on every interface), e.g. 0: keeps it "
                 "off the cores that time flows, as IRQ affinity does on real hosts");
  up->add_option("--cc", spec.congestion_control,
                 "every host's default TCP congestion control (net.ipv4.tcp_congestion_control in its namespace), "
                 "e.g. cubic; default: the machine's");
  up->add_option("--rto-min", rto_min,
                 "TCP's least retransmission timeout on every host's route (ip route ... rto_min), e.g. 1s; it also "
                 "decides when an idle connection restarts from its initial window; default: the kernel's 200ms");
  up->add_flag("--no-offloads", no_offloads, "turn TSO/GSO/GRO off (MTU-size frames on the wire)");
  up->add_flag("--json", json, "print the hosts as JSON");

  std::string name;
  auto* down = app.add_subcommand("down", "remove testbed NAME and stop what runs in it");
  down->add_option("name", name, "testbed name")->required();

  std::string host;
  std::vector<std::string> command;
  auto* exec = app.add_subcommand("exec", "run a command in a host of testbed NAME");
  exec->add_option("name", name, "testbed name")->required();
  exec->add_option("host", host, "hK")->required();
  exec->add_option("command", command, "the command, after --")->required();

  return xtk::run_tool(app, argc, argv, [&] {
    if (up->parsed()) {
      for (const auto& s : shapes) spec.shaping.push_back(xtk::parse_shaping(s));
      spec.offloads = !no_offloads;
      if (!net_cpus.empty()) spec.net_cpus = xtk::parse_cpu_list(net_cpus, "--net-cpus");
      if (!rto_min.empty()) {
        const auto ns = xtk::parse_flag("--rto-min", rto_min, xtk::parse_duration_ns);
        if (ns < xtk::TestbedSpec::kLeastRtoMinNs || ns > xtk::TestbedSpec::kMostRtoMinNs) {
          throw xtk::UsageError(fmt::format("--rto-min must be {}", xtk::TestbedSpec::kRtoMinRange));
        }
        spec.rto_min_ms = static_cast<std::uint32_t>(ns / 1'000'000);
      }
      if (auto reason = xtk::Testbed::unavailable_reason()) throw xtk::Error(*reason);
      xtk::Testbed testbed(spec);
      testbed.keep();
      if (!testbed.note().empty()) std::cerr << "xtk-testbed: " << testbed.note() << '\n';
      xtk::Table hosts({{"host", 0}, {"netns", 0}, {"ipv4", 0}, {"ipv6", 0}, {"shaped", 0}});
      for (std::size_t h = 0; h < spec.hosts; ++h) {
        std::string shaped;
        for (const auto& s : spec.shaping) {
          if (s.host != h) continue;
          shaped +=
              fmt::format("{}{}={}{}", shaped.empty() ? "" : ",", s.where == xtk::Shaping::Where::port ? "port" : "nic",
                          xtk::format_rate(s.rate_bps),
                          s.queue_bytes > 0 ? " queue " + xtk::format_bytes(static_cast<double>(s.queue_bytes)) : "");
        }
        hosts.add_row({xtk::Testbed::host_name(h), testbed.host_ns(h), xtk::Testbed::ipv4(h), xtk::Testbed::ipv6(h),
                       shaped.empty() ? std::string("-") : shaped});
      }
      if (json) {
        std::cout << xtk::with_provenance({{"hosts", hosts.to_json()}}).dump() << '\n';
      } else {
        hosts.print(std::cout);
      }
    } else if (down->parsed()) {
      xtk::Testbed::tear_down(name);
    } else {
      const std::string ns = fmt::format("xtk-{}-h{}", name, host_index(host));
      std::vector<std::string> argv_ns{"ip", "netns", "exec", ns};
      argv_ns.insert(argv_ns.end(), command.begin(), command.end());
      std::vector<char*> args;
      args.reserve(argv_ns.size() + 1);
      for (auto& a : argv_ns) args.push_back(a.data());
      args.push_back(nullptr);
      execvp(args[0], args.data());
      throw xtk::Error(fmt::format("cannot run ip netns exec: {}", std::strerror(errno)));
    }
  });
}
