// Data shipped in configs/ (flow-size CDFs, model profiles), found by name:
// "web-search" means web-search.cdf in the first of the directories below
// that has it, so users name what ships and still may give their own file.
#pragma once

#include <string>

namespace xtk {

struct DataKind {
  const char* env;        // colon-separated extra directories, searched first ("XTK_CDF_PATH")
  const char* subdir;     // under the source tree's and the installed configs/ ("cdf")
  const char* extension;  // added to a name (".cdf")
  const char* flag;       // named in the error ("--cdf")
};

// `name_or_path` itself when it is a file; else NAME + extension from
// $env's directories, then configs/SUBDIR of the source tree and of the
// installation. Throws UsageError listing where it looked.
std::string find_data_file(const std::string& name_or_path, const DataKind& kind);

}  // namespace xtk
