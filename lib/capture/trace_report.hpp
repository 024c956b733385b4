// How a trace analysis is shown: a summary, the flow table and the
// injection-rate histogram as human text, CSV or one JSON document.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>

#include "capture/trace.hpp"
#include "core/report.hpp"

namespace xtk::capture {

// Columns flow,src,dst,first_ns,last_ns,bytes,packets,mean_bps,ce_packets; `top` > 0 keeps the largest.
Table trace_flow_table(const TraceResult& result, std::size_t top);
// Columns from_bps,to_bps,bins,share,cumulative_share.
Table trace_histogram_table(const TraceResult& result);
void print_trace_summary(const TraceResult& result, std::ostream& out);
// {"format_version":1,"summary":{...},"flows":[...],"histogram":[...]}
nlohmann::json trace_json(const TraceResult& result, std::size_t top);

}  // namespace xtk::capture
