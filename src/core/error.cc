#include "ccsynth/core/error.h"

namespace ccsynth {

namespace {
std::string format_user_error(const std::string& file, const std::string& field,
                              const std::string& reason) {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!field.empty()) out += field + ": ";
  return out + reason;
}
}  // namespace

UserError::UserError(std::string file, std::string field, std::string reason)
    : std::runtime_error(format_user_error(file, field, reason)),
      file_(std::move(file)),
      field_(std::move(field)),
      reason_(std::move(reason)) {}

namespace detail {

CheckFailure::CheckFailure(const char* condition, const char* file, int line) {
  stream_ << file << ":" << line << ": check failed: " << condition << ": ";
}

CheckFailure::~CheckFailure() noexcept(false) { throw InternalError(stream_.str()); }

}  // namespace detail
}  // namespace ccsynth
