// The process's open files. Servers and clients with thousands of connections
// need more descriptors than the usual soft limit of 1024, and a descriptor
// table sized for them before their threads start.
#pragma once

#include <cstdint>

namespace xtk {

// Raises the soft RLIMIT_NOFILE to the hard limit (what an unprivileged
// `ulimit -n` may do) and returns the soft limit now in force.
std::uint64_t raise_open_file_limit();

// Grows the descriptor table now to hold `descriptors` (at most the soft
// open-file limit) and returns how many it holds for certain, 0 when it could
// not grow it. Why: the kernel grows the table by doubling when a descriptor
// beyond it is opened, and in a process of several threads each growth waits
// for an RCU grace period inside the socket() or accept() that needed it:
// 8-11 ms measured in a replay's worker (docs/flow-engine.md#descriptor-table).
// Called before the threads start, the growth costs no wait; the table never
// shrinks. Opens nothing that outlives the call.
std::uint64_t reserve_descriptor_table(std::uint64_t descriptors);

// What a tool with many connections does first, in this order (the table can
// only be sized as far as the raised limit allows): raise_open_file_limit(),
// then reserve_descriptor_table(descriptors). Returns the soft limit in force.
std::uint64_t prepare_open_files(std::uint64_t descriptors);

}  // namespace xtk
