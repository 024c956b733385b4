// Data shipped in configs/ (flow-size CDFs, model profiles), found by name:
// "web-search" means web-search.cdf in the first of the directories below
// that has it, so users name what ships and still may give their own file.
#pragma once

#include <string>
#include <vector>

namespace xtk {

struct DataKind {
  const char* env;        // colon-separated extra directories, searched first ("XTK_CDF_PATH")
  const char* subdir;     // under the source tree's and the installed configs/ ("cdf")
  const char* extension;  // added to a name (".cdf")
  const char* flag;       // named in the error ("--cdf")
};

// Model profiles (configs/models/NAME.csv) and flow-size CDFs (configs/cdf/NAME.cdf).
inline constexpr DataKind kModelProfiles{"XTK_MODEL_PATH", "models", ".csv", "--model"};
inline constexpr DataKind kFlowSizeCdfs{"XTK_CDF_PATH", "cdf", ".cdf", "--cdf"};

// Where xtk's shipped data (configs/) lies, in search order: the source
// tree's configs/, share/xtk beside the running tool (a bundle, or an
// installation moved elsewhere: <bin>/../share/xtk), the installation's.
std::vector<std::string> shipped_data_dirs();

// A shipped file by its path under configs/ ("models/params.csv"), from the
// first of shipped_data_dirs() that has it; empty when none has.
std::string find_shipped_file(const std::string& relative);

// `name_or_path` itself when it is a file; else NAME + extension from
// $env's directories, then SUBDIR of shipped_data_dirs(). Throws UsageError
// listing where it looked.
std::string find_data_file(const std::string& name_or_path, const DataKind& kind);

}  // namespace xtk
