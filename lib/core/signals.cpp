#include "core/signals.hpp"

#include <csignal>

namespace xtk {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int /*signo*/) { g_stop.store(true); }

}  // namespace

const std::atomic<bool>& stop_requested() {
  static const bool installed = [] {
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    return true;
  }();
  (void)installed;
  return g_stop;
}

}  // namespace xtk
